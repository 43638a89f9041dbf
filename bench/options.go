package bench

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Arrival is the spacing of an open-loop load's scheduled send times.
type Arrival string

// Arrival processes.
const (
	Uniform Arrival = "uniform" // request i at t0 + i/Rate
	Poisson Arrival = "poisson" // exponential gaps of mean 1/Rate (seeded by Seed): many independent senders
)

// Defaults applied to zero option fields.
const (
	DefaultMaxInFlight = 1024
	DefaultTimeout     = time.Second
)

// Options configure one load: open loop at Rate, or closed loop of
// Concurrency workers (Rate zero).
//
// Open loop: requests are scheduled at Rate whatever the target does and
// latency counts from each one's intended send time, so a stalled server's
// queueing shows (no coordinated omission). Up to MaxInFlight workers send
// them; one still waiting for a worker at its hard deadline is not sent: an
// ErrTimeout, counted in Result.Expired. Result.SendLag is the lateness
// behind schedule.
//
// Closed loop: each worker sends, waits for the outcome and repeats;
// latency counts from the actual send, so a stall is one sample per worker
// instead of every request that would have arrived meanwhile.
type Options struct {
	Rate        float64       // open loop: offered requests per second
	Concurrency int           // closed loop: the number of workers
	Requests    int64         // closed loop: stop after this many measured requests (or at Duration)
	Duration    time.Duration // of the measured phase; optional for a closed loop with Requests
	Warmup      time.Duration // the same load first, discarded
	MaxInFlight int           // open loop: bound on concurrent requests; zero: DefaultMaxInFlight
	Timeout     time.Duration // hard deadline from the intended send time (Worker.Deadline); zero: DefaultTimeout, < 0: none
	Tmax        time.Duration // soft deadline: a later OK or NoBid counts as DeadlineMiss; zero: not checked
	Arrival     Arrival       // open loop; zero: Uniform
	Seed        uint64        // seeds Worker.Rand and Poisson gaps
	Watch       Watch         // processes measured during the run
}

// Watch lists what to measure beside the generator during a run.
type Watch struct {
	// Processes: CPU seconds over the measured phase and peak RSS at its
	// end, from /proc.
	Processes []WatchProcess
}

// WatchProcess names a process to measure.
type WatchProcess struct {
	Name string
	PID  int
}

// problems gathers every problem of an options value; err wraps them all
// in ErrInvalid.
type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// check adds the problem unless ok.
func (p *problems) check(ok bool, format string, args ...any) {
	if !ok {
		p.addf(format, args...)
	}
}

// merge adds the problems of another value's validation error (nil: none).
func (p *problems) merge(err error) {
	if err != nil {
		*p = append(*p, strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(p, "; "))
}

// validate adds every problem of o to p, naming the field after prefix.
func (o Options) validate(p *problems, prefix string) {
	if o.Concurrency == 0 {
		p.check(o.Rate > 0 && o.Rate <= 1e8, "%srate: must be > 0 and <= 1e8 req/s (or set concurrency), got %v", prefix, o.Rate)
		p.check(o.Duration > 0, "%sduration: must be > 0, got %v", prefix, o.Duration)
	} else {
		p.check(o.Concurrency > 0, "%sconcurrency: must be >= 0, got %d", prefix, o.Concurrency)
		p.check(o.Rate == 0, "%srate: a closed loop (concurrency) has none, got %v", prefix, o.Rate)
		p.check(o.Duration > 0 || o.Requests > 0, "%sduration: must be > 0 when requests is 0, got %v", prefix, o.Duration)
	}
	p.check(o.Requests >= 0, "%srequests: must be >= 0, got %d", prefix, o.Requests)
	p.check(o.Warmup >= 0, "%swarmup: must be >= 0, got %v", prefix, o.Warmup)
	p.check(o.MaxInFlight >= 0, "%smax_in_flight: must be >= 0, got %d", prefix, o.MaxInFlight)
	p.check(o.Tmax >= 0, "%stmax: must be >= 0, got %v", prefix, o.Tmax)
	p.check(o.Arrival == "" || o.Arrival == Uniform || o.Arrival == Poisson, "%sarrival: must be %q or %q, got %q", prefix, Uniform, Poisson, o.Arrival)
	o.Watch.validate(p, prefix)
}

func (w Watch) validate(p *problems, prefix string) {
	for i, pr := range w.Processes {
		p.check(pr.PID > 0, "%swatch.processes[%d].pid: must be > 0, got %d", prefix, i, pr.PID)
	}
}

func (o Options) withDefaults() Options {
	if o.Concurrency == 0 {
		o.MaxInFlight = cmp.Or(o.MaxInFlight, DefaultMaxInFlight)
		o.Arrival = cmp.Or(o.Arrival, Uniform)
	}
	return o
}
