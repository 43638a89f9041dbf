package bidder

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/shading"
)

// trainShader teaches sh, at the exchange level of exchange 0, a landscape
// whose competition is at most 0.05 CPM: every first-price bid of that
// exchange is then shaded far below its value (to its floor where it has
// one).
func trainShader(t testing.TB, sh *shading.Shader, now time.Time) {
	t.Helper()
	if sh == nil {
		t.Fatal("no Shader")
	}
	id := shading.Segment(0, "training", shading.FormatBanner, 1, 1)
	start := now.Add(-time.Hour)
	for i := range 2000 {
		at := start.Add(time.Duration(i) * time.Second)
		price := int64(100_000 + i%50*10_000)
		sh.Bid(id, price, at)
		sh.Observe(id, price, at, true, int64(10_000+i%40*1000), true, at)
	}
	sh.Refresh(now)
}

// bidPrices are a response's bids by imp id: price and creative.
type bidPrice struct {
	price float64
	crid  string
	deal  string
}

func bidPrices(t *testing.T, f *fixture, body []byte) map[string]bidPrice {
	t.Helper()
	r := f.bid(body)
	out := map[string]bidPrice{}
	if r.status != 200 {
		return out
	}
	var resp openrtb2.BidResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	for _, sb := range resp.SeatBid {
		for _, b := range sb.Bid {
			out[b.ImpID] = bidPrice{b.Price, b.CrID, b.DealID}
		}
	}
	return out
}

// TestShadingOnlyFirstPrice: over the spec samples and the Prebid corpus
// (with a user that has products), as they are, with at 2, with at 1, and
// with every deal fixed-price (at 3) in an at 1 request: a bidder with a
// trained Shader bids exactly the prices of a bidder without one, except
// first-price bids of campaigns with bid_shading auto, which it shades
// (never above the value); with every campaign bid_shading: off it bids
// exactly the same prices as without a Shader.
func TestShadingOnlyFirstPrice(t *testing.T) {
	plain := newFixture(t, func(o *Options) { o.NBRBody = true })
	shadeOpts := func(o *Options) {
		o.NBRBody = true
		o.Shading = &shading.Options{Explore: -1, ExploreCold: -1}
	}
	shaded := newFixture(t, shadeOpts)
	offSet := loadCampaigns(t, "campaigns.yaml")
	for _, c := range offSet.All() {
		c.BidShading = campaign.ShadingOff
	}
	off := newFixture(t, func(o *Options) { shadeOpts(o); o.Campaigns = staticCampaigns{offSet} })
	now := time.Now()
	trainShader(t, shaded.b.Shader(), now)
	trainShader(t, off.b.Shader(), now)

	files, _ := filepath.Glob(filepath.Join(specDir, "request-*.json"))
	corpus, _ := filepath.Glob("/work/shared/openrtb/prebid-corpus/*.json")
	if len(corpus) == 0 {
		corpus, _ = filepath.Glob("../rtb/testdata/corpus/*.json")
	}
	files = append(files, corpus...)
	setAt := func(at int64, dealAt int64) func(m map[string]any) {
		return func(m map[string]any) {
			if at >= 0 {
				m["at"] = at
			}
			if dealAt < 0 {
				return
			}
			imps, _ := m["imp"].([]any)
			for _, imp := range imps {
				pmp, _ := imp.(map[string]any)["pmp"].(map[string]any)
				deals, _ := pmp["deals"].([]any)
				for _, d := range deals {
					d.(map[string]any)["at"] = dealAt
				}
			}
		}
	}
	variants := []struct {
		name       string
		at, dealAt int64 // -1: as it is
	}{{"as is", -1, -1}, {"at 2", 2, -1}, {"at 1", 1, -1}, {"at 1, deals at 3", 1, 3}}
	var total, firstPrice, lower int
	for _, file := range files {
		for _, v := range variants {
			body := editJSON(t, withUser(t, readFile(t, file), userBulk), setAt(v.at, v.dealAt))
			var req openrtb2.BidRequest
			if err := json.Unmarshal(body, &req); err != nil {
				continue // the corpus has requests our decoder refuses too
			}
			want := bidPrices(t, plain, body)
			got := bidPrices(t, shaded, body)
			gotOff := bidPrices(t, off, body)
			if len(got) != len(want) || len(gotOff) != len(want) {
				t.Errorf("%s, %s: %d bids shaded, %d with shading off, want %d", filepath.Base(file), v.name, len(got), len(gotOff), len(want))
				continue
			}
			for impID, w := range want {
				total++
				g, o := got[impID], gotOff[impID]
				if o != w {
					t.Errorf("%s, %s, imp %s: bid_shading off bid %+v, want %+v", filepath.Base(file), v.name, impID, o, w)
				}
				var imp *openrtb2.Imp
				for i := range req.Imp {
					if req.Imp[i].ID == impID {
						imp = &req.Imp[i]
					}
				}
				if g.crid != w.crid || g.deal != w.deal {
					t.Errorf("%s, %s, imp %s: bid %+v, want the creative and deal of %+v", filepath.Base(file), v.name, impID, g, w)
				}
				if imp == nil || auctionType(&req, imp, w.deal) != shading.FirstPrice {
					if g != w {
						t.Errorf("%s, %s, imp %s: not first price, bid %+v, want %+v", filepath.Base(file), v.name, impID, g, w)
					}
					continue
				}
				firstPrice++
				if g.price > w.price || g.price <= 0 || g.price < imp.BidFloor && (imp.BidFloorCur == "" || imp.BidFloorCur == "USD") {
					t.Errorf("%s, %s, imp %s: first price %v, want in [floor %v, value %v]", filepath.Base(file), v.name, impID, g.price, imp.BidFloor, w.price)
				}
				if g.price < w.price {
					lower++
				}
			}
		}
	}
	t.Logf("%d bids compared, %d first price, %d of them shaded below the value", total, firstPrice, lower)
	if firstPrice == 0 || lower < firstPrice/2 {
		t.Errorf("%d of %d first-price bids shaded, want at least half (a trained landscape far below every value)", lower, firstPrice)
	}
	// Test requests (test: 1) are not counted; the others are.
	if got := shaded.counter("rtbd_shading_bids_total", "how", "shaded"); got <= 0 || got > float64(lower) {
		t.Errorf("rtbd_shading_bids_total{how=shaded} = %v, want in (0, %d]", got, lower)
	}
	if got := plain.counter("rtbd_shading_bids_total", "how", "shaded"); got != 0 {
		t.Errorf("without a Shader: rtbd_shading_bids_total{how=shaded} = %v", got)
	}
}

func TestAuctionType(t *testing.T) {
	deals := &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "fixed", AT: 3}, {ID: "first", AT: 1}, {ID: "inherit"}}}
	imp := &openrtb2.Imp{PMP: deals}
	for _, tc := range []struct {
		at   int64
		deal string
		want shading.AuctionType
	}{
		{0, "", shading.SecondPrice},
		{1, "", shading.FirstPrice},
		{2, "", shading.SecondPrice},
		{1, "fixed", shading.FixedPrice},
		{2, "first", shading.FirstPrice},
		{1, "inherit", shading.FirstPrice},
		{2, "inherit", shading.SecondPrice},
		{1, "unknown", shading.FirstPrice},
		{7, "", shading.SecondPrice},
	} {
		if got := auctionType(&openrtb2.BidRequest{AT: tc.at}, imp, tc.deal); got != tc.want {
			t.Errorf("at %d deal %q: %d, want %d", tc.at, tc.deal, got, tc.want)
		}
	}
}

// TestShadingExplainAndView: /admin/debug/bid says how each price was set,
// and GET /admin/shading shows the segments with their curve.
func TestShadingExplainAndView(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Shading = &shading.Options{Explore: -1, ExploreCold: -1} })
	trainShader(t, f.b.Shader(), time.Now())
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	for _, tc := range []struct {
		at   int64
		want string
	}{{1, "shaded from "}, {2, "not shaded (second-price auction): the value "}} {
		ex := f.b.Explain(editJSON(t, body, func(m map[string]any) { m["at"] = tc.at }))
		found := false
		for _, ie := range ex.Imps {
			for _, c := range ie.Campaigns {
				if c.Decision == "bid" {
					found = true
					if !strings.HasPrefix(c.Shading, tc.want) || c.ValueMicros <= 0 || c.PriceMicros > c.ValueMicros {
						t.Errorf("at %d: %+v, want shading %q...", tc.at, c, tc.want)
					}
					if tc.at == 1 && (c.PriceMicros >= c.ValueMicros || !strings.Contains(c.Shading, "level exchange")) {
						t.Errorf("at 1: %+v, want a price below the value from the exchange's estimate", c)
					}
				}
			}
		}
		if !found {
			t.Fatalf("at %d: no bid in %+v", tc.at, ex)
		}
	}
	rec := httptest.NewRecorder()
	f.b.ShadingHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/admin/shading", nil))
	var view struct {
		Enabled  bool                  `json:"enabled"`
		Segments []shading.SegmentView `json:"segments"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &view); err != nil || !view.Enabled {
		t.Fatalf("/admin/shading: %v %s", err, rec.Body)
	}
	var exch *shading.SegmentView
	for i := range view.Segments {
		if view.Segments[i].Level == "exchange" {
			exch = &view.Segments[i]
		}
	}
	if exch == nil || exch.Exchange != DefaultExchange || exch.Source != "min_to_win" || len(exch.Curve) == 0 || exch.LastValue <= exch.LastPrice {
		t.Errorf("/admin/shading: exchange segment %+v", exch)
	}
	plain := newFixture(t, nil)
	rec = httptest.NewRecorder()
	plain.b.ShadingHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/admin/shading", nil))
	if got := strings.TrimSpace(rec.Body.String()); got != `{"enabled":false,"segments":[]}` {
		t.Errorf("without shading: %s", got)
	}
}
