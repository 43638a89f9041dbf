package bench_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bench"
)

// TestEngineAllocs pins the harness's own garbage: per request the pacer,
// workers and recording allocate nothing (fixed costs per run and per 1 s
// window only), measured with a no-op target.
func TestEngineAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("-race allocates")
	}
	noop := bench.TargetFunc("noop", func(context.Context, *bench.Worker) bench.Outcome { return bench.OK })
	measure := func(run func() (*bench.Result, error)) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r, err := run()
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return float64(after.Mallocs-before.Mallocs) / float64(r.Requests)
	}
	closed := measure(func() (*bench.Result, error) {
		return bench.Run(testCtx(t), noop, bench.Options{Concurrency: 4, Requests: 200_000})
	})
	open := measure(func() (*bench.Result, error) {
		// MaxInFlight bounds worker spawning (a fixed cost per worker), which
		// machine hiccups would otherwise inflate.
		return bench.Run(testCtx(t), noop, bench.Options{Rate: 20_000, Duration: 2 * time.Second, MaxInFlight: 16})
	})
	t.Logf("allocs per request: closed loop %.4f, open loop %.4f", closed, open)
	if closed > 0.05 || open > 0.05 {
		t.Fatalf("allocs per request: closed %.4f, open %.4f; want < 0.05 (nothing per request)", closed, open)
	}
}
