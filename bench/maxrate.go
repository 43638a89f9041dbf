package bench

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"
)

// Objective is what a rate must hold in FindMaxRate: errors below 0.1%
// and the bounds set.
type Objective struct {
	// P99 is the highest acceptable whole-step p99 latency. Required, > 0.
	P99 time.Duration
	// MaxMissRatio bounds deadline misses / requests. Zero: not checked.
	MaxMissRatio float64
	// MaxNoBidRatio bounds no-bids / requests. Zero: not checked. A bidder
	// that sheds load (fast no-bids) holds any latency objective far past
	// the rate it can serve, so its sustainable rate is one where it still
	// bids.
	MaxNoBidRatio float64
}

// maxErrorRatio is the errors / requests every Objective holds below.
const maxErrorRatio = 0.001

// P99Ms is the P99 bound in ms, for reports.
func (o Objective) P99Ms() float64 { return float64(o.P99) / 1e6 }

// String renders the objective, e.g. "p99 <= 5 ms, errors < 0.1%".
func (o Objective) String() string {
	s := fmt.Sprintf("p99 <= %g ms, errors < %g%%", o.P99Ms(), 100*maxErrorRatio)
	if o.MaxMissRatio > 0 {
		s += fmt.Sprintf(", deadline misses < %g%%", 100*o.MaxMissRatio)
	}
	if o.MaxNoBidRatio > 0 {
		s += fmt.Sprintf(", no-bids < %g%%", 100*o.MaxNoBidRatio)
	}
	return s
}

// Check returns "" if r holds the objective, else the reasons it does not.
func (o Objective) Check(r *Result) string {
	var why problems
	why.check(r.Latency.P99Us <= o.P99.Microseconds(), "p99 %.2f ms > %g ms", usToMs(r.Latency.P99Us), o.P99Ms())
	why.check(r.ErrorRatio() < maxErrorRatio, "errors %.3f%% >= %g%%", 100*r.ErrorRatio(), 100*maxErrorRatio)
	why.check(o.MaxMissRatio <= 0 || r.MissRatio() < o.MaxMissRatio, "deadline misses %.3f%% >= %g%%", 100*r.MissRatio(), 100*o.MaxMissRatio)
	why.check(o.MaxNoBidRatio <= 0 || r.NoBidRatio() < o.MaxNoBidRatio, "no-bids %.3f%% >= %g%%", 100*r.NoBidRatio(), 100*o.MaxNoBidRatio)
	why.check(r.Requests > 0, "no requests")
	return strings.Join(why, "; ")
}

// FindMaxRateOptions configure FindMaxRate.
type FindMaxRateOptions struct {
	Objective    Objective
	StartRate    float64       // the first rate tried, req/s; zero: 100
	MaxRate      float64       // the search's cap, req/s; required, >= StartRate
	Precision    float64       // the search ends when (fail - pass) / pass <= Precision; zero: 0.05
	StepDuration time.Duration // measured length of each step; zero: 5 s
	StepWarmup   time.Duration // discarded at the start of each step
	Cooldown     time.Duration // pause between steps (lets queues drain)
	MaxSteps     int           // bound on the number of runs; zero: 20
	// Confirm re-runs a failing rate up to this many times before the
	// search believes the failure (a rate fails only if every run of it
	// fails), so that one stall does not end the search far below capacity.
	Confirm int
	// Load is each step's open loop; the search sets its Rate, Duration and
	// Warmup, which must be zero.
	Load Options
	Logf func(format string, args ...any) // if set, told of each step as it ends
}

// RateStep is one run of a FindMaxRate search.
type RateStep struct {
	Rate         float64 `json:"rate"`
	Pass         bool    `json:"pass"`
	Reason       string  `json:"reason,omitempty"` // why it failed
	Requests     int64   `json:"requests"`
	AchievedRate float64 `json:"achieved_rate"`
	P50Us        int64   `json:"p50_us"`
	P99Us        int64   `json:"p99_us"`
	ErrorRatio   float64 `json:"error_ratio"`
	MissRatio    float64 `json:"miss_ratio"`
	// Result is the step's full result (not serialised in reports).
	Result *Result `json:"-"`
}

// MaxRateResult is the outcome of FindMaxRate.
type MaxRateResult struct {
	Target    string  `json:"target"`
	Objective string  `json:"objective"` // Objective.String()
	P99Ms     float64 `json:"p99_ms"`
	// MaxRate is the highest rate that held the objective (0 if none).
	MaxRate float64 `json:"max_rate"`
	// Bracketed is true when a failing rate above MaxRate was found (the
	// search converged); false when MaxRate is the search cap.
	Bracketed bool       `json:"bracketed"`
	Steps     []RateStep `json:"steps"`
	// Best is the Result of the step at MaxRate (nil if none passed); add
	// it to a Report's Results to keep it.
	Best *Result `json:"-"`
}

// FindMaxRate searches for the highest open-loop rate at which t holds the
// objective: it doubles the rate from StartRate until a step fails (or
// MaxRate passes), then bisects between the highest passing and lowest
// failing rate until they are within Precision. Each step is a separate
// Run of StepDuration; with Confirm, a failing rate is run again
// before it counts as failed. Noise can make a step pass above one that
// failed; the search trusts each step as measured and keeps the highest
// pass below the lowest failure. If StartRate already fails, it returns the
// result with ErrNoPassingRate.
func FindMaxRate(ctx context.Context, t Target, o FindMaxRateOptions) (*MaxRateResult, error) {
	o.StartRate = cmp.Or(o.StartRate, 100)
	o.Precision = cmp.Or(o.Precision, 0.05)
	o.StepDuration = cmp.Or(o.StepDuration, 5*time.Second)
	o.MaxSteps = cmp.Or(o.MaxSteps, 20)
	var p problems
	p.check(t != nil, "target: nil")
	p.check(o.Objective.P99 > 0, "objective.p99: must be > 0, got %v", o.Objective.P99)
	p.check(o.Objective.MaxMissRatio >= 0 && o.Objective.MaxNoBidRatio >= 0, "objective: ratios must be >= 0")
	p.check(o.StartRate >= 0 && o.MaxRate >= o.StartRate, "max_rate: must be >= start_rate (%v), got %v", o.StartRate, o.MaxRate)
	p.check(o.Precision >= 0 && o.MaxSteps >= 0 && o.StepDuration >= 0 && o.StepWarmup >= 0 && o.Cooldown >= 0 && o.Confirm >= 0,
		"precision, max_steps, step_duration, step_warmup, cooldown, confirm: must be >= 0")
	p.check(o.Load.Rate == 0 && o.Load.Duration == 0 && o.Load.Warmup == 0 && o.Load.Concurrency == 0,
		"load: rate, duration, warmup and concurrency must be zero (an open loop, set by the search)")
	if err := p.err(); err != nil {
		return nil, err
	}
	res := &MaxRateResult{Target: t.Name(), Objective: o.Objective.String(), P99Ms: o.Objective.P99Ms()}
	var lo, hi float64 // highest pass, lowest fail (0 = none yet)
	rate, retries := o.StartRate, 0
	for steps := 1; ; steps++ {
		if steps > 1 && o.Cooldown > 0 {
			select {
			case <-time.After(o.Cooldown):
			case <-ctx.Done():
				return res, fmt.Errorf("%w: %w", ErrAborted, ctx.Err())
			}
		}
		o.Load.Rate, o.Load.Duration, o.Load.Warmup = rate, o.StepDuration, o.StepWarmup
		r, err := Run(ctx, t, o.Load)
		if err != nil {
			return res, err
		}
		why := o.Objective.Check(r)
		confirm := why != "" && retries < o.Confirm
		reason := why
		if confirm {
			reason += " (re-run to confirm)"
		}
		res.Steps = append(res.Steps, RateStep{
			Rate: rate, Pass: why == "", Reason: reason, Requests: r.Requests, AchievedRate: r.AchievedRate,
			P50Us: r.Latency.P50Us, P99Us: r.Latency.P99Us, ErrorRatio: r.ErrorRatio(), MissRatio: r.MissRatio(), Result: r,
		})
		if o.Logf != nil {
			verdict := "pass"
			if why != "" {
				verdict = "FAIL: " + reason
			}
			o.Logf("  step %d of %s: %s req/s: p50 %s ms, p99 %s ms: %s", steps, t.Name(), fmtRate(rate), fmtMs(usToMs(r.Latency.P50Us)), fmtMs(usToMs(r.Latency.P99Us)), verdict)
		}
		switch {
		case confirm:
			retries++
		case why == "":
			retries = 0
			if rate > lo && (hi == 0 || rate < hi) {
				lo, res.Best = rate, r
			}
		default:
			retries = 0
			if hi == 0 || rate < hi {
				hi = rate
			}
		}
		res.MaxRate, res.Bracketed = lo, hi > 0
		switch {
		case steps >= o.MaxSteps:
			return res, nil
		case confirm:
		case hi == 0: // no failure yet: ramp up
			if rate >= o.MaxRate {
				return res, nil
			}
			rate = min(rate*2, o.MaxRate)
		case lo == 0:
			return res, fmt.Errorf("%w: %s at %g req/s: %s", ErrNoPassingRate, t.Name(), rate, why)
		case (hi-lo)/lo <= o.Precision:
			return res, nil
		default:
			rate = (lo + hi) / 2
		}
	}
}
