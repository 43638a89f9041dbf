package remote

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// versionTracker follows the newest index version the nodes answer with
// and moves the near cache to it: one goroutine at a time asks a node
// GetChanges since the cache's version, then retires the changed ids (a
// delta) or starts a new epoch (full, or GetChanges failed).
type versionTracker struct {
	mu       sync.Mutex
	newest   *catalogpb.IndexVersion // newest version seen that differs from the cache's; nil: none
	seenAt   int64                   // when a version newer than the cache's was first seen (unix ns)
	running  bool
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopping bool
}

func (t *versionTracker) init() { t.ctx, t.cancel = context.WithCancel(context.Background()) }

func (t *versionTracker) stop() {
	t.mu.Lock()
	t.stopping = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}

// newer says whether a is a newer index content than b: a higher
// generation and another content hash (the same hash is the same content).
func newer(a, b *catalogpb.IndexVersion) bool {
	return a.GetGeneration() > b.GetGeneration() && a.GetContentHash() != b.GetContentHash()
}

// observe takes the version of an answer read at now and reports whether
// that answer may be inserted into the near cache: its content is the
// cache's. An answer from a newer content starts a move to it (in the
// background; the answer is served but not inserted); one from an older
// content (a node not yet on the newest, rolling ingest) is served only.
func (c *Client) observe(v *catalogpb.IndexVersion, now int64) bool {
	nc := c.near
	for {
		vs := nc.ver.Load()
		switch {
		case vs.v == nil: // the first answer: adopt its version
			if v == nil {
				v = &catalogpb.IndexVersion{}
			}
			if nc.ver.CompareAndSwap(vs, &verState{v: v, epoch: vs.epoch, retireAt: vs.retireAt}) {
				return true
			}
		case v.GetContentHash() == vs.v.GetContentHash():
			if v.GetGeneration() <= vs.v.GetGeneration() {
				return true
			}
			// Same content, later generation (a republish): remember it so
			// older generations order below it.
			if nc.ver.CompareAndSwap(vs, &verState{v: v, epoch: vs.epoch, retireAt: vs.retireAt}) {
				return true
			}
		case newer(v, vs.v):
			c.versionSeen(v, now)
			return false
		default:
			return false
		}
	}
}

func (c *Client) versionSeen(v *catalogpb.IndexVersion, now int64) {
	t := &c.vt
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.newest == nil || v.GetGeneration() > t.newest.GetGeneration() {
		t.newest = v
	}
	if t.seenAt == 0 {
		t.seenAt = now
	}
	if t.running || t.stopping {
		return
	}
	t.running = true
	t.wg.Add(1)
	go c.follow()
}

// changesAttempts is how many GetChanges calls a move tries before it
// treats the change as full (a node still on the old content answers
// "no change"; round-robin then asks another).
const changesAttempts = 5

// follow moves the cache to the newest version seen, until it is there.
func (c *Client) follow() {
	t := &c.vt
	defer t.wg.Done()
	nc := c.near
	for {
		t.mu.Lock()
		vs := nc.ver.Load()
		target, seenAt := t.newest, t.seenAt
		if target == nil || !newer(target, vs.v) || t.stopping {
			t.newest, t.seenAt, t.running = nil, 0, false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()

		resp := c.changesSince(vs.v)
		var applied *catalogpb.IndexVersion
		switch {
		case resp == nil:
			applied = target
			c.applyFull(target, seenAt)
		case resp.GetFull():
			applied = resp.GetVersion()
			c.applyFull(applied, seenAt)
		default:
			applied = resp.GetVersion()
			c.applyDelta(applied, resp.GetChanged())
		}
		t.mu.Lock()
		if t.newest != nil && newer(t.newest, applied) {
			// An even newer version was seen meanwhile: its changes are
			// asked next; its first sighting is not known apart from the
			// one just applied, so it counts from now at the latest.
			t.seenAt = max(t.seenAt, nc.now())
		} else {
			t.newest, t.seenAt = nil, 0
		}
		t.mu.Unlock()
	}
}

// changesSince asks nodes for the changes since v until one answers from a
// newer content; nil when none did within changesAttempts calls.
func (c *Client) changesSince(v *catalogpb.IndexVersion) *catalogpb.ChangesResponse {
	// Each attempt is short enough that all of them fit in half the grace.
	timeout := min(max(4*c.callTimeout, 200*time.Millisecond), time.Duration(c.near.grace)/(2*changesAttempts))
	for range changesAttempts {
		if c.closed.Load() || c.hub.zeroNodes() {
			return nil
		}
		ctx, cancel := context.WithTimeout(c.vt.ctx, timeout)
		resp := new(catalogpb.ChangesResponse)
		err := c.invoke(ctx, methodGetChanges, catalogpb.Catalog_GetChanges_FullMethodName,
			&catalogpb.ChangesRequest{Since: v}, resp)
		cancel()
		if err != nil {
			c.log.Warn("catalog GetChanges failed", zap.Error(err))
			if status.Code(err) == codes.Unimplemented {
				return nil
			}
			continue
		}
		if newer(resp.GetVersion(), v) {
			return resp
		}
	}
	return nil
}

// applyFull moves the cache to v with a new epoch: entries of the old one
// retire at seenAt plus their offset within the grace period.
func (c *Client) applyFull(v *catalogpb.IndexVersion, seenAt int64) {
	nc := c.near
	for {
		vs := nc.ver.Load()
		ns := &verState{v: v, epoch: vs.epoch + 1, retireAt: vs.retireAt}
		ns.retireAt[vs.epoch%epochRing] = seenAt
		if nc.ver.CompareAndSwap(vs, ns) {
			break
		}
	}
	c.m.change(true)
	c.log.Info("catalog index changed wholesale: near cache retiring over the grace period",
		zap.Uint64("generation", v.GetGeneration()), zap.Duration("grace", time.Duration(nc.grace)))
}

// applyDelta moves the cache to v in the same epoch and retires exactly the
// changed products. The version is switched first, so that an answer of
// the older content inserted meanwhile is dropped here too (put checks the
// version under the shard lock that drop takes).
func (c *Client) applyDelta(v *catalogpb.IndexVersion, changed []*catalogpb.ProductKeys) {
	nc := c.near
	for {
		vs := nc.ver.Load()
		if nc.ver.CompareAndSwap(vs, &verState{v: v, epoch: vs.epoch, retireAt: vs.retireAt}) {
			break
		}
	}
	n := 0
	for _, pk := range changed {
		for _, id := range pk.GetProductIds() {
			nc.drop(ncKey{pk.GetProductGroupId(), id})
			n++
		}
	}
	c.m.change(false)
	c.log.Info("catalog index changed: near cache retired the changed products",
		zap.Uint64("generation", v.GetGeneration()), zap.Int("changed", n))
}

// pollVersions asks a node, every interval, for the changes since the
// cache's version, and follows a newer version it answers with as any
// answer's (observe): without it a cache whose lookups all hit would never
// see a new index until its entries reach their max age.
func (c *Client) pollVersions(interval time.Duration) {
	defer c.vt.wg.Done()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-c.vt.ctx.Done():
			return
		case <-tick.C:
		}
		vs := c.near.ver.Load()
		if vs.v == nil || c.closed.Load() || c.hub.zeroNodes() {
			continue // no answer yet: the first one sets the version
		}
		ctx, cancel := context.WithTimeout(c.vt.ctx, max(4*c.callTimeout, 200*time.Millisecond))
		resp := new(catalogpb.ChangesResponse)
		err := c.invoke(ctx, methodGetChanges, catalogpb.Catalog_GetChanges_FullMethodName,
			&catalogpb.ChangesRequest{Since: vs.v}, resp)
		cancel()
		if err == nil {
			c.observe(resp.GetVersion(), c.near.now())
		}
	}
}
