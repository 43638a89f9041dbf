package remote

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// The conformance suite holds through the near cache, whatever its size,
// through GetProductMasters and through the batch, and through the batch
// with the cache off.
func TestNearCacheConformance(t *testing.T) {
	v := ver(1, 0xA)
	nodes := []*productNode{
		startProductNode(t, catalogtest.Products(), v),
		startProductNode(t, catalogtest.Products(), v),
		startProductNode(t, catalogtest.Products(), v),
	}
	full := entrySize(len(catalog.AppendValue(nil, catalogtest.FullProduct())))
	for _, tc := range []struct {
		name  string
		bytes int64
	}{
		{"256MiB", 256 << 20},
		{"3 entries", 3 * full},
		{"300 bytes", 300},
		{"off", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := nearClient(t, tc.bytes, nil, nodes...)
			if tc.bytes > 0 {
				t.Run("GetProductMasters", func(t *testing.T) { catalogtest.Run(t, c) })
				if s := c.NearCacheStats(); s.Bytes > s.MaxBytes || s.Hits == 0 || s.Misses == 0 {
					t.Errorf("stats after the suite: %+v", s)
				}
			}
			t.Run("batch", func(t *testing.T) { catalogtest.Run(t, batchStore{c}) })
		})
	}
}

// A request whose products (and absences) are cached makes no call, and
// the same decoded product is handed out every time.
func TestNearCacheHitsMakeNoCall(t *testing.T) {
	n := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	reg := prometheus.NewRegistry()
	c := newTestClient(t, Options{Target: productTarget(n), NearCacheBytes: 1 << 20, Registerer: reg, CallTimeout: 20 * time.Second})
	r := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup,
		Product1QuantityAtMost: 3, Product1Ids: []int64{103, 999, 101},
		Product2QuantityAtMost: 4, Product2Ids: []int64{106, 105, 998, 104}}
	first, err := c.GetProductMasters(bgCtx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	if n.calls() != 1 {
		t.Fatalf("GetProducts calls = %d, want 1", n.calls())
	}
	want := []ncKey{{1122, 101}, {1122, 103}, {1122, 104}, {1122, 105}, {1122, 106}, {1122, 998}, {1122, 999}}
	if got := n.lastAsked(); !slices.Equal(got, want) {
		t.Fatalf("asked %v, want %v", got, want)
	}
	for range 5 {
		again, err := c.GetProductMasters(bgCtx(t), r)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Product1S) != 2 || again.Product1S[0] != first.Product1S[0] || again.Product2S[1] != first.Product2S[1] {
			t.Fatalf("cached answer differs or is not the same product: %v vs %v", again, first)
		}
	}
	if n.calls() != 1 {
		t.Fatalf("GetProducts calls = %d after cached requests, want 1", n.calls())
	}
	s := c.NearCacheStats()
	// 5 requests x 7 ids hit; 2 of the 7 (998, and 999 of another group)
	// are absences in group 1122: 2 x 5.
	if s.Hits != 35 || s.AbsentHits != 10 || s.Misses != 7 || s.Entries != 7 {
		t.Fatalf("stats = %+v, want 35 hits (10 absent), 7 misses, 7 entries", s)
	}
	if got := counterValue(t, reg, "rtbd_catalog_client_near_cache_lookups_total", "result", "hit_absent"); got != 10 {
		t.Errorf("hit_absent = %v, want 10", got)
	}
	if got := counterValue(t, reg, "rtbd_catalog_client_method_calls_total", "method", "GetProducts"); got != 1 {
		t.Errorf("GetProducts calls metric = %v, want 1", got)
	}
	if got := gaugeValue(t, reg, "rtbd_catalog_client_near_cache_entries"); got != 7 {
		t.Errorf("entries gauge = %v, want 7", got)
	}
	if s.HitRatio() != 35.0/42 {
		t.Errorf("hit ratio %v", s.HitRatio())
	}
}

// The batch asks one GetProducts call for every id missing across its
// requests (several groups), only for those, and splits at MaxIDs.
func TestBatchOneCall(t *testing.T) {
	n := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	c := newTestClient(t, Options{Target: productTarget(n), NearCacheBytes: 1 << 20, CallTimeout: 20 * time.Second, MaxIDs: 10})
	reqs := []*catalogpb.ProductMastersRequest{
		{ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 2, Product1Ids: []int64{101, 102, 103}},
		{ProductGroupId: catalogtest.BulkGroup, Product1QuantityAtMost: 5, Product1Ids: []int64{1, 2, 3}, Product2QuantityAtMost: 1, Product2Ids: []int64{10, 11}},
		{ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 1, Product1Ids: []int64{101, 104}},
	}
	resps := make([]*catalogpb.ProductMastersResponse, len(reqs))
	if err := c.GetProductMastersBatch(bgCtx(t), reqs, resps); err != nil {
		t.Fatal(err)
	}
	if n.calls() != 1 {
		t.Fatalf("GetProducts calls = %d, want 1", n.calls())
	}
	if got := len(n.lastAsked()); got != 9 { // 101..104 and 1,2,3,10,11: 101 once
		t.Fatalf("asked %d ids, want 9: %v", got, n.lastAsked())
	}
	check := func(resp *catalogpb.ProductMastersResponse, p1, p2 []int64) {
		t.Helper()
		if !sameProducts(resp.Product1S, p1) || !sameProducts(resp.Product2S, p2) {
			t.Fatalf("got %v / %v, want %v / %v", ids(resp.Product1S), ids(resp.Product2S), p1, p2)
		}
	}
	check(resps[0], []int64{101, 102}, nil)
	check(resps[1], []int64{1, 2, 3}, []int64{11})
	check(resps[2], []int64{101}, nil)

	// Reused responses, one new id: one call for it alone.
	reqs[2].Product1Ids = []int64{107, 101}
	if err := c.GetProductMastersBatch(bgCtx(t), reqs, resps); err != nil {
		t.Fatal(err)
	}
	if n.calls() != 2 || !slices.Equal(n.lastAsked(), []ncKey{{1122, 107}}) {
		t.Fatalf("calls %d, last asked %v; want 2, [1122/107]", n.calls(), n.lastAsked())
	}
	check(resps[2], []int64{107}, nil)

	// 25 new ids with MaxIDs 10: three calls of at most 10.
	var big []*catalogpb.ProductMastersRequest
	for i := range 5 {
		big = append(big, &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup, Product1QuantityAtMost: 5,
			Product1Ids: []int64{int64(100 + 5*i), int64(101 + 5*i), int64(102 + 5*i), int64(103 + 5*i), int64(104 + 5*i)}})
	}
	if err := c.GetProductMastersBatch(bgCtx(t), big, make([]*catalogpb.ProductMastersResponse, len(big))); err != nil {
		t.Fatal(err)
	}
	if n.calls() != 5 {
		t.Fatalf("GetProducts calls = %d, want 2 + 3", n.calls())
	}

	// An invalid request fails the batch, named, before any call.
	bad := []*catalogpb.ProductMastersRequest{reqs[0], {ProductGroupId: 0}}
	err := c.GetProductMastersBatch(bgCtx(t), bad, make([]*catalogpb.ProductMastersResponse, 2))
	if !errors.Is(err, catalog.ErrInvalidArgument) || n.calls() != 5 {
		t.Fatalf("err = %v (calls %d), want ErrInvalidArgument and no call", err, n.calls())
	}
	if err := c.GetProductMastersBatch(bgCtx(t), reqs, resps[:1]); !errors.Is(err, catalog.ErrInvalidArgument) {
		t.Fatalf("length mismatch: err = %v", err)
	}
}

func ids(ps []*catalogpb.Product) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.ProductId
	}
	return out
}

func sameProducts(ps []*catalogpb.Product, want []int64) bool { return slices.Equal(ids(ps), want) }

// The cache never counts more than its bytes, evicting to stay within.
func TestNearCacheBytesBound(t *testing.T) {
	n := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	for _, bytes := range []int64{500, 10_000, 3 << 20} {
		c := nearClient(t, bytes, nil, n)
		for from := int64(1); from <= 200; from += 20 {
			r := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup, Product1QuantityAtMost: 20}
			for id := from; id < from+20; id++ {
				r.Product1Ids = append(r.Product1Ids, id)
			}
			if _, err := c.GetProductMasters(bgCtx(t), r); err != nil {
				t.Fatal(err)
			}
			if s := c.NearCacheStats(); s.Bytes > s.MaxBytes || s.MaxBytes > bytes {
				t.Fatalf("bound %d: stats %+v", bytes, s)
			}
		}
		s := c.NearCacheStats()
		var counted int64
		for i := range c.near.shards {
			sh := &c.near.shards[i]
			sh.mu.Lock()
			for k, h := range sh.m {
				sl := &sh.slots[h.slot]
				counted += sl.size
				// The map cell's copy of the entry is the slot's.
				if !sl.used || sl.key != k || sl.expires != h.expires || sl.epoch != h.epoch {
					t.Fatalf("map cell of %v %+v differs from its slot (key %v, expires %d, epoch %d, used %v)", k, h, sl.key, sl.expires, sl.epoch, sl.used)
				}
			}
			sh.mu.Unlock()
		}
		t.Logf("bound %d: %+v", bytes, s)
		if counted != s.Bytes {
			t.Fatalf("entries add up to %d bytes, stats say %d", counted, s.Bytes)
		}
		if bytes < 1<<20 && s.Evictions == 0 {
			t.Fatalf("bound %d: no eviction after 200 products", bytes)
		}
		if bytes >= 1<<20 && s.Entries != 200 {
			t.Fatalf("bound %d: %d entries, want all 200", bytes, s.Entries)
		}
	}
}

// warmOnClock starts a node at version 1 and a near-cache client on a fake
// clock, and caches ids 1..ids of group 1 with one call.
func warmOnClock(t *testing.T, ids int64) (*productNode, *fakeClock, *Client) {
	t.Helper()
	n := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	clk := newFakeClock()
	c := nearClient(t, 1<<20, clk, n)
	if _, err := c.GetProductMasters(bgCtx(t), bulkReq(1, ids)); err != nil {
		t.Fatal(err)
	}
	return n, clk, c
}

// bulkReq asks for ids from..to of the bulk group.
func bulkReq(from, to int64) *catalogpb.ProductMastersRequest {
	r := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup, Product1QuantityAtMost: int32(to - from + 1)}
	for id := from; id <= to; id++ {
		r.Product1Ids = append(r.Product1Ids, id)
	}
	return r
}

// cachedValid counts keys of the bulk group ids from..to the cache would
// serve at its clock's now.
func cachedValid(c *Client, from, to int64) int {
	nc := c.near
	now, vs := nc.now(), nc.ver.Load()
	n := 0
	for id := from; id <= to; id++ {
		if _, ok := nc.get(ncKey{catalogtest.BulkGroup, id}, now, vs); ok {
			n++
		}
	}
	return n
}

// A newer version whose changes are a delta retires exactly the changed
// ids; the others stay, same decoded products.
func TestNearCacheDeltaRetiresOnlyChanged(t *testing.T) {
	ps := catalogtest.Products()
	n := startProductNode(t, ps, ver(1, 0xA))
	c := nearClient(t, 1<<20, nil, n)
	before, err := c.GetProductMasters(bgCtx(t), bulkReq(1, 9))
	if err != nil {
		t.Fatal(err)
	}
	// v2: product 5 renamed, product 7 deleted.
	var ps2 []*catalogpb.Product
	for _, p := range ps {
		if p.ProductGroupId == catalogtest.BulkGroup && p.ProductId == 7 {
			continue
		}
		if p.ProductGroupId == catalogtest.BulkGroup && p.ProductId == 5 {
			p = proto.Clone(p).(*catalogpb.Product)
			p.Title = "renamed"
		}
		ps2 = append(ps2, p)
	}
	n.set(ps2, ver(2, 0xB))
	n.setChanges(func(since *catalogpb.IndexVersion) (*catalogpb.ChangesResponse, error) {
		if since.GetContentHash() != 0xA {
			return &catalogpb.ChangesResponse{Version: ver(2, 0xB), Full: true}, nil
		}
		return &catalogpb.ChangesResponse{Version: ver(2, 0xB), Changed: []*catalogpb.ProductKeys{
			{ProductGroupId: catalogtest.BulkGroup, ProductIds: []int64{5, 7}}}}, nil
	})
	// A miss brings the v2 answer: served, not inserted, and it starts the move.
	if _, err := c.GetProductMasters(bgCtx(t), bulkReq(11, 11)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the delta", func() bool { return c.NearCacheStats().RetiredDelta == 2 })
	if vs := c.near.ver.Load(); vs.v.GetGeneration() != 2 || vs.epoch != 1 {
		t.Fatalf("version state %+v, want generation 2, epoch 1", vs)
	}
	calls := n.calls()
	after, err := c.GetProductMasters(bgCtx(t), bulkReq(1, 9))
	if err != nil {
		t.Fatal(err)
	}
	if n.calls() != calls+1 || !slices.Equal(n.lastAsked(), []ncKey{{1, 5}, {1, 7}}) {
		t.Fatalf("calls %d (was %d), asked %v; want one call for 5 and 7", n.calls(), calls, n.lastAsked())
	}
	if !sameProducts(after.Product1S, []int64{1, 2, 3, 4, 5, 6, 8, 9}) {
		t.Fatalf("after the delta: %v", ids(after.Product1S))
	}
	for i, p := range after.Product1S {
		switch p.ProductId {
		case 5:
			if p.Title != "renamed" {
				t.Fatalf("product 5 title %q", p.Title)
			}
		default:
			if p != before.Product1S[slices.IndexFunc(before.Product1S, func(q *catalogpb.Product) bool { return q.ProductId == p.ProductId })] {
				t.Fatalf("product %d (#%d) is not the same decoded product as before the delta", p.ProductId, i)
			}
		}
	}
	// Id 11, asked while the move was under way, is asked again now.
	calls = n.calls()
	for range 2 {
		if _, err := c.GetProductMasters(bgCtx(t), bulkReq(11, 11)); err != nil {
			t.Fatal(err)
		}
	}
	if n.calls() != calls+1 {
		t.Fatalf("id 11: %d calls, want 1 (then cached)", n.calls()-calls)
	}
}

// A full change retires every entry within the grace, gradually: not all
// at once, and none served past grace after the new version was seen.
// GetChanges failing (here: not implemented) counts as full.
func TestNearCacheFullChangeRetiresWithinGrace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes func(*catalogpb.IndexVersion) (*catalogpb.ChangesResponse, error)
	}{
		{"full", func(*catalogpb.IndexVersion) (*catalogpb.ChangesResponse, error) {
			return &catalogpb.ChangesResponse{Version: ver(2, 0xB), Full: true}, nil
		}},
		{"GetChanges fails", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const N = 200
			n, clk, c := warmOnClock(t, N)
			if got := cachedValid(c, 1, N); got != N {
				t.Fatalf("%d of %d cached", got, N)
			}
			n.set(catalogtest.Products(), ver(2, 0xB))
			n.setChanges(tc.changes)
			clk.advance(time.Second)
			seen := clk.now()
			// Absences are entries too: group 424242 id 1 is a miss that brings v2.
			if _, err := c.GetProductMasters(bgCtx(t), &catalogpb.ProductMastersRequest{ProductGroupId: 424242, Product1QuantityAtMost: 1, Product1Ids: []int64{1}}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 20*time.Second, "the new epoch", func() bool { return c.near.ver.Load().epoch == 2 })
			vs := c.near.ver.Load()
			if vs.retireAt[1] != seen || vs.v.GetContentHash() != 0xB {
				t.Fatalf("epoch 1 retires from %d, want %d (version %v)", vs.retireAt[1], seen, vs.v)
			}
			grace := time.Duration(c.near.grace)
			var counts []int
			for _, at := range []time.Duration{grace / 10, grace / 2, 9 * grace / 10, grace} {
				clk.ns.Store(seen + int64(at))
				counts = append(counts, cachedValid(c, 1, N))
			}
			t.Logf("valid entries at 10%%, 50%%, 90%%, 100%% of grace: %v", counts)
			if !(counts[0] > counts[1] && counts[1] > counts[2] && counts[0] < N && counts[2] > 0 && counts[3] == 0) {
				t.Fatalf("valid entries %v over the grace: want strictly falling, some left at 90%%, none at 100%%", counts)
			}
			if counts[1] < N/4 || counts[1] > 3*N/4 {
				t.Fatalf("half-way through the grace %d of %d valid: not spread evenly", counts[1], N)
			}
			// Now every id is a miss: one call, answers inserted at the new epoch.
			calls := n.calls()
			if _, err := c.GetProductMasters(bgCtx(t), bulkReq(1, N)); err != nil {
				t.Fatal(err)
			}
			if n.calls() != calls+1 || cachedValid(c, 1, N) != N {
				t.Fatalf("after grace: %d calls, %d valid", n.calls()-calls, cachedValid(c, 1, N))
			}
			if s := c.NearCacheStats(); s.RetiredEpoch < N {
				t.Fatalf("RetiredEpoch = %d, want >= %d", s.RetiredEpoch, N)
			}
		})
	}
}

// No entry is served past max age; expiries are spread, not in lockstep.
// (Refreshing ahead of expiry is off: the gets at 7/8 of max age would
// queue refreshes, TestNearCacheRefreshAhead's subject.)
func TestNearCacheMaxAge(t *testing.T) {
	const N = 200
	_, clk, c := warmOnClock(t, N)
	c.near.refreshAhead = 0
	start, maxAge := clk.now(), time.Duration(c.near.maxAge)
	var counts []int
	for _, at := range []time.Duration{maxAge / 2, 7 * maxAge / 8, maxAge} {
		clk.ns.Store(start + int64(at))
		counts = append(counts, cachedValid(c, 1, N))
	}
	t.Logf("valid entries at 50%%, 87.5%%, 100%% of max age: %v", counts)
	if counts[0] != N || counts[1] == 0 || counts[1] == N || counts[2] != 0 {
		t.Fatalf("valid %v: want all at half, some at 7/8, none at max age", counts)
	}
	if s := c.NearCacheStats(); s.RetiredMaxAge != N {
		t.Fatalf("RetiredMaxAge = %d, want %d", s.RetiredMaxAge, N)
	}
}

// A hit in the last eighth of an entry's max age queues its key, and the
// refresher replaces the entry from a node in the background: an entry in
// use never expires into a miss, while one no get asks for in that window
// still expires at its max age.
func TestNearCacheRefreshAhead(t *testing.T) {
	const N = 200
	n, clk, c := warmOnClock(t, N)
	start, maxAge := clk.now(), time.Duration(c.near.maxAge)
	calls := n.calls()

	// At 15/16 of max age, the entries still valid are all in their last
	// eighth: each hit queues its key.
	clk.ns.Store(start + int64(maxAge-maxAge/16))
	hot := cachedValid(c, 1, N)
	if hot == 0 || hot == N {
		t.Fatalf("%d of %d valid at 15/16 of max age: want some", hot, N)
	}
	// The refresher's answers come in the background; wait for them (a
	// bound, not a timing figure).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if refreshedEntries(c, start+int64(maxAge-maxAge/16)) == hot {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, %d of %d hit entries refreshed (node calls %d)", refreshedEntries(c, start+int64(maxAge-maxAge/16)), hot, n.calls()-calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := n.calls() - calls; d < 1 || d > int64(hot) {
		t.Fatalf("%d GetProducts calls for %d refreshes", d, hot)
	}

	// Past every original expiry: the refreshed entries are served, the
	// others (not hit in their window) are gone.
	clk.ns.Store(start + int64(maxAge+maxAge/2))
	if got := cachedValid(c, 1, N); got != hot {
		t.Fatalf("%d valid at 1.5 max age, want the %d refreshed", got, hot)
	}
	if s := c.NearCacheStats(); s.RetiredMaxAge != N-int64(hot) {
		t.Fatalf("RetiredMaxAge = %d, want the %d not refreshed", s.RetiredMaxAge, N-hot)
	}
}

// refreshedEntries counts the bulk group's entries inserted at or after
// at (unix ns), by their expiry: at least 3/4 of max age after at.
func refreshedEntries(c *Client, at int64) int {
	n := 0
	for i := range c.near.shards {
		s := &c.near.shards[i]
		s.mu.RLock()
		for k, h := range s.m {
			if k.g == catalogtest.BulkGroup && h.expires >= at+3*c.near.maxAge/4 {
				n++
			}
		}
		s.mu.RUnlock()
	}
	return n
}

// Answers from a node on an older version than the newest seen are served
// but not inserted (and start no move).
func TestNearCacheOlderVersionNotInserted(t *testing.T) {
	n := startProductNode(t, catalogtest.Products(), ver(5, 0xB))
	c := nearClient(t, 1<<20, nil, n)
	if _, err := c.GetProductMasters(bgCtx(t), bulkReq(1, 5)); err != nil {
		t.Fatal(err)
	}
	n.set(catalogtest.Products(), ver(4, 0xA)) // a node behind (rolling ingest)
	for range 3 {
		resp, err := c.GetProductMasters(bgCtx(t), bulkReq(6, 9))
		if err != nil {
			t.Fatal(err)
		}
		if !sameProducts(resp.Product1S, []int64{6, 7, 8, 9}) {
			t.Fatalf("older answer not served: %v", ids(resp.Product1S))
		}
	}
	if n.calls() != 4 {
		t.Fatalf("GetProducts calls = %d, want 1 + 3 (older answers are not cached)", n.calls())
	}
	if s := c.NearCacheStats(); s.Entries != 5 {
		t.Fatalf("entries = %d, want 5", s.Entries)
	}
	if _, err := c.GetProductMasters(bgCtx(t), bulkReq(1, 5)); err != nil || n.calls() != 4 {
		t.Fatalf("entries of the newest version: err %v, calls %d, want still cached", err, n.calls())
	}
	if n.changeCalls.Load() != 0 || c.near.ver.Load().v.GetGeneration() != 5 {
		t.Fatalf("an older answer started a move (%d GetChanges) or changed the version", n.changeCalls.Load())
	}
	// The same content under a later generation is the same content: cached.
	n.set(catalogtest.Products(), ver(9, 0xB))
	if _, err := c.GetProductMasters(bgCtx(t), bulkReq(6, 9)); err != nil {
		t.Fatal(err)
	}
	if s := c.NearCacheStats(); s.Entries != 9 || n.changeCalls.Load() != 0 {
		t.Fatalf("same hash, later generation: entries %d, GetChanges %d", s.Entries, n.changeCalls.Load())
	}
}

// A GetProducts attempt that times out on a stalled node is retried on
// another within the caller's deadline.
func TestGetProductsDeadlineRetry(t *testing.T) {
	good := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	stuck := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	reg := prometheus.NewRegistry()
	// (No version polls: they would take turns of the round-robin.)
	c := newTestClient(t, Options{Target: productTarget(good, stuck), NearCacheBytes: 1 << 20, ConnsPerNode: 1, Registerer: reg,
		VersionInterval: time.Hour})
	// Both nodes serve before one stalls (round-robin over READY nodes).
	id := int64(1)
	waitFor(t, 10*time.Second, "both nodes to serve", func() bool {
		if _, err := c.GetProductMasters(bgCtx(t), bulkReq(id, id)); err != nil {
			t.Fatal(err)
		}
		id++
		return good.calls() > 0 && stuck.calls() > 0
	})
	stuck.stall.Store(true)
	before := stuck.calls()
	for range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := c.GetProductMasters(ctx, bulkReq(id, id))
		cancel()
		if err != nil {
			t.Fatalf("id %d: %v", id, err)
		}
		if len(resp.Product1S) != 1 && id%10 != 0 {
			t.Fatalf("id %d: %v", id, ids(resp.Product1S))
		}
		id++
	}
	retries := findFamily(t, reg, "rtbd_catalog_client_deadline_retries_total").GetMetric()[0].GetCounter().GetValue()
	t.Logf("stalled node got %d calls, %v deadline retries", stuck.calls()-before, retries)
	if stuck.calls() == before {
		t.Fatal("the stalled node got no call: nothing was retried")
	}
}

// Concurrent requests, batches and version moves (delta and full) under
// -race, with a tiny cache: answers match the reference model throughout
// (the content does not change, only its version).
func TestNearCacheConcurrent(t *testing.T) {
	nodes := []*productNode{
		startProductNode(t, catalogtest.Products(), ver(1, 1)),
		startProductNode(t, catalogtest.Products(), ver(1, 1)),
	}
	for _, n := range nodes {
		n.setChanges(func(since *catalogpb.IndexVersion) (*catalogpb.ChangesResponse, error) {
			n.mu.Lock()
			v := n.version
			n.mu.Unlock()
			if v.Generation%2 == 0 {
				return &catalogpb.ChangesResponse{Version: v, Full: true}, nil
			}
			return &catalogpb.ChangesResponse{Version: v, Changed: []*catalogpb.ProductKeys{{ProductGroupId: catalogtest.BulkGroup, ProductIds: []int64{1, 2, 3}}}}, nil
		})
	}
	clk := newFakeClock()
	c := nearClient(t, 20_000, clk, nodes...)
	model := map[ncKey]*catalogpb.Product{}
	for _, p := range catalogtest.Products() {
		model[ncKey{p.ProductGroupId, p.ProductId}] = p
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { // versions move on; the clock runs
		defer bg.Done()
		for g := uint64(2); ; g++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			nodes[g%2].set(catalogtest.Products(), ver(g, g))
			clk.advance(5 * time.Second)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			resps := make([]*catalogpb.ProductMastersResponse, 3)
			for i := range 200 {
				reqs := make([]*catalogpb.ProductMastersRequest, 3)
				for j := range reqs {
					g := []int64{catalogtest.TalkGroup, catalogtest.BulkGroup, catalogtest.OtherGroup}[rng.IntN(3)]
					r := &catalogpb.ProductMastersRequest{ProductGroupId: g, Product1QuantityAtMost: int32(rng.IntN(8)), Product2QuantityAtMost: int32(rng.IntN(8))}
					for range rng.IntN(12) {
						r.Product1Ids = append(r.Product1Ids, int64(rng.IntN(220)-5))
						r.Product2Ids = append(r.Product2Ids, int64(100+rng.IntN(12)))
					}
					reqs[j] = r
				}
				var err error
				if i%2 == 0 {
					err = c.GetProductMastersBatch(bgCtx(t), reqs, resps)
				} else {
					for j, r := range reqs {
						if resps[j], err = c.GetProductMasters(bgCtx(t), r); err != nil {
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
				for j, r := range reqs {
					w1, w2 := modelAnswer(model, r)
					if !sameProducts(resps[j].Product1S, w1) || !sameProducts(resps[j].Product2S, w2) {
						errs <- fmt.Errorf("request %v: got %v / %v, want %v / %v", r, ids(resps[j].Product1S), ids(resps[j].Product2S), w1, w2)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s := c.NearCacheStats()
	t.Logf("stats %+v, version %v epoch %d", s, c.near.ver.Load().v, c.near.ver.Load().epoch)
	if s.Bytes > s.MaxBytes {
		t.Errorf("bytes %d over the bound %d", s.Bytes, s.MaxBytes)
	}
}

func modelAnswer(m map[ncKey]*catalogpb.Product, r *catalogpb.ProductMastersRequest) (p1, p2 []int64) {
	list := func(ids []int64, q int32) []int64 {
		out := []int64{}
		seen := map[int64]bool{}
		for _, id := range ids {
			if int32(len(out)) >= q {
				break
			}
			p := m[ncKey{r.ProductGroupId, id}]
			if p == nil || !p.InStock || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, id)
		}
		return out
	}
	return list(r.Product1Ids, r.Product1QuantityAtMost), list(r.Product2Ids, r.Product2QuantityAtMost)
}

// Nodes without GetProducts (older than the client): requests fall back to
// GetProductMasters, batches included.
func TestNearCacheFallsBackWithoutGetProducts(t *testing.T) {
	n := startNode(t, "old")
	c := newTestClient(t, Options{Target: staticTarget(n), NearCacheBytes: 1 << 20, CallTimeout: 20 * time.Second})
	name, err := call(c, groupOK)
	if err != nil || name != "old" {
		t.Fatalf("call: %q, %v", name, err)
	}
	resps := make([]*catalogpb.ProductMastersResponse, 2)
	if err := c.GetProductMastersBatch(bgCtx(t), []*catalogpb.ProductMastersRequest{req(groupOK), req(groupOK)}, resps); err != nil {
		t.Fatal(err)
	}
	if resps[1].Product1S[0].Title != "old" || n.calls.Load() != 3 {
		t.Fatalf("batch: %v, node calls %d", resps[1], n.calls.Load())
	}
	if !c.legacy() {
		t.Fatal("not in fallback")
	}
}

// A cache whose lookups all hit makes no GetProducts call, so no answer
// brings a new version: the version poll finds it and the delta retires
// the changed product without any lookup.
func TestVersionPollFollowsWithoutMisses(t *testing.T) {
	n := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	c := newTestClient(t, Options{Target: productTarget(n), NearCacheBytes: 1 << 20, CallTimeout: 20 * time.Second,
		MaxIDs: catalogtest.MaxIDs, VersionInterval: 20 * time.Millisecond})
	if _, err := c.GetProductMasters(bgCtx(t), bulkReq(1, 9)); err != nil {
		t.Fatal(err)
	}
	n.set(catalogtest.Products(), ver(2, 0xB))
	n.setChanges(func(since *catalogpb.IndexVersion) (*catalogpb.ChangesResponse, error) {
		if since.GetContentHash() == 0xB {
			return &catalogpb.ChangesResponse{Version: ver(2, 0xB)}, nil
		}
		return &catalogpb.ChangesResponse{Version: ver(2, 0xB), Changed: []*catalogpb.ProductKeys{
			{ProductGroupId: catalogtest.BulkGroup, ProductIds: []int64{3}}}}, nil
	})
	calls := n.calls()
	waitFor(t, 10*time.Second, "the polled delta", func() bool { return c.NearCacheStats().RetiredDelta == 1 })
	if g := c.near.ver.Load().v.GetGeneration(); g != 2 {
		t.Fatalf("generation %d after the poll, want 2", g)
	}
	if n.calls() != calls {
		t.Fatalf("GetProducts calls %d, want %d: the poll alone moved the cache", n.calls(), calls)
	}
}

// The similar lists a node's answer carries are cached: the next request
// for products like the same viewed ones is answered from the near cache,
// with the node's answer, without a call.
func TestNearCacheSimilarLists(t *testing.T) {
	n := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	c := newTestClient(t, Options{Target: productTarget(n), NearCacheBytes: 1 << 20, CallTimeout: 20 * time.Second})
	r := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup,
		Product1QuantityAtMost: 2, Product1Ids: []int64{101, 102},
		Product2QuantityAtMost: 10, SimilarToViewed: true}
	want := []int64{104, 103, 106}
	resps := []*catalogpb.ProductMastersResponse{nil}
	if err := c.GetProductMastersBatch(bgCtx(t), []*catalogpb.ProductMastersRequest{r}, resps); err != nil {
		t.Fatal(err)
	}
	if got := productIDs(resps[0].Product2S); !slices.Equal(got, want) {
		t.Fatalf("first answer %v, want %v", got, want)
	}
	if n.masterCalls.Load() != 1 {
		t.Fatalf("%d GetProductMasters calls, want 1 (the node resolves the lists)", n.masterCalls.Load())
	}
	// The products of the answer are not cached yet: the batch path asks
	// them with GetProducts, the lists come from the cache.
	if err := c.GetProductMastersBatch(bgCtx(t), []*catalogpb.ProductMastersRequest{r}, resps); err != nil {
		t.Fatal(err)
	}
	if got := productIDs(resps[0].Product2S); !slices.Equal(got, want) {
		t.Fatalf("second answer %v, want %v", got, want)
	}
	var cached catalogpb.ProductMastersResponse
	if !c.GetProductMastersCached(r, &cached) {
		t.Fatal("not answered from the near cache once lists and products are cached")
	}
	if got := productIDs(cached.Product2S); !slices.Equal(got, want) {
		t.Fatalf("cached answer %v, want %v", got, want)
	}
	if calls := n.masterCalls.Load(); calls != 1 {
		t.Errorf("%d GetProductMasters calls, want still 1", calls)
	}
	// Viewed products whose lists are not cached: the node again.
	r2 := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 1, Product1Ids: []int64{103},
		Product2QuantityAtMost: 3, SimilarToViewed: true}
	if c.GetProductMastersCached(r2, &cached) {
		t.Error("answered from the cache without the list of 103")
	}
}

func productIDs(ps []*catalogpb.Product) []int64 {
	var out []int64
	for _, p := range ps {
		out = append(out, p.ProductId)
	}
	return out
}
