package spend_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
)

// memPebble is a real Pebble store on an in-memory file system.
func memPebble(t testing.TB) *pebblestore.Store {
	s, err := pebblestore.Open("spend", pebblestore.Options{FS: vfs.NewMem(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// countingStore is a TEST wrapper around a real store: it counts Flush and
// Read calls and the Flush calls in flight (and their maximum), can hold
// every Flush until released, and can fail flushes on demand.
type countingStore struct {
	inner spend.Store

	flushes, reads, failed atomic.Int64
	inflight, maxInflight  atomic.Int64

	mu       sync.Mutex
	hold     chan struct{} // non-nil: Flush waits for it to close
	failing  bool
	failedID map[string]bool // ids of deltas in failed flushes
	resent   int             // failed ids seen again
}

var errInjected = errors.New("countingStore: injected failure")

func newCounting(inner spend.Store) *countingStore {
	return &countingStore{inner: inner, failedID: map[string]bool{}}
}

func (c *countingStore) setFailing(v bool) {
	c.mu.Lock()
	c.failing = v
	c.mu.Unlock()
}

func (c *countingStore) holdFlushes() {
	c.mu.Lock()
	c.hold = make(chan struct{})
	c.mu.Unlock()
}

func (c *countingStore) release() {
	c.mu.Lock()
	if c.hold != nil {
		close(c.hold)
		c.hold = nil
	}
	c.mu.Unlock()
}

func (c *countingStore) Flush(ctx context.Context, d []spend.Delta) ([]spend.Total, error) {
	n := c.inflight.Add(1)
	defer c.inflight.Add(-1)
	for {
		m := c.maxInflight.Load()
		if n <= m || c.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	c.flushes.Add(1)
	c.mu.Lock()
	hold, failing := c.hold, c.failing
	for _, x := range d {
		if c.failedID[x.ID] {
			c.resent++
		}
	}
	if failing {
		for _, x := range d {
			c.failedID[x.ID] = true
		}
	}
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if failing {
		c.failed.Add(1)
		return nil, errInjected
	}
	return c.inner.Flush(ctx, d)
}

func (c *countingStore) Read(ctx context.Context, ids []string, day string) ([]spend.Total, error) {
	c.reads.Add(1)
	c.mu.Lock()
	failing := c.failing
	c.mu.Unlock()
	if failing {
		return nil, errInjected
	}
	return c.inner.Read(ctx, ids, day)
}

func readTotal(t testing.TB, s spend.Store, campaign, day string) spend.Total {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := s.Read(ctx, []string{campaign}, day)
	if err != nil {
		t.Fatal(err)
	}
	return r[0]
}

func closeWriter(t testing.TB, w *spend.Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
