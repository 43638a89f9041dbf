package bidder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/rtb"
)

// batchProducts is a TEST WRAPPER that makes a ProductStore a
// catalog.BatchGetter, as the remote client is one: each request of a batch
// is answered by the real store underneath. It counts the calls of both
// kinds; fail, when set, is the answer of every batch instead, and block
// makes every batch wait for its context to end.
type batchProducts struct {
	ProductStore
	batches, singles, lookups atomic.Int64
	fail                      error
	block                     bool
}

func (s *batchProducts) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	s.singles.Add(1)
	return s.ProductStore.GetProductMasters(ctx, req)
}

func (s *batchProducts) GetProductMastersBatch(ctx context.Context, reqs []*catalogpb.ProductMastersRequest, resps []*catalogpb.ProductMastersResponse) error {
	s.batches.Add(1)
	s.lookups.Add(int64(len(reqs)))
	if len(resps) != len(reqs) {
		return fmt.Errorf("%w: %d responses for %d requests", catalog.ErrInvalidArgument, len(resps), len(reqs))
	}
	if s.block {
		<-ctx.Done()
		return fmt.Errorf("%w: %w", catalog.ErrDeadline, ctx.Err())
	}
	if s.fail != nil {
		return s.fail
	}
	for i, r := range reqs {
		resp, err := s.ProductStore.GetProductMasters(ctx, r)
		if err != nil {
			return err
		}
		resps[i] = resp
	}
	return nil
}

// cachedProducts is a TEST WRAPPER that makes a batchProducts a
// catalog.CachedGetter whose cache holds the products of groups (it answers
// from the store underneath, without counting a call).
type cachedProducts struct {
	*batchProducts
	groups map[int64]bool
	hits   atomic.Int64
}

func (s *cachedProducts) GetProductMastersCached(req *catalogpb.ProductMastersRequest, resp *catalogpb.ProductMastersResponse) bool {
	if !s.groups[req.ProductGroupId] {
		return false
	}
	got, err := s.ProductStore.GetProductMasters(context.Background(), req)
	if err != nil {
		return false
	}
	s.hits.Add(1)
	resp.Product1S, resp.Product2S = append(resp.Product1S, got.Product1S...), append(resp.Product2S, got.Product2S...)
	return true
}

// countingProducts is a TEST WRAPPER that counts the lookups of a plain
// ProductStore (not a catalog.BatchGetter).
type countingProducts struct {
	ProductStore
	singles atomic.Int64
}

func (s *countingProducts) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	s.singles.Add(1)
	return s.ProductStore.GetProductMasters(ctx, req)
}

// userBatch has products of three groups; its group 1122 ids are not in
// the catalog, so a campaign of that group finds no products.
const userBatch = "user-batch"

// batchCampaigns: a different campaign wins each imp of batchRequest:
// 728x90 bulk-medium, 300x250 bulk-light, 160x600 full (after talk-gone,
// the best priced, finds no products).
const batchCampaigns = `campaigns:
  - id: bulk-medium
    advertiser: Example Shop
    adomain: [shop.example.com]
    product_group_id: 1
    status: active
    bid_cpm: 2
    creative: {template: medium, sizes: ["728x90"]}
  - id: bulk-light
    advertiser: Example Shop
    adomain: [shop.example.com]
    product_group_id: 1
    status: active
    bid_cpm: 1.5
    creative: {template: light, sizes: ["300x250"]}
  - id: talk-gone
    advertiser: Talk Shop
    adomain: [talk.example.com]
    product_group_id: 1122
    status: active
    bid_cpm: 3
    creative: {template: medium, sizes: ["160x600"]}
  - id: full
    advertiser: Full Shop
    adomain: [full.example.com]
    product_group_id: 2000
    status: active
    bid_cpm: 1
    creative: {template: light, sizes: ["160x600"]}
`

func campaignsFrom(t *testing.T, yaml string) *campaign.Set {
	t.Helper()
	path := filepath.Join(t.TempDir(), "campaigns.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := campaign.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// batchFixture is a fixture over batchCampaigns with userBatch stored,
// its catalog wrapped by wrap.
func batchFixture(t *testing.T, wrap func(ProductStore) ProductStore, edits ...func(*Options)) *fixture {
	t.Helper()
	set := campaignsFrom(t, batchCampaigns)
	f := newFixture(t, func(o *Options) {
		o.Products = wrap(o.Products)
		o.Campaigns = staticCampaigns{set}
		o.NBRBody = true
		for _, e := range edits {
			e(o)
		}
	})
	p := bulkProfile()
	p.Viewed = append(p.Viewed, user.GroupIDs{Group: catalogtest.TalkGroup, IDs: []int64{999_001, 999_002}})
	// Recommended in every group viewed: the lookups are resolved from
	// raw records, in one call (a group without Recommended is resolved by
	// the node from its similar lists, a call of its own).
	p.Recommended = append(p.Recommended, user.GroupIDs{Group: catalogtest.FullGroup, IDs: []int64{1}},
		user.GroupIDs{Group: catalogtest.TalkGroup, IDs: []int64{999_003}})
	if err := f.users.Put(context.Background(), userBatch, p); err != nil {
		t.Fatal(err)
	}
	return f
}

// batchRequest is a 3-imp request of userBatch: 728x90, 300x250, 160x600.
func batchRequest(t *testing.T, tmax int) []byte {
	t.Helper()
	banner := func(id string, w, h int) map[string]any {
		return map[string]any{"id": id, "banner": map[string]any{"w": w, "h": h}}
	}
	b, err := json.Marshal(map[string]any{
		"id":   "batch-1",
		"imp":  []any{banner("a", 728, 90), banner("b", 300, 250), banner("c", 160, 600)},
		"site": map[string]any{"domain": "news.example.com", "page": "https://news.example.com/a"},
		"user": map[string]any{"buyeruid": userBatch},
		"tmax": tmax,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bidSummary is what must not depend on how the catalog was asked: per
// imp, the campaign, creative, price, size and the number of products in
// the markup's click token (tokens and bid ids differ from run to run).
func bidSummary(t *testing.T, r reply) map[string]string {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %.300s", r.status, r.body)
	}
	var resp openrtb2.BidResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, sb := range resp.SeatBid {
		for _, b := range sb.Bid {
			out[b.ImpID] = fmt.Sprintf("%s %s %.6f %dx%d seat=%s", b.CID, b.CrID, b.Price, b.W, b.H, sb.Seat)
		}
	}
	return out
}

// explainImps is the debug endpoint's account of the imps, as JSON.
func explainImps(t *testing.T, f *fixture, body []byte) string {
	t.Helper()
	ex := f.b.Explain(body)
	out, err := json.Marshal(struct {
		Decision string
		NBR      int
		Imps     []*ImpExplain
	}{ex.Decision, ex.NBR, ex.Imps})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestBatchOneCall: with a catalog.BatchGetter, a 3-imp request whose imps
// want four lookups (three groups, two templates of one, one group without
// products) makes one batch call and no single lookup, and gets the bids,
// and the debug endpoint's account, of the same request through a plain
// ProductStore (one lookup per call, four calls). The catalog stage is
// observed once per request.
func TestBatchOneCall(t *testing.T) {
	var bp *batchProducts
	fb := batchFixture(t, func(p ProductStore) ProductStore { bp = &batchProducts{ProductStore: p}; return bp })
	var cp *countingProducts
	fp := batchFixture(t, func(p ProductStore) ProductStore { cp = &countingProducts{ProductStore: p}; return cp })
	body := batchRequest(t, 200)

	got := bidSummary(t, fb.bid(body))
	want := bidSummary(t, fp.bid(body))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batch store bids\n%v\nplain store bids\n%v", got, want)
	}
	if len(want) != 3 || want["a"][:12] != "bulk-medium " || want["b"][:11] != "bulk-light " || want["c"][:5] != "full " {
		t.Errorf("bids %v, want a: bulk-medium, b: bulk-light, c: full", want)
	}
	if n := bp.batches.Load(); n != 1 {
		t.Errorf("%d batch calls, want 1", n)
	}
	if n := bp.singles.Load(); n != 0 {
		t.Errorf("%d GetProductMasters calls beside the batch, want 0", n)
	}
	if n := bp.lookups.Load(); n != 4 {
		t.Errorf("the batch asked %d lookups, want 4", n)
	}
	if n := cp.singles.Load(); n != 4 {
		t.Errorf("the plain store was asked %d lookups, want 4", n)
	}
	if n := fb.counter("rtbd_bidder_stage_seconds", "stage", "catalog"); n != 1 {
		t.Errorf("catalog stage observed %v times for one request, want 1", n)
	}
	if n := fp.counter("rtbd_bidder_stage_seconds", "stage", "catalog"); n != 4 {
		t.Errorf("plain store: catalog stage observed %v times, want 4 (one per call)", n)
	}
	bidSummary(t, fb.bid(body))
	if n := fb.counter("rtbd_bidder_stage_seconds", "stage", "catalog"); n != 2 {
		t.Errorf("catalog stage observed %v times for two requests, want 2", n)
	}
	if n := bp.batches.Load(); n != 2 {
		t.Errorf("%d batch calls for two requests, want 2", n)
	}

	exB, exP := explainImps(t, fb, body), explainImps(t, fp, body)
	if exB != exP {
		t.Errorf("debug endpoint, batch store:\n%s\nplain store:\n%s", exB, exP)
	}
	if n := bp.singles.Load(); n != 0 {
		t.Errorf("the debug run made %d single lookups, want 0", n)
	}
}

// TestBatchErrors: a batch that fails, or misses the deadline, gives the
// no-bid reasons, the debug account and the metrics of the same failure
// through a plain ProductStore.
func TestBatchErrors(t *testing.T) {
	body := batchRequest(t, 200)
	nbrOf := func(r reply) int {
		var nb struct{ NBR int }
		if r.status != 200 || json.Unmarshal(r.body, &nb) != nil {
			t.Fatalf("status %d: %.300s", r.status, r.body)
		}
		return nb.NBR
	}

	t.Run("unavailable", func(t *testing.T) {
		var bp *batchProducts
		fb := batchFixture(t, func(p ProductStore) ProductStore {
			bp = &batchProducts{ProductStore: p, fail: fmt.Errorf("all nodes down: %w", catalog.ErrUnavailable)}
			return bp
		})
		fp := batchFixture(t, func(ProductStore) ProductStore { return failingProducts{} })
		if got, want := nbrOf(fb.bid(body)), nbrOf(fp.bid(body)); got != want || got != int(rtb.NoBidTechnicalError) {
			t.Errorf("batch store nbr %d, plain store nbr %d, want %d", got, want, rtb.NoBidTechnicalError)
		}
		if n := bp.batches.Load(); n != 1 {
			t.Errorf("%d batch calls, want 1", n)
		}
		if n := fb.counter("rtbd_bidder_catalog_errors_total", "kind", "unavailable"); n != 1 {
			t.Errorf("catalog_errors{unavailable} = %v, want 1 (one failed call)", n)
		}
		if n := fb.counter("rtbd_bidder_nobids_total", "nbr", "technical_error"); n != 1 {
			t.Errorf("nobids{technical_error} = %v, want 1", n)
		}
		if exB, exP := explainImps(t, fb, body), explainImps(t, fp, body); exB != exP {
			t.Errorf("debug endpoint, batch store:\n%s\nplain store:\n%s", exB, exP)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		var bp *batchProducts
		fb := batchFixture(t, func(p ProductStore) ProductStore { bp = &batchProducts{ProductStore: p, block: true}; return bp })
		fp := batchFixture(t, func(p ProductStore) ProductStore { return &slowProducts{ProductStore: p, delay: time.Minute} })
		short := batchRequest(t, 60)
		if got, want := nbrOf(fb.bid(short)), nbrOf(fp.bid(short)); got != want || got != int(rtb.NoBidDeadline) {
			t.Errorf("batch store nbr %d, plain store nbr %d, want %d", got, want, rtb.NoBidDeadline)
		}
		if n := bp.batches.Load(); n != 1 {
			t.Errorf("%d batch calls, want 1", n)
		}
		for _, f := range []*fixture{fb, fp} {
			if n := f.counter("rtbd_bidder_deadline_misses_total", "stage", "catalog"); n != 1 {
				t.Errorf("deadline_misses{catalog} = %v, want 1", n)
			}
			if n := f.counter("rtbd_bidder_catalog_errors_total", "kind", "deadline"); n != 1 {
				t.Errorf("catalog_errors{deadline} = %v, want 1", n)
			}
			if n := f.counter("rtbd_bidder_nobids_total", "nbr", "deadline"); n != 1 {
				t.Errorf("nobids{deadline} = %v, want 1", n)
			}
		}
		if exB, exP := explainImps(t, fb, short), explainImps(t, fp, short); exB != exP {
			t.Errorf("debug endpoint, batch store:\n%s\nplain store:\n%s", exB, exP)
		}
	})
}

// TestBatchPlainStore: a ProductStore that is not a catalog.BatchGetter is
// asked lookup by lookup as the auction reaches each candidate: the
// request's first imp's lookup only, when that imp is the only one.
func TestBatchPlainStore(t *testing.T) {
	var cp *countingProducts
	f := batchFixture(t, func(p ProductStore) ProductStore { cp = &countingProducts{ProductStore: p}; return cp })
	body := batchRequest(t, 200)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["imp"] = m["imp"].([]any)[:1]
	one, _ := json.Marshal(m)
	if got := bidSummary(t, f.bid(one)); len(got) != 1 || got["a"][:12] != "bulk-medium " {
		t.Errorf("bids %v, want a: bulk-medium", got)
	}
	if n := cp.singles.Load(); n != 1 {
		t.Errorf("%d lookups, want 1", n)
	}
}

// TestBatchBudgets: a campaign's bid on an earlier imp of the request
// counts in its exposure when a later imp is decided, as when each imp
// was looked up in turn: with a daily budget of one impression, "money"
// bids on the first imp only and the unbudgeted "money2" on the second;
// its products come with the same one batch call.
func TestBatchBudgets(t *testing.T) {
	set := moneyCampaigns(t, `    daily_budget: 0.0015
  - id: money2
    advertiser: Example Shop
    adomain: [shop.example.com]
    product_group_id: 1
    status: active
    bid_cpm: 1
    creative: {template: light, sizes: ["300x250", "728x90"]}
`)
	body := nativeBid(
		map[string]any{"id": "a", "banner": map[string]any{"w": 300, "h": 250}},
		map[string]any{"id": "b", "banner": map[string]any{"w": 728, "h": 90}},
	)
	var bp *batchProducts
	mb := newMoneyFixture(t, set, func(o *Options) { bp = &batchProducts{ProductStore: o.Products}; o.Products = bp })
	var cp *countingProducts
	mp := newMoneyFixture(t, set, func(o *Options) { cp = &countingProducts{ProductStore: o.Products}; o.Products = cp })
	got, want := bidSummary(t, mb.bid(body)), bidSummary(t, mp.bid(body))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batch store bids\n%v\nplain store bids\n%v", got, want)
	}
	if len(got) != 2 || got["a"][:6] != "money " || got["b"][:7] != "money2 " {
		t.Errorf("bids %v, want a: money, b: money2", got)
	}
	if b, s := bp.batches.Load(), bp.singles.Load(); b != 1 || s != 0 {
		t.Errorf("%d batch calls and %d single lookups, want 1 and 0", b, s)
	}
}

// The remote client is the batch store the bidder's one-call path uses.
var _ catalog.BatchGetter = (*remote.Client)(nil)

// TestRemoteOneCallPerRequest: the 3-imp request through the real remote
// client against a real catalog node over the same catalog, near cache off
// and on, makes one catalog call (the client's call counter and the node's
// request counters agree) and observes the catalog stage once; its bids
// are the local index's. With the near cache warm, a second request makes
// no call at all.
func TestRemoteOneCallPerRequest(t *testing.T) {
	addr := catalogtest.ServeLocal(t, catalogDir(), catalog.LocalOptions{WatchInterval: -1})
	body := batchRequest(t, 400)
	want := bidSummary(t, batchFixture(t, func(p ProductStore) ProductStore { return p }).bid(body))

	for _, near := range []int64{0, 1 << 20} {
		t.Run(fmt.Sprintf("near_cache_bytes=%d", near), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			rc := connectedClient(t, addr, near, reg)
			f := batchFixture(t, func(ProductStore) ProductStore { return rc })
			before := calls(reg)
			if got := bidSummary(t, f.bid(body)); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("remote bids\n%v\nlocal bids\n%v", got, want)
			}
			if n := calls(reg) - before; n != 1 {
				t.Errorf("a 3-imp request made %v catalog calls, want 1", n)
			}
			if n := f.counter("rtbd_bidder_stage_seconds", "stage", "catalog"); n != 1 {
				t.Errorf("catalog stage observed %v times for one request, want 1", n)
			}
			if near == 0 {
				return
			}
			before = calls(reg)
			if got := bidSummary(t, f.bid(body)); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("second request: remote bids\n%v\nlocal bids\n%v", got, want)
			}
			if n := calls(reg) - before; n != 0 {
				t.Errorf("a request whose products are all in the near cache made %v catalog calls, want 0", n)
			}
		})
	}
}

// connectedClient is a remote client of the node at addr with a near cache
// of near bytes, its metrics in reg, connected (its first call made).
func connectedClient(t *testing.T, addr string, near int64, reg *prometheus.Registry) *remote.Client {
	t.Helper()
	rc, err := remote.New(remote.Options{Target: "static:///" + addr, CallTimeout: 5 * time.Second,
		NearCacheBytes: near, Registerer: reg, VersionInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	if _, err := rc.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{ProductGroupId: 1}); err != nil {
		t.Fatal(err)
	}
	return rc
}

// calls is the catalog calls the remote client with its metrics in reg made.
func calls(reg *prometheus.Registry) float64 {
	var n float64
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "rtbd_catalog_client_calls_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestRemotePartlyCached: with the near cache holding the products of some
// of a request's lookups, the bidder answers those from the cache and asks
// the node once for all the others (the lookups of every imp still
// pending), and bids as on the local index; once all are cached, it asks
// nothing.
func TestRemotePartlyCached(t *testing.T) {
	addr := catalogtest.ServeLocal(t, catalogDir(), catalog.LocalOptions{WatchInterval: -1})
	reg := prometheus.NewRegistry()
	rc := connectedClient(t, addr, 1<<20, reg)
	f := batchFixture(t, func(ProductStore) ProductStore { return rc })
	full := batchRequest(t, 400)
	want := bidSummary(t, batchFixture(t, func(p ProductStore) ProductStore { return p }).bid(full))

	// Imp a alone: its lookup (group 1) is asked and cached.
	var one map[string]any
	if err := json.Unmarshal(full, &one); err != nil {
		t.Fatal(err)
	}
	one["imp"] = one["imp"].([]any)[:1]
	first, err := json.Marshal(one)
	if err != nil {
		t.Fatal(err)
	}
	before := calls(reg)
	if got := bidSummary(t, f.bid(first)); got["a"] != want["a"] {
		t.Errorf("imp a alone: bid %q, want %q", got["a"], want["a"])
	}
	if n := calls(reg) - before; n != 1 {
		t.Fatalf("imp a alone made %v catalog calls, want 1", n)
	}

	// All three: imps a and b (group 1) from the cache, c's lookups
	// (groups 1122 and 2000) in one call.
	for round, wantCalls := range []float64{1, 0} {
		before = calls(reg)
		if got := bidSummary(t, f.bid(full)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round %d: remote bids\n%v\nlocal bids\n%v", round, got, want)
		}
		if n := calls(reg) - before; n != wantCalls {
			t.Errorf("round %d: the 3-imp request made %v catalog calls, want %v", round, n, wantCalls)
		}
	}
}

// TestCachedStoreLookups: with a catalog.CachedGetter, the lookups its cache
// holds are answered from it, each as the auction reaches it; the first it
// lacks asks every lookup still pending in one batch (not those answered
// already), and the bids are those of a plain store.
func TestCachedStoreLookups(t *testing.T) {
	body := batchRequest(t, 200)
	plain := batchFixture(t, func(p ProductStore) ProductStore { return p })
	want := bidSummary(t, plain.bid(body))
	wantExplain := explainImps(t, plain, body)
	for _, tc := range []struct {
		name                 string
		groups               map[int64]bool
		fail                 bool // the batch fails: only the cached imps bid
		hits, batches, asked int64
	}{
		{"nothing cached", nil, false, 0, 1, 4},
		{"group 1 cached", map[int64]bool{1: true}, false, 2, 1, 2},
		{"all cached", map[int64]bool{1: true, catalogtest.TalkGroup: true, 2000: true}, false, 4, 0, 0},
		{"group 1 cached, nodes down", map[int64]bool{1: true}, true, 2, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cp *cachedProducts
			f := batchFixture(t, func(p ProductStore) ProductStore {
				cp = &cachedProducts{batchProducts: &batchProducts{ProductStore: p}, groups: tc.groups}
				if tc.fail {
					cp.fail = fmt.Errorf("%w: nodes down", catalog.ErrUnavailable)
				}
				return cp
			})
			want := want
			if tc.fail {
				want = map[string]string{"a": want["a"], "b": want["b"]}
			}
			if got := bidSummary(t, f.bid(body)); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("bids\n%v\nwant (plain store)\n%v", got, want)
			}
			if n := cp.hits.Load(); n != tc.hits {
				t.Errorf("%d lookups answered from the cache, want %d", n, tc.hits)
			}
			if n := cp.batches.Load(); n != tc.batches {
				t.Errorf("%d batch calls, want %d", n, tc.batches)
			}
			if n := cp.lookups.Load(); n != tc.asked {
				t.Errorf("the batch asked %d lookups, want %d", n, tc.asked)
			}
			if n := cp.singles.Load(); n != 0 {
				t.Errorf("%d GetProductMasters calls, want 0", n)
			}
			if !tc.fail {
				if got := explainImps(t, f, body); got != wantExplain {
					t.Errorf("debug endpoint:\n%s\nplain store:\n%s", got, wantExplain)
				}
			}
		})
	}
}
