// Package wakeup measures the floor a machine puts under every request
// and answer between two processes: the time it takes to wake a thread
// that sleeps on another CPU.
//
// A load generator's write wakes the server's thread blocked in epoll, the
// server's answer wakes the generator's: at least two such wake-ups per
// request. On bare metal each costs a few microseconds. On a virtual
// machine whose idle vCPUs halt (no guest halt polling), waking one means
// an interrupt through the hypervisor, which then has to run that vCPU:
// tens of microseconds at the median and milliseconds in the tail, paid
// by any server, however little work it does. The bench harness measures
// it before a run and prints it beside the run's latencies.
//
// Measure runs a ping-pong over two pipes between two threads pinned to
// the chosen CPUs, as perf bench sched pipe does: the prober writes a
// byte, the echo thread (blocked in read) wakes and writes it back. Before
// each sample the prober spins for Options.Gap on its own CPU, so that the
// echo's CPU goes idle as a server's does between requests. Each sample
// is one round trip: two wake-ups. The same CPU for both threads gives the
// baseline without a cross-CPU wake-up.
//
// Pinning is Linux only (ErrUnsupported elsewhere). The two threads get
// their CPU sets back when Measure returns (or end, if that fails): no
// thread of the caller's process is left pinned.
package wakeup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rtbd/rtbd/bench/internal/cpuset"
)

// Errors of Measure. Compare with errors.Is.
var (
	// ErrInvalid wraps an option out of range; the message names it.
	ErrInvalid = errors.New("wakeup: invalid options")
	// ErrUnsupported: this system cannot pin threads to CPUs.
	ErrUnsupported = errors.New("wakeup: not supported on this system")
)

// Limits and defaults of Options.
const (
	DefaultSamples = 1000
	MaxSamples     = 100_000
	DefaultGap     = 100 * time.Microsecond
	MaxGap         = 10 * time.Millisecond
)

// Options configure Measure.
type Options struct {
	// From is the prober's CPU, To the echo thread's: equal for the
	// same-CPU baseline. Both must be in the process's allowed set
	// (cpuset.Allowed; under taskset or a container's cpuset not every CPU
	// of the machine is).
	From, To int
	// Samples is the number of round trips. Zero: DefaultSamples; at most
	// MaxSamples.
	Samples int
	// Gap is how long the prober spins before each sample. Zero:
	// DefaultGap; at most MaxGap.
	Gap time.Duration
}

// Result is the round trips' distribution.
type Result struct {
	From    int           `json:"from_cpu"`
	To      int           `json:"to_cpu"`
	Samples int           `json:"samples"`
	P50     time.Duration `json:"p50_ns"`
	P90     time.Duration `json:"p90_ns"`
	P99     time.Duration `json:"p99_ns"`
	Max     time.Duration `json:"max_ns"`
}

// String is e.g. "CPU 0 -> 1: p50 118us, p90 348us, p99 1.28ms, max 3.1ms (1000 round trips)".
func (r Result) String() string {
	us := func(d time.Duration) string { return d.Round(time.Microsecond).String() }
	return fmt.Sprintf("CPU %d -> %d: p50 %s, p90 %s, p99 %s, max %s (%d round trips)",
		r.From, r.To, us(r.P50), us(r.P90), us(r.P99), us(r.Max), r.Samples)
}

// Measure runs the ping-pong (see the package doc) and returns its
// distribution. It takes about Samples x (Gap + a round trip): 0.1-0.3 s
// with the defaults. A cancelled ctx stops it between samples with an
// error wrapping ctx.Err().
func Measure(ctx context.Context, o Options) (Result, error) {
	o.Samples = cmp.Or(o.Samples, DefaultSamples)
	o.Gap = cmp.Or(o.Gap, DefaultGap)
	var probs []string
	allowed, aerr := cpuset.Allowed()
	for _, c := range []struct {
		key string
		cpu int
	}{{"from", o.From}, {"to", o.To}} {
		switch {
		case c.cpu < 0:
			probs = append(probs, fmt.Sprintf("%s: CPU %d", c.key, c.cpu))
		case aerr == nil && !slices.Contains(allowed, c.cpu):
			probs = append(probs, fmt.Sprintf("%s: CPU %d is not one this process may use (%s)", c.key, c.cpu, cpuset.Format(allowed)))
		}
	}
	if o.Samples < 0 || o.Samples > MaxSamples {
		probs = append(probs, fmt.Sprintf("samples: want 1-%d, got %d", MaxSamples, o.Samples))
	}
	if o.Gap < 0 || o.Gap > MaxGap {
		probs = append(probs, fmt.Sprintf("gap: want 0-%v, got %v", MaxGap, o.Gap))
	}
	if len(probs) > 0 {
		return Result{}, fmt.Errorf("%w: %v", ErrInvalid, probs)
	}
	rtts, err := pingPong(ctx, o)
	if err != nil {
		return Result{}, err
	}
	slices.Sort(rtts)
	q := func(p float64) time.Duration {
		i := int(p*float64(len(rtts))+0.999999) - 1
		return rtts[min(max(i, 0), len(rtts)-1)]
	}
	return Result{From: o.From, To: o.To, Samples: len(rtts), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: rtts[len(rtts)-1]}, nil
}
