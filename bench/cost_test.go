package bench_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bench"
)

// TestOpenLoopWatch offers 20,000 req/s for 3 s to a trivial fasthttp
// server running in a subprocess and checks what the run reports: every
// scheduled request accounted for, the generator's CPU (getrusage), the
// watched process's CPU and peak RSS, and the connection samples. The
// generator's cost itself is measured by BenchmarkGeneratorCost
// (`make bench-generator`).
func TestOpenLoopWatch(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("-short or -race: 20,000 req/s")
	}
	addr, pid := startHelperServer(t)
	ht := newHTTPTarget(t, addr, "/bid")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const rate, dur = 20000, 3 * time.Second

	// Warm the connection pool and the helper.
	if _, err := bench.Run(ctx, ht, bench.Options{Rate: rate, Duration: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	r, err := bench.Run(ctx, ht, bench.Options{
		Rate: rate, Duration: dur, Warmup: 200 * time.Millisecond,
		Watch: bench.Watch{Processes: []bench.WatchProcess{{Name: "helper-server", PID: pid}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(rate * dur.Seconds()); r.Requests != want {
		t.Errorf("requests = %d, want %d scheduled", r.Requests, want)
	}
	if r.Requests != r.Successes+r.NoBids+r.DeadlineMisses+r.Errors.Total || r.Successes == 0 {
		t.Errorf("outcomes do not add up: %+v", r)
	}
	if r.GeneratorCPUSec <= 0 {
		t.Errorf("generator CPU = %v, want > 0", r.GeneratorCPUSec)
	}
	if len(r.Processes) != 1 || r.Processes[0].Error != "" || r.Processes[0].CPUSec <= 0 || r.Processes[0].PeakRSSBytes <= 0 {
		t.Errorf("helper process stats = %+v", r.Processes)
	}
}

// baselineCores drives the bare fasthttp client at rate for dur with a
// minimal 1 ms-slice pacer and a worker pool (no recording), and returns
// cores used and the rate it achieved.
func baselineCores(t testing.TB, addr string, rate float64, dur time.Duration) (cores, achieved float64) {
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: 1024}
	uri := "http://" + addr + "/bid"
	work := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 128; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI(uri)
				req.Header.SetMethod("POST")
				req.SetBodyString(`{"id":"x"}`)
				_ = hc.DoTimeout(req, resp, time.Second)
				fasthttp.ReleaseRequest(req)
				fasthttp.ReleaseResponse(resp)
			}
		}()
	}
	c0, err := bench.SelfCPU()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	sent := 0
	for {
		el := time.Since(t0)
		if el >= dur {
			break
		}
		for due := int(el.Seconds() * rate); sent < due; sent++ {
			work <- struct{}{}
		}
		time.Sleep(time.Millisecond)
	}
	close(work)
	wg.Wait()
	c1, _ := bench.SelfCPU()
	wall := time.Since(t0).Seconds()
	return (c1 - c0).Seconds() / wall, float64(sent) / wall
}

// BenchmarkGeneratorCost measures the generator's cost at 20,000 req/s
// against the subprocess server (one 2 s run per iteration): cores used (CPU
// s / wall s, from getrusage, so the server's CPU is not counted), split into
// user and system time (on loopback the request's write(2) also runs the
// server side's TCP receive, so much of the system time is not the
// generator's own work), beside a baseline measured in the same run: the
// bare fasthttp client driven by the simplest possible pacer, no recording.
// Run: make bench-generator.
func BenchmarkGeneratorCost(b *testing.B) {
	if raceEnabled {
		b.Skip("-race: the race detector's cost would be measured, not the generator's")
	}
	addr, _ := startHelperServer(b)
	ht := newHTTPTarget(b, addr, "/bid")
	const rate, dur = 20000, 2 * time.Second
	// Warm the connection pool and the helper.
	if _, err := bench.Run(context.Background(), ht, bench.Options{Rate: rate, Duration: 500 * time.Millisecond}); err != nil {
		b.Fatal(err)
	}
	base, _ := baselineCores(b, addr, rate, dur)
	var cores, p50, user, sys, wall float64
	for i := 0; i < b.N; i++ {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		t0 := time.Now()
		r, err := bench.Run(context.Background(), ht, bench.Options{Rate: rate, Duration: dur, Warmup: 200 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		wall += time.Since(t0).Seconds() // with the warm-up: user and sys are shares, not the cores figure
		user += float64(ru1.Utime.Nano()-ru0.Utime.Nano()) / 1e9
		sys += float64(ru1.Stime.Nano()-ru0.Stime.Nano()) / 1e9
		cores += r.GeneratorCores
		p50 += float64(r.Latency.P50Us)
	}
	n := float64(b.N)
	b.ReportMetric(cores/n, "cores")
	b.ReportMetric(base, "baseline-cores")
	b.ReportMetric(cores/n/base, "cores/baseline")
	b.ReportMetric(user/wall, "user-cores")
	b.ReportMetric(sys/wall, "sys-cores")
	b.ReportMetric(p50/n, "p50-us")
}
