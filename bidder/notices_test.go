package bidder

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/internal/clocktest"
	"github.com/rtbd/rtbd/rtb"
)

// moneyCampaigns is one campaign of group 1 (the bulk user's), 1.5 USD CPM,
// with the given budget and frequency-cap lines.
func moneyCampaigns(t testing.TB, extra string) *campaign.Set {
	t.Helper()
	y := readFile(t, filepath.Join("testdata", "money-campaign.yaml"))
	y = append(y, extra...)
	path := filepath.Join(t.TempDir(), "campaigns.yaml")
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := campaign.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// moneyFixture is a fixture whose bidder charges billing notices to a
// spend Writer over a real Pebble spend store.
type moneyFixture struct {
	*fixture
	clock *clocktest.Clock
	store *pebblestore.Store
	w     *spend.Writer
	bg    *spend.Budgets
}

var (
	priceEncKey = []byte("0123456789abcdef0123456789abcdef")
	priceIntKey = []byte("fedcba9876543210fedcba9876543210")
)

func newMoneyFixture(t *testing.T, set *campaign.Set, edits ...func(*Options)) *moneyFixture {
	t.Helper()
	store, err := pebblestore.Open(filepath.Join(t.TempDir(), "spend"), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	// A long interval: the test flushes by Close, so nothing reaches the
	// store behind its back.
	mf := newMoneyFixtureOn(t, set, store, time.Hour, edits...)
	mf.store = store
	return mf
}

// newMoneyFixtureOn is a money fixture over any spend store, flushing
// every interval.
func newMoneyFixtureOn(t *testing.T, set *campaign.Set, store spend.Store, interval time.Duration, edits ...func(*Options)) *moneyFixture {
	t.Helper()
	mf := &moneyFixture{clock: clocktest.New(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))}
	var err error
	mf.w, err = spend.NewWriter(store, spend.Options{FlushInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.w.Close(context.Background()) })
	mf.bg = spend.NewBudgets(mf.w, spend.BudgetOptions{})
	mf.fixture = newFixture(t, func(o *Options) {
		o.Campaigns = staticCampaigns{set}
		o.Spend, o.Budgets = mf.w, mf.bg
		o.Now = mf.clock.Now
		o.NBRBody = true
		o.PriceEncryptionKey, o.PriceIntegrityKey = priceEncKey, priceIntKey
		for _, e := range edits {
			e(o)
		}
	})
	return mf
}

type gotBid struct {
	nurl, burl string // paths (PublicURL stripped), ${AUCTION_PRICE} unfilled
	markup     string // the token of the creative's click links
	price      float64
	cid        string
}

// bidOnce sends the spec banner request for uid and returns its bid, or
// fails unless wantNBR (> 0) is the no-bid reason answered.
func (f *fixture) bidOnce(uid string, wantNBR rtb.NoBidReason) gotBid {
	f.t.Helper()
	f.seq++
	// A new request id each time (the replay key is the bid's nonce).
	r := f.bid(withUser(f.t, readFile(f.t, filepath.Join(specDir, "request-1-simple-banner.json")), uid,
		"id", "auction-"+strconv.Itoa(f.seq)))
	var resp struct {
		NBR     int `json:"nbr"`
		SeatBid []struct {
			Bid []struct {
				Price float64 `json:"price"`
				NURL  string  `json:"nurl"`
				BURL  string  `json:"burl"`
				CID   string  `json:"cid"`
				AdM   string  `json:"adm"`
			} `json:"bid"`
		} `json:"seatbid"`
	}
	if r.status != 200 {
		f.t.Fatalf("bid: status %d %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &resp); err != nil {
		f.t.Fatalf("bid: %v: %s", err, r.body)
	}
	if wantNBR > 0 {
		if len(resp.SeatBid) != 0 || resp.NBR != int(wantNBR) {
			f.t.Fatalf("bid: got %.300s, want a no-bid with nbr %d", r.body, wantNBR)
		}
		return gotBid{}
	}
	if len(resp.SeatBid) != 1 || len(resp.SeatBid[0].Bid) != 1 {
		f.t.Fatalf("bid: want one bid, got %s", r.body)
	}
	b := resp.SeatBid[0].Bid[0]
	strip := func(u string) string {
		p, ok := strings.CutPrefix(u, "https://bid.example.com")
		if !ok || !strings.HasSuffix(p, winMacros) {
			f.t.Fatalf("notice URL %q", u)
		}
		return p
	}
	m := markupToken.FindStringSubmatch(b.AdM)
	if m == nil {
		f.t.Fatalf("no click link in %.400s", b.AdM)
	}
	return gotBid{nurl: strip(b.NURL), burl: strip(b.BURL), markup: m[1], price: b.Price, cid: b.CID}
}

// notice fills the price macro of path with p and GETs it.
func (f *fixture) notice(path, p string) int {
	f.t.Helper()
	return f.do(fasthttp.MethodGet, strings.Replace(path, "${AUCTION_PRICE}", p, 1), nil).status
}

func (f *fixture) notices(kind, outcome string) float64 {
	return f.counter("rtbd_notices_total", "kind", kind, "outcome", outcome)
}

// TestNoticesEndToEnd: bid, win, bill with the price macro filled; spend and
// frequency exact in the Pebble store after the Writer's final flush;
// replay, forged, expired, over-price and bad prices rejected, counted and
// never charged; an encrypted price accepted; the campaign stops bidding
// (nbr 501) once its total budget is spent; /admin/campaigns says so.
func TestNoticesEndToEnd(t *testing.T) {
	// total budget 0.002 USD = 2000 micros; the two accepted bills below
	// charge 1235 + 1000.
	f := newMoneyFixture(t, moneyCampaigns(t, "    total_budget: 0.002\n    frequency_cap: {impressions: 5, period: 24h}\n"))
	start := f.clock.Now()

	b1 := f.bidOnce(userBulk, 0)
	if b1.price != 1.5 || b1.cid != "money" {
		t.Fatalf("bid price %v cid %q, want 1.5 money", b1.price, b1.cid)
	}
	if st := f.notice(b1.nurl, "1.2345"); st != 204 {
		t.Fatalf("win: status %d", st)
	}
	if st := f.notice(b1.burl, "1.2345"); st != 204 {
		t.Fatalf("bill: status %d", st)
	}
	// Replays of both: 204, not charged again.
	if st := f.notice(b1.burl, "1.2345"); st != 204 {
		t.Fatalf("bill replay: status %d", st)
	}
	if st := f.notice(b1.nurl, "1.2345"); st != 204 {
		t.Fatalf("win replay: status %d", st)
	}
	// The bid's markup token (its creative's click links) sent to /bill or
	// /win, a tampered token, no token: 400. The win token on /bill is the
	// same exchange token: a replay of the charged impression.
	if st := f.notice(strings.Replace(b1.nurl, PathWin, PathBill, 1), "1"); st != 204 {
		t.Fatalf("exchange token on /bill: status %d", st)
	}
	for _, path := range []string{PathBill, PathWin} {
		if st := f.notice(path+"?t="+b1.markup+"&p=${AUCTION_PRICE}", "1"); st != 400 {
			t.Fatalf("markup token on %s: status %d", path, st)
		}
	}
	i := strings.Index(b1.burl, "t=") + 10
	tampered := b1.burl[:i] + string(b1.burl[i]^1) + b1.burl[i+1:]
	if st := f.notice(tampered, "1"); st != 400 {
		t.Fatalf("tampered bill: status %d", st)
	}
	if st := f.notice(PathBill+"?p=1", "1"); st != 400 {
		t.Fatalf("bill without token: status %d", st)
	}

	b2 := f.bidOnce(userBulk, 0)
	// Bad prices: garbage, negative, a bad encrypted one. (A missing or
	// unfilled price is the bid price: TestEstimatedPrice.)
	for _, p := range []string{"abc", "-1", rtb.EncryptPrice(priceEncKey, priceEncKey, make([]byte, 16), 1000)} {
		path := strings.Replace(b2.burl, "${AUCTION_PRICE}", p, 1)
		if st := f.do(fasthttp.MethodGet, path, nil).status; st != 400 {
			t.Fatalf("bill with p=%q: status %d", p, st)
		}
	}
	// Over the bid price (1.5): rejected.
	if st := f.notice(b2.burl, "1.500001"); st != 400 {
		t.Fatalf("over-price bill: status %d", st)
	}
	// Expired: past notice_ttl (1h).
	f.clock.Add(time.Hour + 2*time.Second)
	if st := f.notice(b2.burl, "1"); st != 410 {
		t.Fatalf("expired bill: status %d, want 410", st)
	}
	f.clock.Add(-(time.Hour + 2*time.Second))
	// The same token, rejected before, is accepted with a good encrypted
	// price of 1.0 CPM (charge 1000 micros): a rejection is not remembered.
	enc := rtb.EncryptPrice(priceEncKey, priceIntKey, []byte("iv-0123456789abc"), 1_000_000)
	if st := f.notice(b2.burl, enc); st != 204 {
		t.Fatalf("encrypted-price bill: status %d", st)
	}

	for _, c := range []struct {
		kind, outcome string
		want          float64
	}{
		{"win", "accepted", 1}, {"win", "replay", 1}, {"win", "forged", 1},
		{"bill", "accepted", 2}, {"bill", "replay", 2},
		{"bill", "forged", 2}, {"bill", "bad_request", 1}, {"bill", "bad_price", 3},
		{"bill", "over_price", 1}, {"bill", "expired", 1},
	} {
		if got := f.notices(c.kind, c.outcome); got != c.want {
			t.Errorf("rtbd_notices_total{kind=%s,outcome=%s} = %v, want %v", c.kind, c.outcome, got, c.want)
		}
	}

	// 2235 micros >= the 2000 budget: no more bids (nbr 501).
	f.bidOnce(userBulk, rtb.NoBidBudgetExhausted)

	rec := httptest.NewRecorder()
	f.b.CampaignsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/admin/campaigns", nil))
	var st []CampaignStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || len(st) != 1 {
		t.Fatalf("/admin/campaigns: %v %s", err, rec.Body)
	}
	if s := st[0]; s.Campaign != "money" || s.TotalMicros != 2235 || s.Bidding || s.Reason != "total_budget" ||
		s.TotalBudgetMicros != 2000 || s.FreqCap != 5 || s.FreqPeriodText != "24h0m0s" {
		t.Errorf("/admin/campaigns: %+v", s)
	}

	// The final flush puts exactly the two charges in the store.
	ctx := context.Background()
	if err := f.w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	day := start.Format("2006-01-02")
	tot, err := f.store.Read(ctx, []string{"money"}, day)
	if err != nil || len(tot) != 1 {
		t.Fatalf("Read: %v %+v", err, tot)
	}
	if g := tot[0]; g.DayMicros != 2235 || g.TotalMicros != 2235 || g.DayImps != 2 || g.TotalImps != 2 {
		t.Errorf("stored spend %+v, want 2235 micros, 2 impressions", g)
	}
	win := start.Unix() - start.Unix()%86400
	n, err := f.store.FreqCount("money", userBulk, win, time.Unix(win+86400, 0).Add(spend.DefaultFreqGrace))
	if err != nil || n != 2 {
		t.Errorf("stored frequency of %s: %d, %v; want 2", userBulk, n, err)
	}
	// After Close, a valid bill is refused 503 (the SSP retries) and not
	// remembered as seen.
	now := f.clock.Now()
	tok, err := f.keys.Append(nil, &token.Token{Kind: token.KindBill, Issued: now, Expires: now.Add(time.Hour),
		Campaign: "money", Creative: "c", Auction: "late", Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	late := PathBill + "?t=" + string(tok) + "&p=${AUCTION_PRICE}"
	if st := f.notice(late, "1"); st != 503 {
		t.Errorf("bill after close: status %d, want 503", st)
	}
	if st := f.notice(late, "1"); st != 503 {
		t.Errorf("bill after close, again: status %d, want 503 (not a replay)", st)
	}
	if got := f.notices("bill", "unavailable"); got != 2 {
		t.Errorf("unavailable = %v, want 2", got)
	}
}

// TestFraudNoBid: a request from a blocked site domain gets the fraud
// list's nbr, before any lookup.
func TestFraudNoBid(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Fraud = fraudList{domain: "blocked.example"}; o.NBRBody = true })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	f.bidOnce(userBulk, 0)
	r := f.bid(withUser(t, body, "", "site", map[string]any{"id": "s1", "domain": "blocked.example"}))
	if r.status != 200 || !strings.Contains(string(r.body), `"nbr":7`) {
		t.Fatalf("blocked site: %d %s", r.status, r.body)
	}
}

// TestFrequencyCapStopsBidding: a cap of 1 per 24h; after one billed
// impression the user gets nbr 502, another user still gets bids.
func TestFrequencyCapStopsBidding(t *testing.T) {
	f := newMoneyFixture(t, moneyCampaigns(t, "    frequency_cap: {impressions: 1, period: 24h}\n"))
	b := f.bidOnce(userBulk, 0)
	if st := f.notice(b.burl, "0.5"); st != 204 {
		t.Fatalf("bill: status %d", st)
	}
	f.bidOnce(userBulk, rtb.NoBidFrequencyCapped)
	if got := f.bg.FreqCount(spend.FromCampaign(mustGet(t, f.opts.Campaigns.Current(), "money")), userBulk, f.clock.Now()); got != 1 {
		t.Errorf("FreqCount = %d, want 1", got)
	}
	// The next window (24h later, aligned to the epoch) bids again.
	f.clock.Add(24 * time.Hour)
	f.bidOnce(userBulk, 0)
}

func mustGet(t *testing.T, s *campaign.Set, id string) *campaign.Campaign {
	t.Helper()
	c, ok := s.Get(id)
	if !ok {
		t.Fatalf("no campaign %s", id)
	}
	return c
}

// fraudList is a TEST FraudChecker blocking one site domain (the real
// Lists sync from Redis; they are tested in package fraud).
type fraudList struct{ domain string }

func (l fraudList) Check(site, _, _, _, _ string) (bool, rtb.NoBidReason) {
	if site == l.domain {
		return true, rtb.NoBidBlockedPublisher
	}
	return false, 0
}

// FuzzNotice drives /win, /bill and /imp with arbitrary queries, seeded with real
// notice URLs (valid tokens with plain and encrypted prices, tampered
// ones): never a panic nor a 5xx; a 204 only for an authentic token (the
// fuzzer cannot forge one), and the campaign's spend only grows by what an
// accepted bill charges (at most the bid price / 1000).
func FuzzNotice(f *testing.F) {
	set := moneyCampaigns(f, "")
	store, err := pebblestore.Open(filepath.Join(f.TempDir(), "spend"), pebblestore.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	w, err := spend.NewWriter(store, spend.Options{FlushInterval: time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { w.Close(context.Background()) })
	bg := spend.NewBudgets(w, spend.BudgetOptions{})
	fx := newFixture(f, func(o *Options) {
		o.Campaigns = staticCampaigns{set}
		o.Spend, o.Budgets = w, bg
		o.PriceEncryptionKey, o.PriceIntegrityKey = priceEncKey, priceIntKey
	})
	now := time.Now()
	for i, kind := range []token.Kind{token.KindWin, token.KindBill, token.KindImp, token.KindImp} {
		tok, err := fx.keys.Append(nil, &token.Token{Kind: kind, Issued: now, Expires: now.Add(time.Hour),
			Campaign: "money", Creative: "c", Auction: "a" + strconv.Itoa(i), Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD",
			Billing: token.Billing(i % 3), Exchange: []string{"", "", "", "nowhere"}[i]})
		if err != nil {
			f.Fatal(err)
		}
		path := []string{PathWin, PathBill, PathImp, PathImp}[i]
		f.Add(path + "?t=" + string(tok))
		f.Add(path + "?t=" + string(tok) + "&p=${AUCTION_PRICE}")
		f.Add(path + "?t=" + string(tok) + "&p=1.2")
		f.Add(path + "?t=" + string(tok) + "&p=" + rtb.EncryptPrice(priceEncKey, priceIntKey, make([]byte, 16), 1_400_000))
		f.Add(path + "?t=" + string(tok) + "&p=9")
		f.Add(path + "?p=1&t=" + string(tok[:len(tok)-1]))
	}
	for i, test := range []bool{false, true} {
		tok, err := fx.keys.Append(nil, &token.Token{Kind: token.KindLoss, Issued: now, Expires: now.Add(time.Hour),
			Campaign: "money", Creative: "c", Auction: "l" + strconv.Itoa(i), Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD", Test: test})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(PathLoss + "?t=" + string(tok) + "&r=102&m=1.6")
		f.Add(PathLoss + "?t=" + string(tok) + "&r=${AUCTION_LOSS}&m=${AUCTION_MIN_TO_WIN}")
		bill, _ := fx.keys.Append(nil, &token.Token{Kind: token.KindBill, Issued: now, Expires: now.Add(time.Hour),
			Campaign: "money", Auction: "t" + strconv.Itoa(i), Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD", Test: true})
		f.Add(PathBill + "?t=" + string(bill) + "&p=1")
	}
	f.Add("/bill?t=&p=")
	f.Add("/loss?t=&r=99999999999999999999")
	f.Add("/win?t=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&p=${AUCTION_PRICE}")
	h := fx.b.Handler()
	cb := spend.FromCampaign(mustGetF(f, set, "money"))
	f.Fuzz(func(t *testing.T, uri string) {
		before := bg.Status(cb, now).TotalMicros
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod(fasthttp.MethodGet)
		rc.Request.SetRequestURI(uri)
		h(&rc)
		st := rc.Response.StatusCode()
		if st >= 500 {
			t.Fatalf("%q: status %d", uri, st)
		}
		charged := bg.Status(cb, now).TotalMicros - before
		if charged < 0 || charged > 1500 || (charged > 0 && st != 204) {
			t.Fatalf("%q: status %d, charged %d micros", uri, st, charged)
		}
	})
}

func mustGetF(tb testing.TB, s *campaign.Set, id string) *campaign.Campaign {
	c, ok := s.Get(id)
	if !ok {
		tb.Fatalf("no campaign %s", id)
	}
	return c
}

// swapCampaigns is a CampaignSource whose Set a test replaces (as the
// Watcher does on a reload).
type swapCampaigns struct{ p atomic.Pointer[campaign.Set] }

func (s *swapCampaigns) Current() *campaign.Set { return s.p.Load() }

// TestBudgetsFollowReload: the CampaignBudgets are cached per Set and
// rebuilt when a reload brings a new Set: raising an exhausted total
// budget makes the campaign bid again.
func TestBudgetsFollowReload(t *testing.T) {
	src := &swapCampaigns{}
	src.p.Store(moneyCampaigns(t, "    total_budget: 0.001\n"))
	f := newMoneyFixture(t, src.Current(), func(o *Options) { o.Campaigns = src })
	g := f.bidOnce(userBulk, 0)
	if st := f.notice(g.burl, "1.5"); st != 204 { // 1500 micros >= 1000
		t.Fatalf("bill: %d", st)
	}
	f.bidOnce(userBulk, rtb.NoBidBudgetExhausted)
	src.p.Store(moneyCampaigns(t, "    total_budget: 1\n"))
	f.bidOnce(userBulk, 0)
	if cb := f.b.budgetOf(src.Current(), mustGet(t, src.Current(), "money")); cb.TotalMicros != 1_000_000 {
		t.Errorf("budget cache not rebuilt for the new set")
	}
}

// TestNoticeOutcomeHeader: every /win and /bill answer names its outcome in
// X-Rtbd-Notice (a 204 alone cannot tell accepted from replay or from a
// bidder without a spend writer).
func TestNoticeOutcomeHeader(t *testing.T) {
	f := newMoneyFixture(t, moneyCampaigns(t, ""))
	b := f.bidOnce(userBulk, 0)
	get := func(path, p string) (int, string) {
		r := f.do(fasthttp.MethodGet, strings.Replace(path, "${AUCTION_PRICE}", p, 1), nil)
		return r.status, r.headers[HeaderNoticeOutcome]
	}
	for _, c := range []struct {
		name, path, price string
		status            int
		outcome           string
	}{
		{"win", b.nurl, "1.2", 204, "accepted"},
		{"win again", b.nurl, "1.2", 204, "replay"},
		{"bill over the bid price", b.burl, "9", 400, "over_price"},
		{"bill", b.burl, "1.2", 204, "accepted"},
		{"bill with a bad price", b.burl, "abc", 400, "bad_price"},
		{"forged", PathBill + "?t=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&p=1", "1", 400, "forged"},
	} {
		if st, out := get(c.path, c.price); st != c.status || out != c.outcome {
			t.Errorf("%s: %d %s=%q, want %d %q", c.name, st, HeaderNoticeOutcome, out, c.status, c.outcome)
		}
	}
	plain := newFixture(t, nil) // no spend writer
	if r := plain.do(fasthttp.MethodGet, "/win?t=x&p=1.2", nil); r.status != 204 || r.headers[HeaderNoticeOutcome] != "unhandled" {
		t.Errorf("without a spend writer: %d %q, want 204 unhandled", r.status, r.headers[HeaderNoticeOutcome])
	}
}
