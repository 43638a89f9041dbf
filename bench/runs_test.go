package bench_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bench"
)

func okTarget(name string, calls *atomic.Int64) bench.Target {
	return bench.TargetFunc(name, func(context.Context, *bench.Worker) bench.Outcome {
		calls.Add(1)
		return bench.OK
	})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClosedLoopRequestLimit(t *testing.T) {
	var calls atomic.Int64
	r, err := bench.Run(testCtx(t), okTarget("c", &calls), bench.Options{Concurrency: 4, Requests: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 1000 || calls.Load() != 1000 || r.Successes != 1000 || r.Mode != bench.ModeClosedLoop || r.Concurrency != 4 {
		t.Fatalf("requests %d, calls %d, result %+v", r.Requests, calls.Load(), r)
	}
	if r.SendLag.MaxUs != 0 {
		t.Errorf("closed loop send lag %+v, want zero", r.SendLag)
	}
}

func TestOpenLoopWarmupExcluded(t *testing.T) {
	var calls atomic.Int64
	r, err := bench.Run(testCtx(t), okTarget("w", &calls), bench.Options{Rate: 1000, Duration: time.Second, Warmup: 500 * time.Millisecond, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 1000 || calls.Load() != 1500 || r.WarmupSec != 0.5 {
		t.Fatalf("requests %d (want 1000 measured), calls %d (want 1500 incl. warmup)", r.Requests, calls.Load())
	}
}

func TestOpenLoopPoissonArrival(t *testing.T) {
	var calls atomic.Int64
	o := bench.Options{Rate: 2000, Duration: time.Second, Arrival: bench.Poisson, Seed: 9, Timeout: -1}
	r, err := bench.Run(testCtx(t), okTarget("p", &calls), o)
	if err != nil {
		t.Fatal(err)
	}
	// Poisson count: mean 2000, sd ~45; the seeded gaps make it repeatable.
	if r.Requests < 1800 || r.Requests > 2200 || r.Arrival != bench.Poisson {
		t.Fatalf("poisson requests %d", r.Requests)
	}
	r2, err := bench.Run(testCtx(t), okTarget("p", &calls), o)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Requests != r.Requests {
		t.Fatalf("same seed, different counts: %d vs %d", r.Requests, r2.Requests)
	}
}

// TestOpenLoopPoolExhausted: with 2 workers and a 50 ms target (capacity 40
// req/s) at 200 req/s, requests queue in the generator. Their wait counts
// from the scheduled time, and those past the 300 ms timeout are not sent
// but counted as expired timeouts. Nothing is dropped.
func TestOpenLoopPoolExhausted(t *testing.T) {
	var calls atomic.Int64
	slow := bench.TargetFunc("slow", func(context.Context, *bench.Worker) bench.Outcome {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond)
		return bench.OK
	})
	r, err := bench.Run(testCtx(t), slow, bench.Options{Rate: 200, Duration: 2 * time.Second, MaxInFlight: 2, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("requests %d, sent %d, expired %d, timeouts %d, p50 %.1f ms, p99 %.1f ms, send lag p99 %.1f ms",
		r.Requests, calls.Load(), r.Expired, r.Errors.Timeout, ms(r.Latency.P50Us), ms(r.Latency.P99Us), ms(r.SendLag.P99Us))
	if r.Requests != 400 {
		t.Errorf("requests %d, want all 400 scheduled accounted for", r.Requests)
	}
	if r.Workers != 2 {
		t.Errorf("workers %d, want MaxInFlight 2", r.Workers)
	}
	if r.Expired < 100 || r.Errors.Timeout < r.Expired {
		t.Errorf("expired %d, timeouts %d: at 5x capacity most requests must expire", r.Expired, r.Errors.Timeout)
	}
	if calls.Load()+r.Expired != r.Requests {
		t.Errorf("sent %d + expired %d != requests %d", calls.Load(), r.Expired, r.Requests)
	}
	if r.Latency.P99Us < 250_000 || r.SendLag.P99Us < 200_000 {
		t.Errorf("p99 %.1f ms, send lag p99 %.1f ms: queueing in the generator must count", ms(r.Latency.P99Us), ms(r.SendLag.P99Us))
	}
}

func TestRunMixed(t *testing.T) {
	var a, b, c atomic.Int64
	nobid := bench.TargetFunc("win", func(context.Context, *bench.Worker) bench.Outcome { b.Add(1); return bench.NoBid })
	loads := []bench.Load{
		{Target: okTarget("bid", &a), Options: bench.Options{Rate: 300, Timeout: -1}},
		{Target: nobid, Options: bench.Options{Rate: 100, Timeout: -1}},
		{Target: okTarget("pixel", &c), Options: bench.Options{Rate: 50, Arrival: bench.Poisson, Timeout: -1}},
	}
	rs, err := bench.RunMixed(testCtx(t), loads, bench.MixedOptions{Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Target != "bid" || rs[1].Target != "win" || rs[2].Target != "pixel" {
		t.Fatalf("results %v", rs)
	}
	if rs[0].Requests != 300 || rs[0].Successes != 300 || rs[1].Requests != 100 || rs[1].NoBids != 100 || rs[2].Requests == 0 {
		t.Fatalf("counts: bid %d/%d win %d/%d pixel %d", rs[0].Requests, rs[0].Successes, rs[1].Requests, rs[1].NoBids, rs[2].Requests)
	}
	if !rs[0].Start.Equal(rs[1].Start) || rs[0].GeneratorShared != 3 || rs[0].GeneratorCPUSec != rs[2].GeneratorCPUSec {
		t.Fatalf("mixed loads must share start and generator figures")
	}

	_, err = bench.RunMixed(testCtx(t), []bench.Load{
		{Target: okTarget("dup", &a), Options: bench.Options{Rate: 1}},
		{Target: okTarget("dup", &a), Options: bench.Options{Rate: 1, Duration: time.Minute}},
	}, bench.MixedOptions{Duration: time.Second})
	if !errors.Is(err, bench.ErrInvalid) || !strings.Contains(err.Error(), "duplicate name") || !strings.Contains(err.Error(), "loads[1].duration") {
		t.Fatalf("invalid mixed run: %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	_, err := bench.Run(testCtx(t), okTarget("x", new(atomic.Int64)),
		bench.Options{Rate: -1, Warmup: -1, MaxInFlight: -2, Arrival: "burst", Watch: bench.Watch{Processes: []bench.WatchProcess{{PID: 0}}}})
	for _, s := range []string{"rate", "duration", "warmup", "max_in_flight", "arrival", "watch.processes[0].pid"} {
		if !errors.Is(err, bench.ErrInvalid) || !strings.Contains(err.Error(), s) {
			t.Errorf("open loop: %v lacks %q", err, s)
		}
	}
	if _, err := bench.Run(testCtx(t), okTarget("x", new(atomic.Int64)), bench.Options{}); !errors.Is(err, bench.ErrInvalid) {
		t.Errorf("Run with zero options: %v", err)
	}
	_, err = bench.Run(testCtx(t), okTarget("x", new(atomic.Int64)), bench.Options{Concurrency: -1, Rate: 5})
	for _, s := range []string{"concurrency", "rate", "duration"} {
		if !errors.Is(err, bench.ErrInvalid) || !strings.Contains(err.Error(), s) {
			t.Errorf("closed loop: %v lacks %q", err, s)
		}
	}
	if _, err := bench.Run(testCtx(t), nil, bench.Options{Concurrency: 1, Duration: time.Second}); !errors.Is(err, bench.ErrInvalid) {
		t.Errorf("nil target: %v", err)
	}
	if _, err := bench.FindMaxRate(testCtx(t), okTarget("x", new(atomic.Int64)), bench.FindMaxRateOptions{MaxRate: 10}); !errors.Is(err, bench.ErrInvalid) {
		t.Errorf("FindMaxRate without p99: %v", err)
	}
}

func TestRunAbort(t *testing.T) {
	var calls atomic.Int64
	ctx, cancel := context.WithCancel(testCtx(t))
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	r, err := bench.Run(ctx, okTarget("o", &calls), bench.Options{Rate: 100, Duration: time.Minute})
	if !errors.Is(err, bench.ErrAborted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if r == nil || !r.Aborted || r.Requests == 0 || r.Requests >= 6000 || time.Since(began) > 30*time.Second {
		t.Fatalf("partial result %+v after %v", r, time.Since(began))
	}
	ctx, cancel = context.WithCancel(testCtx(t))
	time.AfterFunc(300*time.Millisecond, cancel)
	r, err = bench.Run(ctx, okTarget("c", &calls), bench.Options{Concurrency: 2, Duration: time.Minute})
	if !errors.Is(err, bench.ErrAborted) || r == nil || !r.Aborted || r.Requests == 0 {
		t.Fatalf("closed loop abort: %v %+v", err, r)
	}
}

func TestWorkerState(t *testing.T) {
	collect := func() map[int]uint64 {
		var mu sync.Mutex
		got := map[int]uint64{}
		tg := bench.TargetFunc("r", func(_ context.Context, w *bench.Worker) bench.Outcome {
			mu.Lock()
			defer mu.Unlock()
			if w.Seq == 0 {
				if _, dup := got[w.ID]; dup {
					t.Errorf("worker %d: Seq 0 twice", w.ID)
				}
				got[w.ID] = w.Rand.Uint64()
			}
			if w.Deadline.IsZero() {
				t.Errorf("worker %d: no deadline", w.ID)
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond) // keep all workers busy
			mu.Lock()
			return bench.OK
		})
		if _, err := bench.Run(testCtx(t), tg, bench.Options{Concurrency: 3, Requests: 30, Seed: 42}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b := collect(), collect()
	if len(a) != 3 {
		t.Fatalf("workers %v", a)
	}
	for id, v := range a {
		if b[id] != v {
			t.Errorf("worker %d: rand %d vs %d with the same seed", id, v, b[id])
		}
	}
}

// TestFindMaxRate searches a target that serialises requests of >= 6 ms
// (capacity < 167 req/s) with a p99 <= 1 s objective over 1 s steps: the
// found rate must lie below 400 req/s (where over a quarter of the requests
// would wait > 1 s) and the start rate must pass.
func TestFindMaxRate(t *testing.T) {
	var mu sync.Mutex
	serial := bench.TargetFunc("serial", func(context.Context, *bench.Worker) bench.Outcome {
		mu.Lock()
		time.Sleep(6 * time.Millisecond)
		mu.Unlock()
		return bench.OK
	})
	res, err := bench.FindMaxRate(testCtx(t), serial, bench.FindMaxRateOptions{
		Objective:    bench.Objective{P99: time.Second},
		StartRate:    100,
		MaxRate:      10000,
		Precision:    0.2,
		StepDuration: time.Second,
		Load:         bench.Options{Timeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Steps {
		t.Logf("rate %.0f pass %v p99 %.1f ms %s", s.Rate, s.Pass, ms(s.P99Us), s.Reason)
	}
	t.Logf("max rate %.0f req/s", res.MaxRate)
	if res.MaxRate < 100 || res.MaxRate >= 400 || !res.Bracketed || res.Best == nil || res.Best.OfferedRate != res.MaxRate {
		t.Fatalf("max rate %v (bracketed %v)", res.MaxRate, res.Bracketed)
	}
	if len(res.Steps) < 3 || !res.Steps[0].Pass {
		t.Fatalf("steps %+v", res.Steps)
	}
	for _, s := range res.Steps {
		if s.Rate >= 400 && s.Pass {
			t.Errorf("rate %v passed above capacity", s.Rate)
		}
		if (s.Reason == "") != s.Pass {
			t.Errorf("step %v: pass %v reason %q", s.Rate, s.Pass, s.Reason)
		}
	}
	if !strings.Contains(res.Objective, "p99 <= 1000 ms") || !strings.Contains(res.Objective, "errors < 0.1%") {
		t.Errorf("objective %q", res.Objective)
	}

	// An objective nothing can meet.
	res, err = bench.FindMaxRate(testCtx(t), serial, bench.FindMaxRateOptions{
		Objective: bench.Objective{P99: time.Millisecond}, StartRate: 50, MaxRate: 100, StepDuration: 200 * time.Millisecond,
	})
	if !errors.Is(err, bench.ErrNoPassingRate) || res == nil || res.MaxRate != 0 || len(res.Steps) != 1 {
		t.Fatalf("impossible objective: %v %+v", err, res)
	}
}

// TestFindMaxRateConfirm: one stall (a burst of failures, as a neighbour
// on a shared host causes) fails a step far below capacity. Trusted as
// measured, it ends the search there; with Confirm the rate is run again,
// passes, and the search goes on to the cap.
func TestFindMaxRateConfirm(t *testing.T) {
	stalling := func() bench.Target {
		var calls atomic.Int64
		return bench.TargetFunc("stalls-once", func(context.Context, *bench.Worker) bench.Outcome {
			if n := calls.Add(1); n > 60 && n <= 100 { // inside the second step (calls 51-150)
				return bench.ErrStatus5xx
			}
			return bench.OK
		})
	}
	o := bench.FindMaxRateOptions{Objective: bench.Objective{P99: time.Second}, StartRate: 100, MaxRate: 800,
		Precision: 0.2, StepDuration: 500 * time.Millisecond, Load: bench.Options{Timeout: 10 * time.Second}}

	trusted, err := bench.FindMaxRate(testCtx(t), stalling(), o)
	if err != nil {
		t.Fatal(err)
	}
	if trusted.MaxRate >= 200 || !trusted.Bracketed {
		t.Fatalf("without Confirm: max rate %v (bracketed %v), want below the stalled 200", trusted.MaxRate, trusted.Bracketed)
	}

	o.Confirm = 1
	confirmed, err := bench.FindMaxRate(testCtx(t), stalling(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range confirmed.Steps {
		t.Logf("rate %.0f pass %v %s", s.Rate, s.Pass, s.Reason)
	}
	if confirmed.MaxRate != 800 || confirmed.Bracketed {
		t.Fatalf("with Confirm 1: max rate %v (bracketed %v), want the cap 800", confirmed.MaxRate, confirmed.Bracketed)
	}
	if s := confirmed.Steps[1]; s.Rate != 200 || s.Pass || !strings.HasSuffix(s.Reason, "(re-run to confirm)") {
		t.Fatalf("step 2 = %+v, want the failed 200 marked for a re-run", s)
	}
	if s := confirmed.Steps[2]; s.Rate != 200 || !s.Pass {
		t.Fatalf("step 3 = %+v, want 200 again, passing", s)
	}
	if _, err := bench.FindMaxRate(testCtx(t), stalling(), bench.FindMaxRateOptions{Objective: bench.Objective{P99: time.Second},
		MaxRate: 100, Confirm: -1}); !errors.Is(err, bench.ErrInvalid) {
		t.Fatalf("confirm -1: %v", err)
	}
}
