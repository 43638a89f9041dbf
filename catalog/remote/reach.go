package remote

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// reach follows the connectivity state of the Client's ClientConns: a
// ClientConn is READY while at least one of its nodes is connected and
// (health checking) serving, so the client can reach the catalog while any
// ClientConn is READY.
type reach struct {
	mu        sync.Mutex
	ready     []bool
	n         int       // ClientConns READY
	downSince time.Time // when n last became 0 (New, if never > 0); zero while n > 0

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newReach(conns int) *reach {
	return &reach{ready: make([]bool, conns), downSince: time.Now()}
}

// watch follows every ClientConn until stop.
func (r *reach) watch(conns []*grpc.ClientConn) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	for i, cc := range conns {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			st := cc.GetState()
			for {
				r.set(i, st == connectivity.Ready)
				if st == connectivity.Shutdown || !cc.WaitForStateChange(ctx, st) {
					return
				}
				st = cc.GetState()
			}
		}()
	}
}

func (r *reach) set(i int, ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready[i] == ready {
		return
	}
	r.ready[i] = ready
	if ready {
		r.n++
		r.downSince = time.Time{}
		return
	}
	r.n--
	if r.n == 0 {
		r.downSince = time.Now()
	}
}

func (r *reach) state() (reachable bool, downSince time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n > 0, r.downSince
}

// stop ends the watchers and waits for them.
func (r *reach) stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
}

// Reachable reports whether the client can reach at least one catalog
// node now: one of its connections is READY (connected, and serving by
// the node's health service). When none is, downSince is when the last one
// stopped being ready, or when New was called if none has been yet. It
// follows gRPC's connectivity state, so it needs no call to have failed:
// a node that goes away is noticed when its connections close (at once for
// a stopped process, after the keepalive timeout for a vanished host). Safe
// for concurrent use; cheap (a mutex, no I/O).
func (c *Client) Reachable() (reachable bool, downSince time.Time) {
	return c.reach.state()
}
