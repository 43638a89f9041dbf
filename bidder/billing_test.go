package bidder

import (
	"context"
	"encoding/json"
	"html"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb"
)

// billingExchanges are one exchange per billing mode, named after it.
var billingExchanges = []Exchange{
	{Name: "burl", Billing: token.BillingBurl},
	{Name: "nurl", Billing: token.BillingNurl},
	{Name: "render", Billing: token.BillingRender},
}

// Native requests: 1.1 (no eventtrackers: the tracker is an imptrackers
// entry) and 1.2 listing an impression image tracker (an event tracker).
const (
	native11 = `{"ver":"1.1","assets":[{"id":1,"required":1,"title":{"len":90}},{"id":2,"required":1,"img":{"type":3}}]}`
	native12 = `{"ver":"1.2","assets":[{"id":1,"required":1,"title":{"len":90}},{"id":2,"required":1,"img":{"type":3}}],` +
		`"eventtrackers":[{"event":1,"methods":[1]}]}`
)

// billingImp returns the imp of a request in format: banner, native11,
// native12 or video.
func billingImp(format string) map[string]any {
	imp := map[string]any{"id": "1", "bidfloor": 0.03}
	switch format {
	case "banner":
		imp["banner"] = map[string]any{"w": 300, "h": 250}
	case "native11":
		imp["native"] = map[string]any{"request": native11, "ver": "1.1"}
	case "native12":
		imp["native"] = map[string]any{"request": native12, "ver": "1.2"}
	case "video":
		imp["video"] = map[string]any{"w": 640, "h": 480, "mimes": []string{"video/mp4"}, "minduration": 5, "maxduration": 30}
	}
	return imp
}

// billedBid is a bid's three notice paths (PublicURL stripped, price
// macros unfilled) and its markup.
type billedBid struct {
	nurl, burl, imp string
	adm             string
	mtype           openrtb2.MarkupType
}

var (
	vastImpression = regexp.MustCompile(`<Impression><!\[CDATA\[([^\]]*)\]\]></Impression>`)
	bannerPixel    = regexp.MustCompile(`<img src='(https://bid\.example\.com/imp\?[^']*)' width=1 height=1`)
)

// bidOn makes one bid of format to exchange and returns its notice paths,
// the impression tracker found in its markup.
func (f *fixture) bidOn(exchange, format string) billedBid {
	f.t.Helper()
	f.seq++
	body := withUser(f.t, readFile(f.t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk,
		"id", "auction-"+strconv.Itoa(f.seq), "imp", []any{billingImp(format)})
	r := f.do(fasthttp.MethodPost, PathBid+"/"+exchange, body, "Content-Type", "application/json")
	var resp openrtb2.BidResponse
	if r.status != 200 || json.Unmarshal(r.body, &resp) != nil || len(resp.SeatBid) != 1 || len(resp.SeatBid[0].Bid) != 1 {
		f.t.Fatalf("bid %s to %s: %d %s", format, exchange, r.status, r.body)
	}
	bid := resp.SeatBid[0].Bid[0]
	got := billedBid{adm: bid.AdM, mtype: bid.MType}
	const base = "https://bid.example.com"
	var tracker string
	switch bid.MType {
	case openrtb2.MarkupNative:
		var n struct {
			ImpTrackers   []string `json:"imptrackers"`
			EventTrackers []struct {
				Event, Method int
				URL           string
			} `json:"eventtrackers"`
		}
		if err := json.Unmarshal([]byte(bid.AdM), &n); err != nil {
			f.t.Fatalf("native adm: %v: %s", err, bid.AdM)
		}
		switch {
		case format == "native12" && len(n.EventTrackers) == 1 && n.EventTrackers[0].Event == 1 && n.EventTrackers[0].Method == 1 && len(n.ImpTrackers) == 0:
			tracker = n.EventTrackers[0].URL
		case format == "native11" && len(n.ImpTrackers) == 1 && len(n.EventTrackers) == 0:
			tracker = n.ImpTrackers[0]
		default:
			f.t.Fatalf("%s adm: want one impression tracker of its version: %s", format, bid.AdM)
		}
	case openrtb2.MarkupVideo:
		if m := vastImpression.FindAllStringSubmatch(bid.AdM, -1); len(m) == 1 {
			tracker = m[0][1]
		} else {
			f.t.Fatalf("VAST adm: want one <Impression>: %s", bid.AdM)
		}
	case openrtb2.MarkupBanner:
		if m := bannerPixel.FindStringSubmatch(bid.AdM); m != nil {
			tracker = html.UnescapeString(m[1])
		} else {
			f.t.Fatalf("banner adm: no impression pixel: %s", bid.AdM)
		}
	}
	for _, u := range []struct {
		dst            *string
		url            string
		prefix, suffix string
	}{{&got.nurl, bid.NURL, PathWin, winMacros}, {&got.burl, bid.BURL, PathBill, winMacros}, {&got.imp, tracker, PathImp, priceMacro}} {
		p, ok := strings.CutPrefix(u.url, base)
		if !ok || !strings.HasPrefix(p, u.prefix+"?t=") || !strings.HasSuffix(p, u.suffix) {
			f.t.Fatalf("%s notice URL %q", u.prefix, u.url)
		}
		*u.dst = p
	}
	return got
}

// fired is one notice of a bid: which path, the price filled in ("" leaves
// the macro as it is: a renderer knows no price) and the outcome wanted.
type fired struct {
	path, price, outcome string
}

func (f *fixture) fire(b billedBid, n fired) (status int, outcome string) {
	f.t.Helper()
	path := map[string]string{"win": b.nurl, "bill": b.burl, "imp": b.imp}[n.path]
	if n.price != "" {
		path = strings.Replace(path, "${AUCTION_PRICE}", n.price, 1)
	}
	r := f.do(fasthttp.MethodGet, path, nil)
	return r.status, r.headers[HeaderNoticeOutcome]
}

// storedSpend closes the fixture's Writer (its final flush) and returns
// the campaign's day spend and impressions in the store.
func (mf *moneyFixture) storedSpend(t *testing.T, day time.Time) (micros, imps int64) {
	t.Helper()
	ctx := context.Background()
	if err := mf.w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tot, err := mf.store.Read(ctx, []string{"money"}, day.Format("2006-01-02"))
	if err != nil || len(tot) != 1 {
		t.Fatalf("Read: %v %+v", err, tot)
	}
	return tot[0].DayMicros, tot[0].DayImps
}

func billingCampaigns(t *testing.T) *campaign.Set { return loadCampaigns(t, "billing-campaign.yaml") }

// TestBillingModes: for each billing mode and each format (banner with the
// pixel, native 1.1 and 1.2, video), the bid carries an impression
// tracker; firing its tracker, nurl and burl (and each again) charges the
// impression once, through the real handlers and a real spend Writer over
// a Pebble store: the first notice that charges in the exchange's mode
// sets the charge (a renderer's tracker, which has no price, charges the
// bid price: estimated_price), and no later one adjusts it.
func TestBillingModes(t *testing.T) {
	forward := []string{"imp", "win", "bill", "imp", "win", "bill"}
	backward := []string{"bill", "win", "imp", "bill", "win", "imp"}
	price := map[string]string{"imp": "", "win": "1.0", "bill": "1.2"}
	for _, c := range []struct {
		mode     string
		order    []string
		outcomes []string
		micros   int64 // charged: 1.5 CPM bid (estimated) 1500, win 1.0 -> 1000, bill 1.2 -> 1200
	}{
		{"burl", forward, []string{"accepted", "accepted", "accepted", "replay", "replay", "replay"}, 1200},
		{"nurl", forward, []string{"accepted", "accepted", "replay", "replay", "replay", "replay"}, 1000},
		{"render", forward, []string{"estimated_price", "accepted", "replay", "replay", "replay", "replay"}, 1500},
		{"burl", backward, []string{"accepted", "accepted", "accepted", "replay", "replay", "replay"}, 1200},
		{"nurl", backward, []string{"accepted", "replay", "accepted", "replay", "replay", "replay"}, 1200},
		{"render", backward, []string{"accepted", "accepted", "replay", "replay", "replay", "replay"}, 1200},
	} {
		for _, format := range []string{"banner", "native11", "native12", "video"} {
			name := c.mode + "/" + c.order[0] + "-first/" + format
			t.Run(name, func(t *testing.T) {
				f := newMoneyFixture(t, billingCampaigns(t), func(o *Options) {
					o.Exchanges = billingExchanges
					o.BannerImpPixel = true
				})
				start := f.clock.Now()
				b := f.bidOn(c.mode, format)
				for i, kind := range c.order {
					st, out := f.fire(b, fired{path: kind, price: price[kind]})
					if st != 204 || out != c.outcomes[i] {
						t.Errorf("notice %d (%s): %d %s, want 204 %s", i, kind, st, out, c.outcomes[i])
					}
				}
				if micros, imps := f.storedSpend(t, start); micros != c.micros || imps != 1 {
					t.Errorf("stored %d micros, %d impressions; want %d, 1", micros, imps, c.micros)
				}
			})
		}
	}
}

// TestBillingAcrossBidders: the tracker fired at one bidder and the burl
// at another of the same fleet (one spend store, the same token keys):
// the charge-once key (the bid's nonce) makes it one charge in the store.
func TestBillingAcrossBidders(t *testing.T) {
	store, err := pebblestore.Open(filepath.Join(t.TempDir(), "spend"), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	edit := func(o *Options) { o.Exchanges = billingExchanges }
	a := newMoneyFixtureOn(t, billingCampaigns(t), store, time.Hour, edit)
	b := newMoneyFixtureOn(t, billingCampaigns(t), store, time.Hour, edit)
	start := a.clock.Now()
	bid := a.bidOn("render", "native12")
	if _, out := a.fire(bid, fired{path: "imp"}); out != "estimated_price" {
		t.Fatalf("imp at a: %s", out)
	}
	if _, out := b.fire(bid, fired{path: "bill", price: "1.2"}); out != "accepted" {
		t.Fatalf("bill at b: %s", out) // b has not seen the charge: the store dedups
	}
	ctx := context.Background()
	for _, f := range []*moneyFixture{a, b} {
		if err := f.w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tot, err := store.Read(ctx, []string{"money"}, start.Format("2006-01-02"))
	if err != nil || len(tot) != 1 || tot[0].DayImps != 1 || tot[0].DayMicros != 1500 {
		t.Fatalf("stored %+v, %v; want one impression of 1500 micros (the first charge)", tot, err)
	}
}

// TestImpNotice: /imp is verified like /bill: forged, wrong kind, expired,
// over the bid price and bad prices are refused and counted under kind
// imp; an encrypted price decrypts with the exchange's own price keys
// (not the global ones); the global keys serve the default exchange.
func TestImpNotice(t *testing.T) {
	xEnc, xInt := []byte("exchange-enc-key-0123456789abcde"), []byte("exchange-int-key-0123456789abcde")
	f := newMoneyFixture(t, billingCampaigns(t), func(o *Options) {
		o.Exchanges = []Exchange{{Name: "render", Billing: token.BillingRender, PriceEncryptionKey: xEnc, PriceIntegrityKey: xInt}}
	})
	start := f.clock.Now()
	b := f.bidOn("render", "native11")
	globalEnc := rtb.EncryptPrice(priceEncKey, priceIntKey, []byte("iv-0123456789abc"), 1_000_000)
	exchangeEnc := rtb.EncryptPrice(xEnc, xInt, []byte("iv-0123456789abc"), 1_100_000)
	for _, c := range []struct {
		name, path, price string
		status            int
		outcome           string
	}{
		{"win token on /imp", strings.Replace(b.nurl, PathWin, PathImp, 1), "1", 400, "forged"},
		{"imp token on /bill", strings.Replace(b.imp, PathImp, PathBill, 1), "1", 400, "forged"},
		{"no token", PathImp + "?p=1", "", 400, "bad_request"},
		{"over the bid price", b.imp, "1.6", 400, "over_price"},
		{"garbage price", b.imp, "abc", 400, "bad_price"},
		{"the global keys' price", b.imp, globalEnc, 400, "bad_price"},
		{"the exchange's keys' price", b.imp, exchangeEnc, 204, "accepted"},
		{"again", b.imp, exchangeEnc, 204, "replay"},
	} {
		path := c.path
		if c.price != "" {
			path = strings.Replace(path, "${AUCTION_PRICE}", c.price, 1)
		}
		r := f.do(fasthttp.MethodGet, path, nil)
		if r.status != c.status || r.headers[HeaderNoticeOutcome] != c.outcome {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.headers[HeaderNoticeOutcome], c.status, c.outcome)
		}
	}
	if got := f.notices("imp", "bad_price"); got != 2 {
		t.Errorf(`rtbd_notices_total{kind="imp",outcome="bad_price"} = %v, want 2`, got)
	}
	// The default exchange's bids decrypt with the global keys.
	def := f.bidOnce(userBulk, 0)
	if st := f.notice(def.burl, globalEnc); st != 204 {
		t.Errorf("default exchange, global keys: %d", st)
	}
	f.clock.Add(time.Hour + 2*time.Second)
	b2 := f.bidOn("render", "video")
	f.clock.Add(time.Hour + 2*time.Second)
	if st, out := f.fire(b2, fired{path: "imp"}); st != 410 || out != "expired" {
		t.Errorf("expired imp: %d %s", st, out)
	}
	if micros, imps := f.storedSpend(t, start); micros != 1100+1000 || imps != 2 {
		t.Errorf("stored %d micros, %d impressions; want 2100, 2", micros, imps)
	}
}

// TestEstimatedPrice: a billing notice whose price is missing or still the
// macro charges the bid price, counted as estimated_price; a later notice
// with the real price does not adjust it.
func TestEstimatedPrice(t *testing.T) {
	f := newMoneyFixture(t, moneyCampaigns(t, ""))
	start := f.clock.Now()
	b1 := f.bidOnce(userBulk, 0)
	if st := f.notice(b1.burl, "${AUCTION_PRICE}"); st != 204 {
		t.Fatalf("unfilled macro: %d", st)
	}
	if st := f.notice(b1.burl, "1.2"); st != 204 {
		t.Fatalf("bill again with a price: %d", st)
	}
	b2 := f.bidOnce(userBulk, 0)
	if st := f.do(fasthttp.MethodGet, strings.TrimSuffix(b2.burl, winMacros), nil).status; st != 204 {
		t.Fatalf("no p: %d", st)
	}
	for _, c := range []struct {
		outcome string
		want    float64
	}{{"estimated_price", 2}, {"replay", 1}, {"bad_price", 0}, {"accepted", 0}} {
		if got := f.notices("bill", c.outcome); got != c.want {
			t.Errorf("bill %s = %v, want %v", c.outcome, got, c.want)
		}
	}
	if micros, imps := f.storedSpend(t, start); micros != 3000 || imps != 2 {
		t.Errorf("stored %d micros, %d impressions; want 3000 (two estimated 1.5 CPM), 2", micros, imps)
	}
}
