package bidder

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb"
)

// bidURLs are the notice URLs of one bid, PublicURL stripped, macros
// unfilled, and markup, the token of the creative's click links.
type bidURLs struct{ nurl, burl, lurl, markup string }

// markupToken finds the bid's markup token in a creative's click links
// (/click/TOKEN/ or /click?t=TOKEN.).
var markupToken = regexp.MustCompile(`/click(?:/|\?t=)([A-Za-z0-9_-]+)[/.]`)

// bidNotices sends the spec banner request for userBulk (test: 1 when test)
// and returns its bid's notice URLs.
func (f *fixture) bidNotices(test bool) bidURLs {
	f.t.Helper()
	f.seq++
	edits := []any{"id", "auction-" + strconv.Itoa(f.seq)}
	if test {
		edits = append(edits, "test", 1)
	}
	r := f.bid(withUser(f.t, readFile(f.t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, edits...))
	var resp struct {
		SeatBid []struct {
			Bid []struct{ NURL, BURL, LURL, AdM string } `json:"bid"`
		} `json:"seatbid"`
	}
	if err := json.Unmarshal(r.body, &resp); err != nil || r.status != 200 || len(resp.SeatBid) != 1 || len(resp.SeatBid[0].Bid) != 1 {
		f.t.Fatalf("bid (test %v): want one bid, got %d %.400s (%v)", test, r.status, r.body, err)
	}
	b := resp.SeatBid[0].Bid[0]
	strip := func(u string) string {
		p, ok := strings.CutPrefix(u, "https://bid.example.com")
		if !ok {
			f.t.Fatalf("notice URL %q", u)
		}
		return p
	}
	m := markupToken.FindStringSubmatch(b.AdM)
	if m == nil {
		f.t.Fatalf("no click link in %.400s", b.AdM)
	}
	return bidURLs{nurl: strip(b.NURL), burl: strip(b.BURL), lurl: strip(b.LURL), markup: m[1]}
}

// get GETs path and returns the status and the notice outcome header.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	r := f.do(fasthttp.MethodGet, path, nil)
	return r.status, r.headers[HeaderNoticeOutcome]
}

// lossPath fills the lurl's macros.
func lossPath(lurl, reason, minToWin string) string {
	return strings.NewReplacer("${AUCTION_LOSS}", reason, "${AUCTION_MIN_TO_WIN}", minToWin).Replace(lurl)
}

// campaignStatus returns /admin/campaigns' entry for id.
func (f *moneyFixture) campaignStatus(id string) CampaignStatus {
	f.t.Helper()
	rec := httptest.NewRecorder()
	f.b.CampaignsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/admin/campaigns", nil))
	var st []CampaignStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		f.t.Fatalf("/admin/campaigns: %v %s", err, rec.Body)
	}
	for _, s := range st {
		if s.Campaign == id {
			return s
		}
	}
	f.t.Fatalf("/admin/campaigns has no %q: %s", id, rec.Body)
	return CampaignStatus{}
}

// TestLossNotices: every bid's lurl carries a loss token and the two loss
// macros; a loss notice per OpenRTB 2.6 reason code (and unknown,
// exchange-specific, missing and unfilled codes) is accepted and counted
// by reason in rtbd_loss_total and in the campaign's counters, in memory
// and, after a flush, in the store; a replay counts once; forged,
// wrong-kind and expired loss tokens are rejected and not counted;
// /admin/campaigns shows bids, wins, losses by reason and the win rate.
func TestLossNotices(t *testing.T) {
	f := newMoneyFixture(t, moneyCampaigns(t, ""))
	codes := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "100", "101", "102", "103", "104",
		"200", "201", "202", "203", "204", "205", "206", "207", "208", "209", "210", "211", "212", "213", "214", "215",
		"500", "1234", "999", "11", "", "${AUCTION_LOSS}", "abc", "-1"}
	want := map[string]float64{} // by label
	var first bidURLs
	for i, code := range codes {
		b := f.bidNotices(false)
		if i == 0 {
			first = b
			if !strings.HasPrefix(b.lurl, PathLoss+"?t=") || !strings.HasSuffix(b.lurl, "&r=${AUCTION_LOSS}&m=${AUCTION_MIN_TO_WIN}") {
				t.Fatalf("lurl %q", b.lurl)
			}
			var tok token.Token
			tstr := strings.TrimPrefix(strings.Split(b.lurl, "&")[0], PathLoss+"?t=")
			if _, err := f.keys.Parse(&tok, []byte(tstr), token.KindLoss, f.clock.Now(), nil); err != nil || tok.Campaign != "money" || tok.Test {
				t.Fatalf("lurl token: %+v, %v", tok, err)
			}
		}
		if st, out := f.get(lossPath(b.lurl, code, "1.23")); st != 204 || out != "accepted" {
			t.Fatalf("loss r=%q: %d %q, want 204 accepted", code, st, out)
		}
		n, err := strconv.ParseInt(code, 10, 64)
		label := rtb.LossOther.String()
		if err == nil {
			label = rtb.LossReasonOf(n).String()
		}
		want[label]++
	}
	// Every code of the specification has its own label.
	for _, code := range codes[:32] {
		n, _ := strconv.ParseInt(code, 10, 64)
		if l := rtb.LossReasonOf(n).String(); l == "other" || l == "exchange_specific" || want[l] != 1 {
			t.Errorf("code %s: label %q counted %v", code, l, want[l])
		}
	}
	if want["lost_to_higher_bid"] != 1 || want["below_auction_floor"] != 1 || want["exchange_specific"] != 3 || want["other"] != 5 {
		t.Fatalf("test table: %v", want)
	}
	losses := float64(len(codes))

	// A replay (same bid, even with another reason) counts once.
	for _, r := range []string{"0", "102"} {
		if st, out := f.get(lossPath(first.lurl, r, "")); st != 204 || out != "replay" {
			t.Errorf("replayed loss: %d %q, want 204 replay", st, out)
		}
	}
	// Forged: tampered, a win token on /loss, no token.
	b := f.bidNotices(false)
	i := strings.Index(b.lurl, "t=") + 10
	tampered := b.lurl[:i] + string(b.lurl[i]^1) + b.lurl[i+1:]
	for name, path := range map[string]string{
		"tampered":       lossPath(tampered, "102", "1"),
		"markup token":   PathLoss + "?t=" + b.markup + "&r=102",
		"garbage token":  PathLoss + "?t=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&r=102",
		"no token":       PathLoss + "?r=102",
		"method not GET": "",
	} {
		if name == "method not GET" {
			r := f.do(fasthttp.MethodPost, lossPath(b.lurl, "102", "1"), nil)
			if r.status != 405 || r.headers[HeaderNoticeOutcome] != "bad_request" {
				t.Errorf("POST /loss: %d %q", r.status, r.headers[HeaderNoticeOutcome])
			}
			continue
		}
		wantOut := "forged"
		if name == "no token" {
			wantOut = "bad_request"
		}
		if st, out := f.get(path); st != 400 || out != wantOut {
			t.Errorf("%s: %d %q, want 400 %q", name, st, out, wantOut)
		}
	}
	// Expired: past notice_ttl (1h); then, within it, the same token counts.
	f.clock.Add(time.Hour + 2*time.Second)
	if st, out := f.get(lossPath(b.lurl, "102", "1")); st != 410 || out != "expired" {
		t.Errorf("expired loss: %d %q, want 410 expired", st, out)
	}
	f.clock.Add(-(time.Hour + 2*time.Second))

	// Wins: a bid with both notices is one win, a bid with only its bill
	// another; b's loss above was never accepted.
	w1, w2 := f.bidNotices(false), f.bidNotices(false)
	for _, p := range []string{w1.nurl, w1.burl, w2.burl} {
		if st, out := f.get(strings.Replace(p, "${AUCTION_PRICE}", "1.2", 1)); st != 204 || out != "accepted" {
			t.Fatalf("%s: %d %q", p, st, out)
		}
	}
	bids := int64(len(codes)) + 3

	for label, n := range want {
		if got := f.counter("rtbd_loss_total", "reason", label); got != n {
			t.Errorf("rtbd_loss_total{reason=%s} = %v, want %v", label, got, n)
		}
	}
	for _, c := range []struct {
		outcome string
		want    float64
	}{{"accepted", losses}, {"replay", 2}, {"forged", 3}, {"bad_request", 2}, {"expired", 1}} {
		if got := f.notices("loss", c.outcome); got != c.want {
			t.Errorf("rtbd_notices_total{kind=loss,outcome=%s} = %v, want %v", c.outcome, got, c.want)
		}
	}

	check := func(when string) {
		t.Helper()
		s := f.campaignStatus("money")
		if s.Bids != bids || s.Wins != 2 || s.Losses != int64(losses) {
			t.Errorf("%s: /admin/campaigns bids %d wins %d losses %d, want %d 2 %v", when, s.Bids, s.Wins, s.Losses, bids, losses)
		}
		if wr := 2 / float64(bids); s.BidWinRate != wr {
			t.Errorf("%s: bid_win_rate %v, want %v", when, s.BidWinRate, wr)
		}
		if len(s.LossReasons) != len(want) {
			t.Errorf("%s: loss_reasons %v, want %v", when, s.LossReasons, want)
		}
		for label, n := range want {
			if s.LossReasons[label] != int64(n) {
				t.Errorf("%s: loss_reasons[%s] = %d, want %v", when, label, s.LossReasons[label], n)
			}
		}
	}
	check("before the flush")

	// The counters reach the store with the spend's flush, and the admin
	// view does not count them twice.
	ctx := context.Background()
	if err := f.w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check("after the flush")
	tot, err := f.store.Read(ctx, []string{"money"}, f.clock.Now().Format(time.DateOnly))
	if err != nil {
		t.Fatal(err)
	}
	c := tot[0].Counts
	if c[spend.CountBids] != bids || c[spend.CountWins] != 2 || c.Losses() != int64(losses) ||
		c[spend.CountLosses+int(rtb.LossReasonOf(102))] != 1 || c[spend.CountLosses+int(rtb.LossOther)] != 5 {
		t.Errorf("stored counters: bids %d wins %d losses %d, want %d 2 %v", c[spend.CountBids], c[spend.CountWins], c.Losses(), bids, losses)
	}
}

// TestTestTraffic: a test: 1 request bids even when its campaign is out of
// budget; its tokens carry the test bit; its win, billing and loss notices
// are verified and answered 204 with outcome test (a forged one is still
// refused); spend, impressions and frequency in the store, bids and wins
// are those of the real bid only.
func TestTestTraffic(t *testing.T) {
	// total budget 0.001 USD = 1000 micros: one real bill at 1.0 spends it.
	f := newMoneyFixture(t, moneyCampaigns(t, "    total_budget: 0.001\n    frequency_cap: {impressions: 5, period: 24h}\n"))
	start := f.clock.Now()
	real := f.bidNotices(false)
	if st, out := f.get(strings.Replace(real.burl, "${AUCTION_PRICE}", "1", 1)); st != 204 || out != "accepted" {
		t.Fatalf("real bill: %d %q", st, out)
	}
	f.bidOnce(userBulk, rtb.NoBidBudgetExhausted)

	test := f.bidNotices(true) // out of budget, and yet a bid
	for _, u := range []string{real.nurl, test.nurl, test.burl, test.lurl} {
		var tok token.Token
		q := strings.SplitN(u, "?t=", 2)[1]
		kind := map[string]token.Kind{PathWin: token.KindWin, PathBill: token.KindBill, PathLoss: token.KindLoss}[strings.SplitN(u, "?", 2)[0]]
		if _, err := f.keys.Parse(&tok, []byte(strings.SplitN(q, "&", 2)[0]), kind, f.clock.Now(), nil); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if tok.Test != (u != real.nurl) {
			t.Errorf("%s: token Test %v", u, tok.Test)
		}
	}
	for _, c := range []struct {
		name, path string
		status     int
		outcome    string
	}{
		{"test win", strings.Replace(test.nurl, "${AUCTION_PRICE}", "1.2", 1), 204, "test"},
		{"test bill", strings.Replace(test.burl, "${AUCTION_PRICE}", "1.2", 1), 204, "test"},
		{"test bill again", strings.Replace(test.burl, "${AUCTION_PRICE}", "1.2", 1), 204, "test"},
		{"test bill over its price", strings.Replace(test.burl, "${AUCTION_PRICE}", "9", 1), 400, "over_price"},
		{"test loss", lossPath(test.lurl, "102", "2"), 204, "test"},
		{"forged test bill", strings.Replace(test.burl, "t=", "t=A", 1), 400, "forged"},
	} {
		if st, out := f.get(c.path); st != c.status || out != c.outcome {
			t.Errorf("%s: %d %q, want %d %q", c.name, st, out, c.status, c.outcome)
		}
	}
	for _, c := range []struct {
		kind, outcome string
		want          float64
	}{{"win", "test", 1}, {"bill", "test", 2}, {"loss", "test", 1}, {"bill", "accepted", 1}, {"win", "accepted", 0}, {"loss", "accepted", 0}} {
		if got := f.notices(c.kind, c.outcome); got != c.want {
			t.Errorf("rtbd_notices_total{kind=%s,outcome=%s} = %v, want %v", c.kind, c.outcome, got, c.want)
		}
	}
	if got := f.counter("rtbd_loss_total", "reason", "lost_to_higher_bid"); got != 0 {
		t.Errorf("a test loss counted in rtbd_loss_total: %v", got)
	}
	if s := f.campaignStatus("money"); s.Bids != 1 || s.Wins != 1 || s.Losses != 0 || s.TotalMicros != 1000 {
		t.Errorf("/admin/campaigns: bids %d wins %d losses %d spend %d, want 1 1 0 1000", s.Bids, s.Wins, s.Losses, s.TotalMicros)
	}

	// Read back through the store: the real bill only.
	ctx := context.Background()
	if err := f.w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tot, err := f.store.Read(ctx, []string{"money"}, start.Format(time.DateOnly))
	if err != nil {
		t.Fatal(err)
	}
	if g := tot[0]; g.TotalMicros != 1000 || g.DayMicros != 1000 || g.TotalImps != 1 || g.Counts[spend.CountBids] != 1 || g.Counts[spend.CountWins] != 1 {
		t.Errorf("stored: %d micros, %d imps, %d bids, %d wins; want 1000, 1, 1, 1", g.TotalMicros, g.TotalImps, g.Counts[spend.CountBids], g.Counts[spend.CountWins])
	}
	win := start.Unix() - start.Unix()%86400
	if n, err := f.store.FreqCount("money", userBulk, win, time.Unix(win+86400, 0).Add(spend.DefaultFreqGrace)); err != nil || n != 1 {
		t.Errorf("stored frequency of %s: %d, %v; want 1 (the real bill)", userBulk, n, err)
	}
}
