package remote

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rtbd/rtbd/catalog"
)

// Test 2: node churn under load. One node is killed (no draining) and
// removed from the node file, a fourth is started and added. No call may
// fail except ones in flight on the killed node when it died (the retry
// policy should save even those), and the new node must get traffic after
// the next refresh.
func TestNodeChurn(t *testing.T) {
	const (
		workers  = 8
		interval = 200 * time.Millisecond
	)
	nodes := startNodes(t, "a", "b", "c")
	a, b, cn := nodes[0], nodes[1], nodes[2]
	path, target := nodeFile(t, nodes...)
	c := newTestClient(t, Options{Target: target, RefreshInterval: interval, Logger: zaptest.NewLogger(t)})
	warmUp(t, c, nodes...)

	var (
		total, failed, failedAfterRemoval atomic.Int64
		removed                           atomic.Bool // set once Nodes() no longer lists b
		mu                                sync.Mutex
		failures                          []error
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				after := removed.Load()
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				// groupSlow keeps every call ~1ms on its node, so calls are in
				// flight on b when it is killed.
				_, err := c.GetProductMasters(cctx, req(groupSlow))
				cancel()
				total.Add(1)
				if err != nil {
					failed.Add(1)
					if after {
						failedAfterRemoval.Add(1)
					}
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	// Diagnostics only: on this shared machine the whole process can stall;
	// say so, so that a deadline failure is not misread.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for last := time.Now(); ctx.Err() == nil; last = time.Now() {
			time.Sleep(10 * time.Millisecond)
			if d := time.Since(last); d > 500*time.Millisecond {
				t.Logf("process stalled: a 10ms sleep took %s", d)
			}
		}
	}()
	progress := func(what string, n int64) {
		t.Helper()
		start := total.Load()
		waitFor(t, 10*time.Second, what, func() bool { return total.Load() >= start+n })
	}

	progress("load to run", 300)
	t.Logf("nodes a=%s b=%s c=%s; killing b", a.addr, b.addr, cn.addr)
	b.stop() // killed mid-run, still listed in the file for now
	progress("calls while the dead node is still listed", 300)

	writeNodeFile(t, path, a.addr, cn.addr)
	waitFor(t, 10*time.Second, "the refresh to drop b", func() bool { return !slices.Contains(c.Nodes(), b.addr) })
	removed.Store(true)
	progress("calls after b was dropped", 300)

	d := startNode(t, "d")
	added := time.Now()
	writeNodeFile(t, path, a.addr, cn.addr, d.addr)
	// Bounded wait: the new node must see traffic (typically within one
	// 200ms interval; the bound is generous for a noisy machine).
	waitFor(t, 10*time.Second, "node d to receive traffic", func() bool { return d.calls.Load() >= 50 })
	t.Logf("node d got its first 50 calls %s after it was added to the file (refresh interval %s)", time.Since(added).Round(time.Millisecond), interval)
	aBefore, cBefore := a.calls.Load(), cn.calls.Load()
	progress("calls with d in the set", 300)
	stop()
	wg.Wait()

	t.Logf("churn: %d calls, %d failed (%d after b left the node list)", total.Load(), failed.Load(), failedAfterRemoval.Load())
	for _, err := range failures {
		t.Logf("failed call: %v", err)
		if !errors.Is(err, catalog.ErrUnavailable) {
			t.Errorf("a churn failure that is not ErrUnavailable: %v", err)
		}
	}
	if f := failed.Load(); f > workers {
		t.Errorf("%d calls failed; at most %d (one in flight per worker when b died) may", f, workers)
	}
	if f := failedAfterRemoval.Load(); f != 0 {
		t.Errorf("%d calls started after b left the node list failed, want 0", f)
	}
	if a.calls.Load() == aBefore || cn.calls.Load() == cBefore {
		t.Errorf("a and c must keep serving: a %d->%d, c %d->%d", aBefore, a.calls.Load(), cBefore, cn.calls.Load())
	}
}
