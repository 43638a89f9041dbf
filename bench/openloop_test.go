package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bench"
)

func newHTTPTarget(t testing.TB, addr, path string) bench.Target {
	t.Helper()
	return bench.NewHTTPTarget("http", addr, path, func(w *bench.Worker, dst []byte) []byte { return append(dst, `{"id":"x"}`...) })
}

// stallHandler stalls every request arriving during the first 200 ms of
// each second (measured from base) until that window ends.
func stallHandler(base time.Time) fasthttp.RequestHandler {
	const window = 200 * time.Millisecond
	return func(ctx *fasthttp.RequestCtx) {
		if phase := time.Since(base) % time.Second; phase < window {
			time.Sleep(window - phase)
		}
		ctx.SetStatusCode(fasthttp.StatusOK)
	}
}

// TestOpenLoopShowsStall is the acceptance test for coordinated omission:
// the open-loop run must charge the stall to every request that arrived
// during it; a closed-loop run at concurrency 1 sees it only once per stall.
// The asserted numbers are lower bounds caused by the stall (not speed).
func TestOpenLoopShowsStall(t *testing.T) {
	addr := startServer(t, stallHandler(time.Now()))
	ht := newHTTPTarget(t, addr, "/bid")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A generous hard timeout: the assertions below must not depend on the
	// machine's own stalls.
	open, err := bench.Run(ctx, ht, bench.Options{Rate: 500, Duration: 3 * time.Second, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l := open.Latency
	t.Logf("open loop: %d requests, p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms, stalled(>=50ms) %.1f%%, send lag p99 %.2f ms, workers %d",
		open.Requests, ms(l.P50Us), ms(l.P90Us), ms(l.P99Us), ms(l.MaxUs), 100*shareAbove(open, 50_000), ms(open.SendLag.P99Us), open.Workers)
	if open.Requests != 1500 {
		t.Errorf("open loop scheduled %d requests, want exactly 1500 (500/s x 3 s)", open.Requests)
	}
	if open.Successes != open.Requests {
		t.Errorf("open loop: %d of %d OK (errors %+v)", open.Successes, open.Requests, open.Errors)
	}
	if l.MaxUs < 150_000 {
		t.Errorf("open loop max = %.1f ms, want >= 150 ms (the 200 ms stall)", ms(l.MaxUs))
	}
	if l.P99Us < 100_000 {
		t.Errorf("open loop p99 = %.1f ms, want >= 100 ms (20%% of requests arrive in a stall)", ms(l.P99Us))
	}
	// About 20% of the requests arrive in a stall window; more than 5% of
	// them must be charged at least 50 ms.
	if s := shareAbove(open, 50_000); s < 0.05 {
		t.Errorf("open loop: %.1f%% of requests >= 50 ms, want >= 5%%", 100*s)
	}
	if open.Workers < 50 {
		t.Errorf("open loop used %d workers; a 200 ms stall at 500/s needs ~100 in flight", open.Workers)
	}

	closed, err := bench.Run(ctx, ht, bench.Options{Concurrency: 1, Duration: 3 * time.Second, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := closed.Latency
	t.Logf("closed loop (c=1): %d requests, p50 %.2f ms, p99 %.2f ms, max %.1f ms, stalled(>=50ms) %.3f%%  <- the stall hides in <1%% of samples",
		closed.Requests, ms(c.P50Us), ms(c.P99Us), ms(c.MaxUs), 100*shareAbove(closed, 50_000))
}

func ms(us int64) float64 { return float64(us) / 1000 }

// shareAbove estimates the share of requests slower than us from the
// percentile curve.
func shareAbove(r *bench.Result, us int64) float64 {
	for _, p := range r.Percentiles {
		if p.Us >= us {
			return 1 - p.P/100
		}
	}
	return 0
}
