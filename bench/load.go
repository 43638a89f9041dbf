package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// LoadModel is how a scenario loads each target: open loop at Rate
// (the default), closed loop at Concurrency, or a FindMaxRate search for
// the highest rate holding P99. Zero fields take the defaults noted.
type LoadModel struct {
	// Rate is the open-loop offered rate, req/s (the search's start rate
	// with FindMax). Default 1000.
	Rate float64
	// Concurrency > 0 selects a closed loop of that many workers.
	Concurrency int
	// FindMax searches for the highest open-loop rate whose p99 is at most
	// P99 (errors < 0.1%), between Rate and MaxRate; each step lasts
	// Duration after Warmup.
	FindMax bool
	// P99 is FindMax's objective. Default 5 ms.
	P99 time.Duration
	// MaxRate caps the search, req/s. Default 100,000.
	MaxRate float64
	// Duration of each measured run (or search step). Default 20 s.
	Duration time.Duration
	// Warmup before each run, discarded. Default 2 s; negative: none.
	Warmup time.Duration
	// Timeout is the hard per-request deadline. Default 1 s.
	Timeout time.Duration
	// Tmax is the soft deadline counted as deadline misses. Zero: not
	// checked.
	Tmax time.Duration
	// MaxInFlight bounds open-loop concurrency. Default 1024.
	MaxInFlight int
	// Arrival of open-loop requests. Default Uniform.
	Arrival Arrival
	// Seed of the workers' random streams.
	Seed uint64
}

// loadDefaults are LoadModel's defaults, which the flags share.
var loadDefaults = LoadModel{Rate: 1000, P99: 5 * time.Millisecond, MaxRate: 100_000, Duration: 20 * time.Second, Warmup: 2 * time.Second}

func (m LoadModel) withDefaults() LoadModel {
	m.Rate = cmp.Or(m.Rate, loadDefaults.Rate)
	m.P99 = cmp.Or(m.P99, loadDefaults.P99)
	m.MaxRate = cmp.Or(m.MaxRate, loadDefaults.MaxRate)
	m.Duration = cmp.Or(m.Duration, loadDefaults.Duration)
	switch {
	case m.Warmup == 0:
		m.Warmup = loadDefaults.Warmup
	case m.Warmup < 0:
		m.Warmup = 0
	}
	return m
}

// Validate reports every problem of m (after defaults).
func (m LoadModel) Validate() error {
	m = m.withDefaults()
	var p problems
	p.check(m.Rate >= 0 && m.Rate <= 1e8, "rate: must be > 0 req/s, got %v", m.Rate)
	p.check(m.Concurrency >= 0, "concurrency: must be >= 0, got %d", m.Concurrency)
	p.check(m.Concurrency == 0 || !m.FindMax, "find-max: an open-loop search; do not combine with concurrency")
	p.check(!m.FindMax || m.MaxRate >= m.Rate, "max-rate: must be >= rate (%v), got %v", m.Rate, m.MaxRate)
	p.check(m.Duration >= 0, "duration: must be > 0, got %v", m.Duration)
	p.check(m.P99 >= 0 && m.Timeout >= 0 && m.Tmax >= 0 && m.MaxInFlight >= 0, "p99, timeout, tmax, max-in-flight: must be >= 0")
	validateArrival(&p, "", m.Arrival)
	return p.err()
}

// describe renders the model for report configs.
func (m LoadModel) describe() map[string]string {
	m = m.withDefaults()
	c := map[string]string{"duration": m.Duration.String(), "warmup": m.Warmup.String()}
	switch {
	case m.FindMax:
		c["load"] = fmt.Sprintf("find-max: open loop from %s req/s up to %s, objective p99 <= %v", fmtRate(m.Rate), fmtRate(m.MaxRate), m.P99)
	case m.Concurrency > 0:
		c["load"] = "closed loop, concurrency " + strconv.Itoa(m.Concurrency)
	default:
		c["load"] = "open loop, " + fmtRate(m.Rate) + " req/s offered"
	}
	if m.Tmax > 0 {
		c["tmax"] = m.Tmax.String()
	}
	if m.Timeout > 0 {
		c["timeout"] = m.Timeout.String()
	}
	return c
}

func (m LoadModel) openLoop() OpenLoopOptions {
	return OpenLoopOptions{Rate: m.Rate, Duration: m.Duration, Warmup: m.Warmup, MaxInFlight: m.MaxInFlight,
		Timeout: m.Timeout, Tmax: m.Tmax, Arrival: m.Arrival, Seed: m.Seed}
}

// run loads t with the model, watching w. With FindMax it returns the
// search too; its Result is the best passing step's (or the first step's
// when none passed).
func (m LoadModel) run(ctx context.Context, t Target, w Watch) (*Result, *MaxRateResult, error) {
	m = m.withDefaults()
	switch {
	case m.FindMax:
		lo := m.openLoop()
		lo.Rate, lo.Duration, lo.Warmup, lo.Watch = 0, 0, 0, w
		s, err := FindMaxRate(ctx, t, FindMaxRateOptions{
			Objective: Objective{P99: m.P99}, StartRate: m.Rate, MaxRate: m.MaxRate,
			StepDuration: m.Duration, StepWarmup: m.Warmup, Cooldown: 500 * time.Millisecond, Confirm: 1, Load: lo,
		})
		if err != nil && !errors.Is(err, ErrNoPassingRate) {
			return nil, s, err
		}
		if s == nil {
			return nil, nil, err
		}
		best := s.Best
		if best == nil && len(s.Steps) > 0 {
			best = s.Steps[0].Result
			best.Notes = append(best.Notes, "no rate met the objective: this is the first step, "+s.Steps[0].Reason)
		} else if best != nil {
			best.Notes = append(best.Notes, fmt.Sprintf("best step of a max-rate search (%s): %s req/s", s.Objective, fmtRate(s.MaxRate)))
		}
		return best, s, nil
	case m.Concurrency > 0:
		r, err := RunClosedLoop(ctx, t, ClosedLoopOptions{Concurrency: m.Concurrency, Duration: m.Duration, Warmup: m.Warmup,
			Timeout: m.Timeout, Tmax: m.Tmax, Seed: m.Seed, Watch: w})
		return r, nil, err
	}
	lo := m.openLoop()
	lo.Watch = w
	r, err := RunOpenLoop(ctx, t, lo)
	return r, nil, err
}
