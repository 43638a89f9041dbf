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
	// Uniform schedules request i at t0 + i/Rate.
	Uniform Arrival = "uniform"
	// Poisson draws exponential gaps with mean 1/Rate (seeded by Seed), the
	// classic model of many independent senders.
	Poisson Arrival = "poisson"
)

// Defaults applied to zero option fields.
const (
	DefaultMaxInFlight = 1024
	DefaultTimeout     = time.Second
)

// pacerSlice is the open-loop pacer's minimum sleep.
const pacerSlice = time.Millisecond

// OpenLoopOptions configure an open-loop run: requests are scheduled at a
// fixed rate whatever the target does, and latency counts from each
// request's intended send time, so a stalled server's queueing shows in the
// numbers (no coordinated omission).
//
// Queueing rules. Requests are handed to worker goroutines, started on
// demand up to MaxInFlight. When all of them are busy the pacer waits for
// one; requests that came due meanwhile keep their scheduled time, so their
// wait counts as latency. A request still waiting when its hard deadline
// (scheduled time + Timeout) has passed is not sent: it is recorded as
// ErrTimeout and counted in Result.Expired. Nothing is silently dropped.
//
// Timer granularity. The pacer wakes about every 1 ms (Go timers on Linux
// fire with ~1 ms granularity) and hands out every request that came due
// while it slept. Such a request counts from the pacer's waking, not from
// its scheduled time, so the generator's own sleep granularity is not
// charged to the target; any later delay (a busy pool, a slow pacer) is.
// Result.SendLag shows the total lateness behind schedule.
type OpenLoopOptions struct {
	// Rate is the offered load in requests per second. Required, > 0.
	Rate float64
	// Duration of the measured phase. Required, > 0. Exactly
	// floor(Rate*Duration) requests are scheduled in it (Uniform arrival).
	Duration time.Duration
	// Warmup runs the same load before the measured phase and discards it.
	// Zero: no warmup.
	Warmup time.Duration
	// MaxInFlight bounds concurrent requests (worker goroutines). Zero
	// means DefaultMaxInFlight (1024).
	MaxInFlight int
	// Timeout is the hard per-request deadline, from the intended send
	// time; Worker.Deadline carries it to the target. Zero means
	// DefaultTimeout (1 s); negative disables it.
	Timeout time.Duration
	// Tmax is the soft deadline: an OK or NoBid answer whose latency
	// exceeds it is counted as DeadlineMiss (like an SSP's tmax). Zero: not
	// checked.
	Tmax time.Duration
	// Arrival is the arrival process. Zero means Uniform.
	Arrival Arrival
	// Seed seeds Worker.Rand streams and Poisson gaps. Zero is a valid seed.
	Seed uint64
	// Watch lists processes to measure during the run.
	Watch Watch
}

// ClosedLoopOptions configure a closed-loop run: Concurrency workers each
// send a request, wait for its outcome, and repeat. Latency counts from the
// actual send time. Note what this hides: while the target stalls, the
// workers stop sending, so the stall is one sample per worker instead of
// every request that would have arrived meanwhile.
type ClosedLoopOptions struct {
	// Concurrency is the number of workers. Required, > 0.
	Concurrency int
	// Duration of the measured phase. Required unless Requests > 0.
	Duration time.Duration
	// Requests, if > 0, stops the run after this many measured requests
	// (ghz -n), or at Duration, whichever comes first.
	Requests int64
	// Warmup is discarded before the measured phase. Zero: none.
	Warmup time.Duration
	// Timeout is the hard per-request deadline from the send time. Zero
	// means DefaultTimeout; negative disables it.
	Timeout time.Duration
	// Tmax is the soft deadline for DeadlineMiss. Zero: not checked.
	Tmax time.Duration
	// Seed seeds Worker.Rand.
	Seed uint64
	// Watch lists processes to measure during the run.
	Watch Watch
}

// Watch lists what to measure beside the generator during a run.
type Watch struct {
	// Processes are measured from /proc/PID/stat and status: CPU seconds
	// over the measured phase and peak RSS at its end.
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

func (w Watch) validate(p *problems, prefix string) {
	for i, pr := range w.Processes {
		p.check(pr.PID > 0, "%swatch.processes[%d].pid: must be > 0, got %d", prefix, i, pr.PID)
	}
}

// Validate reports every problem of o, naming the field.
func (o OpenLoopOptions) Validate() error {
	var p problems
	o.validate(&p, "")
	return p.err()
}

func (o OpenLoopOptions) validate(p *problems, prefix string) {
	p.check(o.Rate > 0 && o.Rate <= 1e8, "%srate: must be > 0 and <= 1e8 req/s, got %v", prefix, o.Rate)
	p.check(o.Duration > 0, "%sduration: must be > 0, got %v", prefix, o.Duration)
	p.check(o.Warmup >= 0, "%swarmup: must be >= 0, got %v", prefix, o.Warmup)
	p.check(o.MaxInFlight >= 0, "%smax_in_flight: must be >= 0, got %d", prefix, o.MaxInFlight)
	p.check(o.Tmax >= 0, "%stmax: must be >= 0, got %v", prefix, o.Tmax)
	validateArrival(p, prefix, o.Arrival)
	o.Watch.validate(p, prefix)
}

func validateArrival(p *problems, prefix string, a Arrival) {
	p.check(a == "" || a == Uniform || a == Poisson, "%sarrival: must be %q or %q, got %q", prefix, Uniform, Poisson, a)
}

func (o OpenLoopOptions) withDefaults() OpenLoopOptions {
	o.MaxInFlight = cmp.Or(o.MaxInFlight, DefaultMaxInFlight)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.Arrival = cmp.Or(o.Arrival, Uniform)
	return o
}

// Validate reports every problem of o, naming the field.
func (o ClosedLoopOptions) Validate() error {
	var p problems
	p.check(o.Concurrency > 0, "concurrency: must be > 0, got %d", o.Concurrency)
	p.check(o.Duration >= 0, "duration: must be >= 0, got %v", o.Duration)
	p.check(o.Requests >= 0, "requests: must be >= 0, got %d", o.Requests)
	p.check(o.Duration > 0 || o.Requests > 0, "duration: must be > 0 when requests is 0")
	p.check(o.Warmup >= 0, "warmup: must be >= 0, got %v", o.Warmup)
	p.check(o.Tmax >= 0, "tmax: must be >= 0, got %v", o.Tmax)
	o.Watch.validate(&p, "")
	return p.err()
}

// timeoutNs is a Timeout option in ns: DefaultTimeout for zero, none (0)
// for a negative one.
func timeoutNs(d time.Duration) int64 {
	switch {
	case d == 0:
		return int64(DefaultTimeout)
	case d < 0:
		return 0
	}
	return int64(d)
}
