package bidder

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
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
	if exch == nil || exch.Exchange != exchange.Default || exch.Source != "min_to_win" || len(exch.Curve) == 0 || exch.LastValue <= exch.LastPrice {
		t.Errorf("/admin/shading: exchange segment %+v", exch)
	}
	plain := newFixture(t, nil)
	rec = httptest.NewRecorder()
	plain.b.ShadingHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/admin/shading", nil))
	if got := strings.TrimSpace(rec.Body.String()); got != `{"enabled":false,"segments":[]}` {
		t.Errorf("without shading: %s", got)
	}
}

// shadedBid sends the spec banner request for userBulk with auction type at
// and returns its bid's price (CPM) and notice URLs (PublicURL stripped).
func shadedBid(mf *moneyFixture, at int) (float64, bidURLs) {
	t := mf.t
	t.Helper()
	mf.seq++
	r := mf.bid(withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk,
		"id", "shade-"+strconv.Itoa(mf.seq), "at", at))
	var resp openrtb2.BidResponse
	if err := json.Unmarshal(r.body, &resp); err != nil || r.status != 200 || len(resp.SeatBid) != 1 || len(resp.SeatBid[0].Bid) != 1 {
		t.Fatalf("bid: want one bid, got %d %.300s (%v)", r.status, r.body, err)
	}
	b := resp.SeatBid[0].Bid[0]
	strip := func(u string) string { return strings.TrimPrefix(u, "https://bid.example.com") }
	return b.Price, bidURLs{nurl: strip(b.NURL), burl: strip(b.BURL), lurl: strip(b.LURL)}
}

// TestShadingNotices: what notices teach the Shader. A first-price bid's
// charging notice (burl) is a win, its valid m a minimum bid to win; a
// loss with reason 102 is a loss, with its m when valid; a bad m (absent,
// the unfilled macro, not a price, negative, at or below the bid on a
// loss, above it on a win, absurd) is not used and is counted by why; a
// replay teaches nothing more, a forged notice nothing at all; other loss
// reasons, and second-price bids, teach nothing.
func TestShadingNotices(t *testing.T) {
	mf := newMoneyFixture(t, moneyCampaigns(t, ""), func(o *Options) {
		o.Shading = &shading.Options{Explore: -1, ExploreCold: -1}
		o.Exchanges = []exchange.Exchange{{Name: exchange.Default, LossNotices: true}}
	})
	observed := func(outcome string) float64 { return mf.counter("rtbd_shading_observations_total", "outcome", outcome) }
	mtw := func(result string) float64 { return mf.counter("rtbd_shading_min_to_win_total", "result", result) }
	minToWin := func() float64 {
		for _, v := range mf.b.Shader().Snapshot(nil) {
			if v.Level == "exchange" {
				return v.MinToWin
			}
		}
		return 0
	}
	fill := func(u, p, m string) string {
		return strings.NewReplacer("${AUCTION_PRICE}", p, "${AUCTION_MIN_TO_WIN}", m).Replace(u)
	}
	cpm := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

	// A win: burl with m below the price; the nurl (not charging under burl
	// billing) teaches nothing, a replay of the burl nothing more.
	price, b := shadedBid(mf, 1)
	for _, u := range []string{b.nurl, b.burl} {
		if !strings.HasSuffix(u, "&p=${AUCTION_PRICE}&m=${AUCTION_MIN_TO_WIN}") {
			t.Fatalf("notice URL %q lacks the price and min-to-win macros", u)
		}
	}
	if st, _ := mf.get(fill(b.nurl, cpm(price), cpm(price/2))); st != 204 {
		t.Fatalf("nurl: %d", st)
	}
	if observed("win") != 0 {
		t.Error("a non-charging nurl taught a win")
	}
	for range 2 {
		if st, _ := mf.get(fill(b.burl, cpm(price), cpm(price/2))); st != 204 {
			t.Fatalf("burl: %d", st)
		}
	}
	if observed("win") != 1 || mtw("ok") != 1 || minToWin() != 1 {
		t.Errorf("after a win and its replay: wins %v, m ok %v, m held %v; want 1, 1, 1", observed("win"), mtw("ok"), minToWin())
	}
	// A win whose m is above its price.
	price, b = shadedBid(mf, 1)
	mf.get(fill(b.burl, cpm(price), cpm(price+1)))
	if observed("win") != 2 || mtw("above_bid") != 1 || minToWin() != 1 {
		t.Errorf("a win with m above the price: wins %v, above_bid %v, m held %v", observed("win"), mtw("above_bid"), minToWin())
	}
	// Losses: reason 102 with a good m, then bad ones.
	price, b = shadedBid(mf, 1)
	if st, out := mf.get(lossPath(b.lurl, "102", cpm(price+0.5))); st != 204 || out != "accepted" {
		t.Fatalf("loss: %d %s", st, out)
	}
	mf.get(lossPath(b.lurl, "102", cpm(price+0.5))) // a replay
	if observed("loss") != 1 || mtw("ok") != 2 || minToWin() != 2 {
		t.Errorf("a loss and its replay: losses %v, m ok %v, m held %v; want 1, 2, 2", observed("loss"), mtw("ok"), minToWin())
	}
	for _, tc := range []struct{ m, result string }{
		{"", "absent"}, {"${AUCTION_MIN_TO_WIN}", "macro"}, {"NaN", "not_price"}, {"-1", "negative"},
		{"0.01", "below_bid"}, {"5000", "absurd"},
	} {
		_, b = shadedBid(mf, 1)
		mf.get(lossPath(b.lurl, "102", tc.m))
		if mtw(tc.result) != 1 {
			t.Errorf("m %q: %s counted %v times, want 1", tc.m, tc.result, mtw(tc.result))
		}
	}
	if observed("loss") != 7 || minToWin() != 2 {
		t.Errorf("after the bad m: losses %v, m held %v; want 7 (each still a loss) and 2", observed("loss"), minToWin())
	}
	// Another reason, a forged token, a second-price bid: nothing.
	price, b = shadedBid(mf, 1)
	mf.get(lossPath(b.lurl, "200", cpm(price+1)))
	forged := strings.Replace(lossPath(b.lurl, "102", cpm(price+1)), "t=", "t=A", 1)
	if st, out := mf.get(forged); st != 400 || out != "forged" {
		t.Errorf("forged: %d %s", st, out)
	}
	price, b = shadedBid(mf, 2)
	mf.get(lossPath(b.lurl, "102", cpm(price+1)))
	mf.get(fill(b.burl, cpm(price), cpm(price/2)))
	if observed("loss") != 7 || observed("win") != 2 || minToWin() != 2 {
		t.Errorf("other reasons, forged, second price: losses %v wins %v m held %v; want 7, 2, 2", observed("loss"), observed("win"), minToWin())
	}
}

// TestEvenPacingLowersPrice: a campaign with even pacing and a daily budget
// whose spend runs far ahead of its target bids a lower price, in every
// auction, instead of skipping auctions.
func TestEvenPacingLowersPrice(t *testing.T) {
	set := moneyCampaigns(t, "")
	for _, c := range set.All() {
		c.Pacing, c.DailyBudgetMicros = campaign.PacingEven, 10_000_000
	}
	mf := newMoneyFixture(t, set)
	p0, _ := shadedBid(mf, 2)
	p1, _ := shadedBid(mf, 2)
	if p0 != 1.5 || p1 != 1.5 {
		t.Fatalf("prices %v %v before any spend, want the value 1.5", p0, p1)
	}
	_ = mf.w.Add("money", "", 5_000_000, mf.clock.Now()) // half the day's budget at noon's first minute
	mf.clock.Add(time.Minute)
	p2, _ := shadedBid(mf, 2)
	if p2 >= 1.5 || p2 <= 1.5/10 {
		t.Errorf("price %v after spending far ahead of the target, want below the value 1.5 (and at least value/10)", p2)
	}
	st := mf.bg.Status(spend.FromCampaign(set.All()[0]), mf.clock.Now())
	if st.PacingMultiplier >= 1 || !st.Bidding {
		t.Errorf("status %+v, want a multiplier below 1 and bidding", st)
	}
}
