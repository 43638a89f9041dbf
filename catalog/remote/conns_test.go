package remote

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Test 3: the number of TCP connections to each node is ConnsPerNode at
// every concurrency level: calls are multiplexed, connections do not grow.
func TestConnectionsStayFlat(t *testing.T) {
	const connsPerNode = 2
	nodes := startNodes(t, "a", "b", "c")
	c := newTestClient(t, Options{Target: staticTarget(nodes...), ConnsPerNode: connsPerNode})
	warmUp(t, c, nodes...)
	waitFor(t, 10*time.Second, "every node to have its connections", func() bool {
		for _, n := range nodes {
			if establishedTo(t, n.port) != connsPerNode {
				return false
			}
		}
		return true
	})

	for _, callers := range []int{1, 16, 64, 256} {
		for _, n := range nodes {
			n.maxIn.Store(0)
		}
		var calls, failed atomic.Int64
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					// groupSlow holds each call ~1ms on the node so that the
					// callers really are concurrent.
					if _, err := call(c, groupSlow); err != nil {
						failed.Add(1)
					}
					calls.Add(1)
				}
			}()
		}
		// Sample while the load runs (after it has started on every caller).
		waitFor(t, 20*time.Second, "load to start", func() bool { return calls.Load() >= int64(2*callers) })
		seen := make([][]int, len(nodes))
		for range 10 {
			for i, n := range nodes {
				seen[i] = append(seen[i], establishedTo(t, n.port))
			}
			time.Sleep(30 * time.Millisecond)
		}
		stop()
		wg.Wait()

		maxIn := int64(0)
		report := ""
		for i, n := range nodes {
			maxIn = max(maxIn, n.maxIn.Load())
			report += fmt.Sprintf(" %s=%v(max %d in flight)", n.name, seen[i], n.maxIn.Load())
			// Connections opened for load would stay for the whole run, so
			// no sample would show the configured count. A connection the
			// client replaces (a keepalive ping unanswered in time, a
			// transport reset) is for a while established beside its
			// replacement: one extra, and not in every sample.
			if slices.Min(seen[i]) != connsPerNode || slices.Max(seen[i]) > connsPerNode+1 {
				t.Errorf("%d callers: node %s had %v connections from the client, want %d", callers, n.name, seen[i], connsPerNode)
			}
		}
		t.Logf("%3d callers: %d calls, connections per node:%s", callers, calls.Load(), report)
		if failed.Load() != 0 {
			t.Errorf("%d callers: %d calls failed", callers, failed.Load())
		}
		// Show that the level really exceeded the connection count: more
		// calls in flight on one node than it has connections.
		if callers >= 64 && maxIn <= connsPerNode {
			t.Errorf("%d callers: at most %d calls in flight on a node; the test did not load the connections", callers, maxIn)
		}
	}
}
