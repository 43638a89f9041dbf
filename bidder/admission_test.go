package bidder

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNextShed(t *testing.T) {
	const target = 5 * time.Millisecond
	cases := []struct {
		name   string
		shed   float64
		p99    time.Duration
		n      uint64
		want   float64
		approx bool
	}{
		{"idle stays at 0", 0, 0, 0, 0, false},
		{"few events lower it", 0.5, time.Second, minWindowEvents - 1, 0.48, true},
		{"over target from 0: +5 points at least", 0, 10 * time.Millisecond, 1000, 0.25, true},
		{"over target: a quarter of the gap", 0.6, 10 * time.Millisecond, 1000, 0.7, true},
		{"over target: capped", 0.94, time.Second, 1000, 0.95, true},
		{"between target/2 and target: hold", 0.3, 3 * time.Millisecond, 1000, 0.3, true},
		{"under target/2: -2 points", 0.3, time.Millisecond, 1000, 0.28, true},
		{"never below 0", 0.01, time.Millisecond, 1000, 0, false},
	}
	for _, c := range cases {
		got := nextShed(c.shed, c.p99, c.n, target, 0.95)
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: nextShed(%v, %v, %d) = %v, want %v", c.name, c.shed, c.p99, c.n, got, c.want)
		}
	}
	// Sustained overload converges to the cap within a few windows;
	// then recovery walks back to 0.
	s := 0.0
	for i := 0; i < 12; i++ {
		s = nextShed(s, time.Second, 1000, target, 0.95)
	}
	if s < 0.9 {
		t.Errorf("after 12 overloaded windows shed = %v, want >= 0.9", s)
	}
	for i := 0; i < 60 && s > 0; i++ {
		s = nextShed(s, time.Millisecond, 1000, target, 0.95)
	}
	if s != 0 {
		t.Errorf("after 60 quiet windows shed = %v, want 0", s)
	}
}

func TestWindowP99(t *testing.T) {
	buckets := []float64{0, 0.001, 0.002, 0.004, 0.008, math.Inf(1)}
	prev := &rtmetrics.Float64Histogram{Buckets: buckets, Counts: []uint64{10, 10, 10, 10, 10}}
	// Window: 980 events in [0,1ms), 15 in [2,4ms), 5 in [8ms,inf).
	cur := &rtmetrics.Float64Histogram{Buckets: buckets, Counts: []uint64{990, 10, 25, 10, 15}}
	p99, n := windowP99(prev, cur)
	if n != 1000 || p99 != 4*time.Millisecond {
		t.Errorf("p99 %v over %d events, want 4ms over 1000", p99, n)
	}
	// All in the open last bucket: its lower bound.
	cur2 := &rtmetrics.Float64Histogram{Buckets: buckets, Counts: []uint64{10, 10, 10, 10, 110}}
	if p99, n := windowP99(prev, cur2); n != 100 || p99 != 8*time.Millisecond {
		t.Errorf("open bucket: p99 %v n %d", p99, n)
	}
	if _, n := windowP99(prev, prev); n != 0 {
		t.Errorf("empty window: %d events", n)
	}
	if _, n := windowP99(nil, cur); n != 0 {
		t.Errorf("no previous read: %d events", n)
	}
}

// TestAdmissionShedsUnderCPUStarvation: the real controller on the real
// runtime metric. Goroutines spinning on both cores make every other
// goroutine wait for the CPU; the controller must start shedding, and
// return to shedding nothing once they stop. No timing is asserted: each
// condition is waited for (bounded, generously).
func TestAdmissionShedsUnderCPUStarvation(t *testing.T) {
	a := NewAdmission(AdmissionOptions{Target: 2 * time.Millisecond, Interval: 10 * time.Millisecond})
	if a.Shed() {
		t.Fatal("a new Admission sheds")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for !stop.Load() {
				for j := 0; j < 1e5; j++ {
					x += j
				}
				time.Sleep(time.Microsecond) // many wake-ups: scheduling events
			}
			_ = x
		}()
	}
	waitFor(t, 20*time.Second, "shedding under CPU starvation", func() bool { return a.ShedRatio() > 0 })
	t.Logf("shedding %.2f with sched p99 %v", a.ShedRatio(), a.SchedP99())
	stop.Store(true)
	wg.Wait()
	waitFor(t, 20*time.Second, "no shedding once the CPU is free", func() bool { return a.ShedRatio() == 0 })
	cancel()
}

// TestAdmissionSeesSpareCPU: Run's run-queue samples tell an idle process
// (spare CPU: a standing queue is not shed) from one whose goroutines wait
// for a CPU.
func TestAdmissionSeesSpareCPU(t *testing.T) {
	a := NewAdmission(AdmissionOptions{Interval: 10 * time.Millisecond})
	if a.Spare() {
		t.Fatal("a new Admission claims spare CPU before sampling")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	waitFor(t, 20*time.Second, "spare CPU in an idle process", a.Spare)
	stop := spin(4 * runtime.GOMAXPROCS(0))
	waitFor(t, 20*time.Second, "no spare CPU with goroutines waiting for one", func() bool { return !a.Spare() })
	stop()
	waitFor(t, 20*time.Second, "spare CPU again", a.Spare)
	cancel()
}

func TestBusyWindow(t *testing.T) {
	var w busyWindow
	if w.ratio() != 1 {
		t.Fatalf("empty window ratio %v, want 1", w.ratio())
	}
	for i := range busySamples {
		w.add(i%4 == 0)
	}
	if w.ratio() != 0.25 {
		t.Fatalf("ratio %v, want 0.25", w.ratio())
	}
	for range busySamples / 2 { // the older half (3 busy: 0, 4, 8) rolls out
		w.add(true)
	}
	if w.ratio() != 0.6 { // 12, 16 and the 10 new
		t.Fatalf("ratio %v, want 0.6", w.ratio())
	}
}

// spin starts n goroutines that keep the CPUs busy (more than GOMAXPROCS
// of them leave goroutines waiting for a P) and returns what stops them.
func spin(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for !done.Load() {
				x++
			}
			_ = x
		}()
	}
	return func() { done.Store(true); wg.Wait() }
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %v: %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAdmissionShedsBids: a request shed by the admission control is a
// no-bid with nbr 507 (the id echoed with nbr_body), counted by reason,
// answered without being decoded; at ratio 0 every request is served.
func TestAdmissionShedsBids(t *testing.T) {
	a := NewAdmission(AdmissionOptions{})
	f := newFixture(t, func(o *Options) { o.Admission = a; o.NBRBody = true })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	if r := f.bid(body); r.status != 200 || !json.Valid(r.body) || len(r.body) < 1000 {
		t.Fatalf("not shedding: status %d, %d bytes, want a bid", r.status, len(r.body))
	}
	a.set(1, 50*time.Millisecond) // shed everything
	for i := 0; i < 3; i++ {
		r := f.bid(body)
		var nb struct {
			ID  string `json:"id"`
			NBR int    `json:"nbr"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &nb) != nil || nb.NBR != 507 || nb.ID != "80ce30c53c16e6ede735f123ef6e32361bfc7b22" {
			t.Errorf("shed: status %d body %s, want a no-bid with nbr 507 and the id", r.status, r.body)
		}
	}
	if got := f.counter("rtbd_bidder_shed_total", "reason", "latency"); got != 3 {
		t.Errorf("shed_total{latency} = %v, want 3", got)
	}
	if got := f.counter("rtbd_bidder_shed_total", "reason", "in_flight"); got != 0 {
		t.Errorf("shed_total{in_flight} = %v, want 0", got)
	}
	// Every answer is in the total-latency histogram, shed ones too (the
	// bench harness reads it as the bidder's side of each answer).
	if got := f.counter("rtbd_bidder_request_seconds"); got != 4 {
		t.Errorf("request_seconds count = %v, want 4 (a bid and 3 shed)", got)
	}
	a.set(0, 0)
	if r := f.bid(body); r.status != 200 || len(r.body) < 1000 {
		t.Errorf("after recovery: status %d, %d bytes, want a bid", r.status, len(r.body))
	}
}

// TestShedQueued: CoDel's rule on the measured queueing delay, averaged
// over requests (1/16 each). Waits above Target shed nothing until the
// average has stayed above Target for Interval; then each request over
// Target is shed (one young request among old ones does not end it); once
// the average is back under Target, nothing is.
func TestShedQueued(t *testing.T) {
	const target, interval = 5 * time.Millisecond, 25 * time.Millisecond
	a := NewAdmission(AdmissionOptions{Target: target, Interval: interval})
	t0 := time.Unix(1_700_000_000, 0)
	ms := time.Millisecond
	now := t0
	feed := func(n int, queued time.Duration, step time.Duration) (shed int) {
		for range n {
			if a.ShedQueued(queued, now) {
				shed++
			}
			now = now.Add(step)
		}
		return shed
	}
	if n := feed(100, 2*ms, ms/10); n != 0 || a.Standing() {
		t.Fatalf("waits within target: %d shed, standing %v", n, a.Standing())
	}
	// A burst: 15 ms of requests that waited 30 ms. The average goes above
	// target, but not for an interval.
	if n := feed(150, 30*ms, ms/10); n != 0 || a.Standing() {
		t.Fatalf("a 15 ms burst: %d shed, standing %v", n, a.Standing())
	}
	if n := feed(200, ms, ms/10); n != 0 {
		t.Fatalf("after the burst: %d shed", n)
	}
	// A standing queue: 40 ms of requests that waited 20 ms, a young one
	// every 10th. Shedding starts once the average has been above target
	// for 25 ms, and takes only the old requests.
	old, young := 0, 0
	for i := range 400 {
		q := 20 * ms
		if i%10 == 0 {
			q = ms
		}
		if a.ShedQueued(q, now) {
			if q == ms {
				young++
			}
			old++
		}
		now = now.Add(ms / 10)
	}
	if !a.Standing() || young != 0 || old < 100 || old > 300 {
		t.Fatalf("standing queue: %d old shed, %d young shed, standing %v", old, young, a.Standing())
	}
	// Drained: the average falls under target and shedding stops.
	feed(100, ms, ms/10)
	if a.Standing() || a.ShedQueued(10*ms, now) {
		t.Fatalf("after draining: standing %v", a.Standing())
	}
	// The same standing queue while Run sees the CPUs with room (the
	// requests waited on a stopped virtual CPU or a stalled network, not
	// for this bidder's CPU): it stands, and nothing is shed.
	a.spare.Store(true)
	if n := feed(400, 20*ms, ms/10); n != 0 || !a.Standing() {
		t.Fatalf("standing queue with spare CPU: %d shed, standing %v", n, a.Standing())
	}
	a.spare.Store(false)
	if n := feed(10, 20*ms, ms/10); n != 10 {
		t.Fatalf("standing queue, CPU bound again: %d of 10 shed", n)
	}
	var nilA *Admission
	if nilA.ShedQueued(time.Second, t0) || nilA.Standing() {
		t.Fatal("a nil Admission shed")
	}
}

// TestQueueShedYoung: while a queue stands, Run raises the fraction of
// young requests shed too (serving every young one leaves a bidder at its
// limit no CPU to drain the queue), and lowers it once the average wait is
// under half the target.
func TestQueueShedYoung(t *testing.T) {
	const target = 5 * time.Millisecond
	steps := []struct {
		shed     float64
		standing bool
		avg      time.Duration
		want     float64
	}{
		{0, true, 20 * time.Millisecond, 0.25},
		{0.8, true, 20 * time.Millisecond, 0.85},
		{0.94, true, 20 * time.Millisecond, 0.95}, // capped at MaxShed
		{0.5, false, 4 * time.Millisecond, 0.5},   // between target/2 and target: hold
		{0.5, false, 2 * time.Millisecond, 0.45},
		{0.03, false, 0, 0},
	}
	for _, s := range steps {
		if got := nextQueueShed(s.shed, s.standing, s.avg, target, 0.95); math.Abs(got-s.want) > 1e-9 {
			t.Errorf("nextQueueShed(%v, standing %v, avg %v) = %v, want %v", s.shed, s.standing, s.avg, got, s.want)
		}
	}
	a := NewAdmission(AdmissionOptions{Target: target, Interval: 25 * time.Millisecond})
	now := time.Unix(1_700_000_000, 0)
	a.qprob.Store(65536) // all young requests
	if !a.ShedQueued(time.Millisecond, now) {
		t.Fatal("a young request was served with the young shed fraction at 1")
	}
	a.qprob.Store(0)
	if a.ShedQueued(time.Millisecond, now) {
		t.Fatal("a young request was shed with the young shed fraction at 0")
	}
}
