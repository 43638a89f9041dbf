package bidder

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/token"
)

// bidWithID bids on exchange with the request id id and imp id "1" and
// returns the bid's burl path (PublicURL stripped, price macro unfilled).
func (f *fixture) bidWithID(exchange, id string) string {
	f.t.Helper()
	body := withUser(f.t, readFile(f.t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk,
		"id", id, "imp", []any{billingImp("banner")})
	r := f.do(fasthttp.MethodPost, PathBid+"/"+exchange, body, "Content-Type", "application/json")
	var resp openrtb2.BidResponse
	if r.status != 200 || json.Unmarshal(r.body, &resp) != nil || len(resp.SeatBid) != 1 || len(resp.SeatBid[0].Bid) != 1 {
		f.t.Fatalf("bid %s to %s: %d %s", id, exchange, r.status, r.body)
	}
	p, ok := strings.CutPrefix(resp.SeatBid[0].Bid[0].BURL, "https://bid.example.com")
	if !ok || !strings.HasPrefix(p, PathBill+"?t=") {
		f.t.Fatalf("burl %q", resp.SeatBid[0].Bid[0].BURL)
	}
	return p
}

// TestReplayKeyIsTheBid: two bids with the same request id and imp id, on
// two exchanges, are two bids: both billed, both charged, and billing one
// (even at p=0, which charges nothing) never blocks the other; a replay of
// either is still a replay.
func TestReplayKeyIsTheBid(t *testing.T) {
	f := newMoneyFixture(t, billingCampaigns(t), func(o *Options) {
		o.Exchanges = []exchange.Exchange{{Name: "one", Billing: token.BillingBurl}, {Name: "two", Billing: token.BillingBurl}}
	})
	start := f.clock.Now()
	a := f.bidWithID("one", "same-request")
	b := f.bidWithID("two", "same-request")
	c := f.bidWithID("one", "same-request") // the same exchange reusing its ids
	for i, n := range []struct {
		path, price, want string
	}{
		{a, "0", "accepted"}, // a zero charge: must not pre-block the others
		{b, "1.2", "accepted"},
		{c, "1.0", "accepted"},
		{a, "1.2", "replay"},
		{b, "1.2", "replay"},
	} {
		r := f.do(fasthttp.MethodGet, strings.Replace(n.path, "${AUCTION_PRICE}", n.price, 1), nil)
		if got := r.headers[HeaderNoticeOutcome]; r.status != 204 || got != n.want {
			t.Errorf("bill %d: %d %s, want 204 %s", i, r.status, got, n.want)
		}
	}
	if micros, imps := f.storedSpend(t, start); micros != 2200 || imps != 3 {
		t.Errorf("stored %d micros, %d impressions; want 2200 (0 + 1200 + 1000), 3", micros, imps)
	}
}
