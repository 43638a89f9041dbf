package bench

import "time"

// Mode is how a Result's load was generated.
type Mode string

// Modes.
const (
	ModeOpenLoop   Mode = "open_loop"   // fixed offered rate, latency from the intended send time
	ModeClosedLoop Mode = "closed_loop" // fixed concurrency, each worker waits for its answer
)

// Result holds what one target saw during one run. Latencies are in
// microseconds, from the request's intended send time (open loop) or its
// actual send time (closed loop) to the return of Target.Do; every outcome,
// errors included, is in the latency statistics. A Result is immutable once
// returned.
type Result struct {
	Target      string    `json:"target"`
	Mode        Mode      `json:"mode"`
	OfferedRate float64   `json:"offered_rate,omitempty"` // req/s, open loop
	Arrival     Arrival   `json:"arrival,omitempty"`      // open loop
	Concurrency int       `json:"concurrency,omitempty"`  // closed loop
	MaxInFlight int       `json:"max_in_flight,omitempty"`
	Start       time.Time `json:"start"`        // wall clock at the start of the measured phase (after warmup)
	WarmupSec   float64   `json:"warmup_sec"`   // discarded phase before Start
	DurationSec float64   `json:"duration_sec"` // configured (or, closed loop by count, actual) sending phase
	ElapsedSec  float64   `json:"elapsed_sec"`  // sending phase plus the drain of the last answers
	TimeoutMs   float64   `json:"timeout_ms"`   // hard per-request deadline; 0 = none
	TmaxMs      float64   `json:"tmax_ms"`      // soft deadline for DeadlineMiss; 0 = not checked
	Aborted     bool      `json:"aborted,omitempty"`

	// Requests = Successes + NoBids + DeadlineMisses + Errors.Total.
	Requests       int64       `json:"requests"`
	Successes      int64       `json:"successes"`
	NoBids         int64       `json:"no_bids"`
	DeadlineMisses int64       `json:"deadline_misses"`
	Errors         ErrorCounts `json:"errors"`
	// Expired requests waited in the generator (all MaxInFlight workers
	// busy) past their hard deadline and were never sent; they are also
	// counted in Errors.Timeout.
	Expired      int64   `json:"expired"`
	AchievedRate float64 `json:"achieved_rate"` // Requests / ElapsedSec
	Workers      int     `json:"workers"`       // peak worker goroutines (open loop: started on demand)

	Latency LatencyStats `json:"latency"`
	// SendLag is how late requests left the generator behind their
	// scheduled time (open loop): timer granularity plus waiting for a free
	// worker. Closed loop: all zero.
	SendLag      LatencyStats      `json:"send_lag"`
	Histogram    []HistogramBucket `json:"histogram"`    // ghz-style, 11 marks from fastest to slowest
	Distribution []Percentile      `json:"distribution"` // 10, 25, 50, 75, 90, 95, 99, 99.9
	Percentiles  []Percentile      `json:"percentiles"`  // the percentile curve for charts, 0 .. 100
	Timeline     []Second          `json:"timeline"`     // per 1 s window of the measured phase, by completion time

	// GeneratorCPUSec is the CPU time (user+sys, getrusage RUSAGE_SELF) of
	// the whole harness process during the measured phase; GeneratorCores
	// divides it by the wall time. It includes anything else running in the
	// process (an in-process server would be counted too). In a mixed run
	// the numbers are shared by all loads (GeneratorShared = their number).
	GeneratorCPUSec float64        `json:"generator_cpu_sec"`
	GeneratorCores  float64        `json:"generator_cores"`
	GeneratorShared int            `json:"generator_shared,omitempty"`
	Processes       []ProcessStats `json:"processes,omitempty"`
	Notes           []string       `json:"notes,omitempty"`
	Events          []Event        `json:"events,omitempty"` // what the harness did (a node killed, back up)
}

// Event is a moment of a run, in seconds since the measured phase began.
type Event struct {
	AtSec float64 `json:"at_sec"`
	What  string  `json:"what"`
}

// ErrorRatio, MissRatio and NoBidRatio are the shares of Requests that
// failed, missed the soft deadline and got no bid (0 with no requests).
func (r *Result) ErrorRatio() float64 { return safeDiv(float64(r.Errors.Total), float64(r.Requests)) }
func (r *Result) MissRatio() float64  { return safeDiv(float64(r.DeadlineMisses), float64(r.Requests)) }
func (r *Result) NoBidRatio() float64 { return safeDiv(float64(r.NoBids), float64(r.Requests)) }

// ErrorCounts counts failed requests by kind; Total is their sum.
type ErrorCounts struct {
	Total     int64 `json:"total"`
	Timeout   int64 `json:"timeout"`
	Conn      int64 `json:"conn"`
	Status4xx int64 `json:"status_4xx"`
	Status5xx int64 `json:"status_5xx"`
	Other     int64 `json:"other"`
}

// LatencyStats summarises a latency distribution, in microseconds. AvgUs,
// MinUs and MaxUs are exact; percentiles come from an HDR histogram with 3
// significant digits (relative error <= 0.1%).
type LatencyStats struct {
	Count    int64   `json:"count"`
	AvgUs    float64 `json:"avg_us"`
	StdDevUs float64 `json:"stddev_us"`
	MinUs    int64   `json:"min_us"`
	P50Us    int64   `json:"p50_us"`
	P90Us    int64   `json:"p90_us"`
	P95Us    int64   `json:"p95_us"`
	P99Us    int64   `json:"p99_us"`
	P999Us   int64   `json:"p999_us"`
	MaxUs    int64   `json:"max_us"`
}

// HistogramBucket is one line of the ghz-style response time histogram:
// Count requests took more than the previous mark and at most MarkUs.
type HistogramBucket struct {
	MarkUs    float64 `json:"mark_us"`
	Count     int64   `json:"count"`
	Frequency float64 `json:"frequency"` // Count / Requests
}

// Percentile is a point of a latency distribution: P percent of requests
// took at most Us microseconds.
type Percentile struct {
	P  float64 `json:"p"`
	Us int64   `json:"us"`
}

// Second is one 1-second window of the measured phase. Requests are placed
// in the window in which they completed, so a stalled server shows as a dip
// in throughput followed by a burst, and its latency in that burst's p99.
type Second struct {
	T              int     `json:"t"` // seconds since Result.Start
	Requests       int64   `json:"requests"`
	Successes      int64   `json:"successes"`
	NoBids         int64   `json:"no_bids"`
	Errors         int64   `json:"errors"`
	DeadlineMisses int64   `json:"deadline_misses"`
	AvgUs          float64 `json:"avg_us"`
	P50Us          int64   `json:"p50_us"` // per-window percentiles: 2 significant digits
	P99Us          int64   `json:"p99_us"`
	MaxUs          int64   `json:"max_us"`
	// Full: the whole window lies inside the sending phase (not the drain
	// tail or a partial last window). Compare and the charts use full windows.
	Full bool `json:"full"`
}

// ProcessStats are /proc figures of a watched process over the measured phase.
type ProcessStats struct {
	Name         string  `json:"name"`
	PID          int     `json:"pid"`
	CPUSec       float64 `json:"cpu_sec"`        // user+sys during the measured phase (10 ms ticks)
	Cores        float64 `json:"cores"`          // CPUSec / wall seconds
	PeakRSSBytes int64   `json:"peak_rss_bytes"` // VmHWM at the end: lifetime peak of the process
	RSSBytes     int64   `json:"rss_bytes"`      // VmRSS at the end
	Error        string  `json:"error,omitempty"`
}
