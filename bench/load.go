package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// LoadModel is how a scenario loads each target: its Options (open loop
// at Rate, or closed loop at Concurrency), or with FindMax a search for the
// highest open-loop rate whose p99 is at most P99 (errors < 0.1%), from
// Rate up to MaxRate, each step lasting Duration after Warmup. Zero fields
// but Warmup take loadDefaults; a zero Warmup is none (the flags default
// it). Watch is given to run.
type LoadModel struct {
	Options
	FindMax bool
	P99     time.Duration
	MaxRate float64
}

// loadDefaults are LoadModel's defaults, which the flags share.
var loadDefaults = LoadModel{Options: Options{Rate: 1000, Duration: 20 * time.Second}, P99: 5 * time.Millisecond, MaxRate: 100_000}

func (m LoadModel) withDefaults() LoadModel {
	m.Rate = cmp.Or(m.Rate, loadDefaults.Rate)
	m.P99 = cmp.Or(m.P99, loadDefaults.P99)
	m.MaxRate = cmp.Or(m.MaxRate, loadDefaults.MaxRate)
	m.Duration = cmp.Or(m.Duration, loadDefaults.Duration)
	return m
}

// Validate reports every problem of m (after defaults).
func (m LoadModel) Validate() error {
	m = m.withDefaults()
	var p problems
	p.check(m.Concurrency == 0 || !m.FindMax, "find-max: an open-loop search; do not combine with concurrency")
	p.check(!m.FindMax || m.MaxRate >= m.Rate, "max-rate: must be >= rate (%v), got %v", m.Rate, m.MaxRate)
	p.check(m.P99 >= 0 && m.Timeout >= 0, "p99, timeout: must be >= 0")
	m.options().validate(&p, "")
	return p.err()
}

// options are the Options of a run (or of each search step) of m.
func (m LoadModel) options() Options {
	o := m.Options
	if o.Concurrency != 0 {
		o.Rate, o.MaxInFlight, o.Arrival = 0, 0, ""
	}
	return o
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

// run loads t with the model, watching w. With FindMax it returns the
// search too; its Result is the best passing step's (or the first step's
// when none passed).
func (m LoadModel) run(ctx context.Context, t Target, w Watch) (*Result, *MaxRateResult, error) {
	m = m.withDefaults()
	o := m.options()
	o.Watch = w
	if !m.FindMax {
		r, err := Run(ctx, t, o)
		return r, nil, err
	}
	o.Rate, o.Duration, o.Warmup = 0, 0, 0
	s, err := FindMaxRate(ctx, t, FindMaxRateOptions{
		Objective: Objective{P99: m.P99}, StartRate: m.Rate, MaxRate: m.MaxRate,
		StepDuration: m.Duration, StepWarmup: m.Warmup, Cooldown: 500 * time.Millisecond, Confirm: 1, Load: o,
	})
	if err != nil && !errors.Is(err, ErrNoPassingRate) {
		return nil, s, err
	}
	if s.Best == nil { // every step failed: s.Steps has at least one
		first := s.Steps[0]
		first.Result.Notes = append(first.Result.Notes, "no rate met the objective: this is the first step, "+first.Reason)
		return first.Result, s, nil
	}
	s.Best.Notes = append(s.Best.Notes, fmt.Sprintf("best step of a max-rate search (%s): %s req/s", s.Objective, fmtRate(s.MaxRate)))
	return s.Best, s, nil
}
