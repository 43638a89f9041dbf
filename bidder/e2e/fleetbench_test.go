package e2e

import (
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// fleetBenchEnv runs TestFleetBench when set: the run's length, a Go
// duration ("60s"). Not RTBD_*: the bidders, which inherit the
// environment, refuse unknown RTBD_ variables.
const fleetBenchEnv = "FLEET_BENCH"

// TestFleetBench is the fleet of TestFleetEndToEnd run for longer, printed
// and without asserts (make bench-fleet): a generator bids every 5ms on a
// bidder chosen at random and fires each bid's nurl and burl 0.5-1s later
// (the campaign's daily budget is out of reach), while the bidders are
// restarted one after another, one every quarter of the run. Every second
// it prints the bids, no-bids, charges accepted and the bid latency of
// that second, and Redis's day spend; at the end, what Redis holds against
// what the generator got accepted.
func TestFleetBench(t *testing.T) {
	v := os.Getenv(fleetBenchEnv)
	if v == "" {
		t.Skipf("%s is not set (make bench-fleet)", fleetBenchEnv)
	}
	run, err := time.ParseDuration(v)
	if err != nil || run <= 0 {
		t.Fatalf("%s=%q: want a positive Go duration", fleetBenchEnv, v)
	}
	f := startFleet(t, "    daily_budget: 100000\n")
	before := f.readDay(t)
	l := &load{f: f, stop: make(chan struct{}), every: 5 * time.Millisecond, track: true}
	l.done.Add(1)
	go l.run()

	var restarts atomic.Int64
	rollDone := make(chan struct{})
	go func() {
		defer close(rollDone)
		for i := range fleetBidders {
			select {
			case <-l.stop:
				return
			case <-time.After(run / (fleetBidders + 1)):
			}
			m := f.restart(t, i, nil)
			restarts.Add(1)
			t.Logf("restarted %s", m.name)
		}
	}()

	start := time.Now()
	var lastBids, lastNoBids int64
	var lastCharges, lastLats int
	t.Logf("%6s %6s %8s %8s %8s %9s %9s %12s", "t", "bids/s", "nobids/s", "charges", "restarts", "p50", "p99", "redis micros")
	for time.Since(start) < run {
		time.Sleep(time.Second)
		l.mu.Lock()
		charges := len(l.charges)
		lats := slices.Clone(l.lats[lastLats:])
		lastLats = len(l.lats)
		l.mu.Unlock()
		bids, noBids := l.bids.Load(), l.noBids.Load()
		slices.Sort(lats)
		var p50, p99 time.Duration
		if n := len(lats); n > 0 {
			p50, p99 = lats[n/2], lats[n*99/100]
		}
		t.Logf("%5.0fs %6d %8d %8d %8d %9v %9v %12d", time.Since(start).Seconds(), bids-lastBids, noBids-lastNoBids,
			charges-lastCharges, restarts.Load(), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), f.readDay(t).DayMicros-before.DayMicros)
		lastBids, lastNoBids, lastCharges = bids, noBids, charges
	}
	close(l.stop)
	<-rollDone
	l.done.Wait()
	l.notices.Wait()
	f.settle(t)
	final := f.readDay(t)
	l.mu.Lock()
	accepted := int64(len(l.charges))
	l.mu.Unlock()
	bids, noBids := l.bids.Load(), l.noBids.Load()
	t.Logf("%v: %d bids, %d no-bids, %d charges accepted, %d notices in doubt, %d load failures (first %v); redis added %d impressions, %d micros",
		run, bids, noBids, accepted, l.inDoubt.Load(), l.failures.Load(), l.firstErr.Load(),
		final.DayImps-before.DayImps, final.DayMicros-before.DayMicros)
}
