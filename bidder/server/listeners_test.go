package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/internal/netfaulttest"
)

// clientFrom is an HTTP client whose connections come from the loopback
// address src, one connection per request.
func clientFrom(src string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// do sends one request with c and returns the status and body.
func doWith(t *testing.T, c *http.Client, method, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// scrape returns the value of the sample of /metrics that starts with
// series (name and labels as exposed), 0 if absent.
func scrape(t *testing.T, admin, series string) float64 {
	t.Helper()
	_, b := httpDo(t, "GET", "http://"+admin+"/metrics", nil)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// twoListenerConfig is testConfig with browsers served on public_listen,
// notices on the exchange listener's URL.
func twoListenerConfig(t *testing.T) *configs.Config {
	cfg := testConfig(t)
	cfg.Bidder.PublicListen = "127.0.0.1:0"
	cfg.Bidder.NoticeURL = "http://exchange.example.com"
	cfg.Bidder.PublicFirstByteTimeout = time.Second
	return cfg
}

// TestTwoListeners: with bidder.public_listen, the exchange listener
// serves bids and server-to-server notices and not the browser routes,
// the public listener the reverse (404 for the other side's routes); the
// bid's nurl and burl are on bidder.notice_url, its click on public_url.
func TestTwoListeners(t *testing.T) {
	s := startWithBulkUser(t, twoListenerConfig(t))
	if s.PublicAddr() == "" || s.PublicAddr() == s.Addr() {
		t.Fatalf("public listener %q, exchange listener %q", s.PublicAddr(), s.Addr())
	}
	body := bannerRequest(t)
	st, resp := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, body)
	var br openrtb2.BidResponse
	if st != 200 || json.Unmarshal(resp, &br) != nil || len(br.SeatBid) != 1 {
		t.Fatalf("bid on the exchange listener: %d %.300s", st, resp)
	}
	bid := br.SeatBid[0].Bid[0]
	if !strings.HasPrefix(bid.NURL, "http://exchange.example.com/win?t=") || !strings.HasPrefix(bid.BURL, "http://exchange.example.com/bill?t=") ||
		!strings.Contains(bid.AdM, "http://127.0.0.1:8080/click/") {
		t.Errorf("nurl %q burl %q (want bidder.notice_url), adm %.300q (clicks on public_url)", bid.NURL, bid.BURL, bid.AdM)
	}
	if st, _ := httpDo(t, "POST", "http://"+s.PublicAddr()+bidder.PathBid, body); st != 404 {
		t.Errorf("bid on the public listener: %d, want 404", st)
	}
	// cleared at the bid's own price: a shaded first-price bid may be below any fixed one
	bill := strings.Replace(strings.Replace(bid.BURL, "http://exchange.example.com", "", 1), "${AUCTION_PRICE}", strconv.FormatFloat(bid.Price, 'f', -1, 64), 1)
	if st, _ := httpDo(t, "GET", "http://"+s.PublicAddr()+bill, nil); st != 404 {
		t.Errorf("bill on the public listener: %d, want 404", st)
	}
	if st, _ := httpDo(t, "GET", "http://"+s.Addr()+bill, nil); st != 204 {
		t.Errorf("bill on the exchange listener: %d, want 204", st)
	}
	for _, p := range []string{bidder.PathEvent, bidder.PathUserSync, bidder.PathMatch, bidder.PathClick, bidder.PathImp} {
		if st, _ := httpDo(t, "GET", "http://"+s.Addr()+p, nil); st != 404 {
			t.Errorf("%s on the exchange listener: %d, want 404", p, st)
		}
		if st, _ := httpDo(t, "GET", "http://"+s.PublicAddr()+p, nil); st == 404 {
			t.Errorf("%s on the public listener: 404", p)
		}
	}
}

// TestAllowCIDRs: an exchange with allow_cidrs: a bid from outside is 403
// and counted, nothing decoded or bid; a /bill of its token from outside
// is 403 and not charged; from inside both work as before, and the
// exchanges without ranges are reached from anywhere.
func TestAllowCIDRs(t *testing.T) {
	cfg := testConfig(t)
	cfg.Exchanges = configs.Exchanges{"x1": {AllowCIDRs: []string{"127.0.0.3/32"}}, "open": {}}
	s := startWithBulkUser(t, cfg)
	inside, outside := clientFrom("127.0.0.3"), clientFrom("127.0.0.1")
	body := bannerRequest(t)
	url := "http://" + s.Addr()
	if st, b := doWith(t, outside, "POST", url+bidder.PathBid+"/x1", body); st != 403 {
		t.Fatalf("bid from outside: %d %s, want 403", st, b)
	}
	// Not even a body that does not decode is read.
	if st, _ := doWith(t, outside, "POST", url+bidder.PathBid+"/x1", []byte("{not json")); st != 403 {
		t.Fatalf("garbage from outside: %d, want 403", st)
	}
	if got := scrape(t, s.AdminAddr(), `rtbd_bidder_source_refused_total{exchange="x1",route="bid"}`); got != 2 {
		t.Errorf("refused bids counted %v, want 2", got)
	}
	if got := scrape(t, s.AdminAddr(), `rtbd_bidder_requests_total{exchange="x1"}`); got != 0 {
		t.Errorf("requests of x1 counted %v after refusals, want 0 (no work)", got)
	}
	if st, _ := doWith(t, outside, "POST", url+bidder.PathBid+"/open", body); st != 200 {
		t.Errorf("bid to an exchange without ranges: %d", st)
	}
	st, resp := doWith(t, inside, "POST", url+bidder.PathBid+"/x1", body)
	var br openrtb2.BidResponse
	if st != 200 || json.Unmarshal(resp, &br) != nil || len(br.SeatBid) != 1 {
		t.Fatalf("bid from inside: %d %.300s", st, resp)
	}
	bill := url + strings.Replace(strings.Replace(br.SeatBid[0].Bid[0].BURL, "http://127.0.0.1:8080", "", 1), "${AUCTION_PRICE}",
		strconv.FormatFloat(br.SeatBid[0].Bid[0].Price, 'f', -1, 64), 1)
	if st, _ := doWith(t, outside, "GET", bill, nil); st != 403 {
		t.Errorf("bill of x1's token from outside: %d, want 403", st)
	}
	accepted := `rtbd_notices_total{kind="bill",outcome="accepted"}`
	if got := scrape(t, s.AdminAddr(), accepted); got != 0 {
		t.Errorf("a refused bill was accepted (%v)", got)
	}
	if st, _ := doWith(t, inside, "GET", bill, nil); st != 204 {
		t.Errorf("bill from inside: %d, want 204", st)
	}
	if got := scrape(t, s.AdminAddr(), accepted); got != 1 {
		t.Errorf("bills accepted %v, want 1 (the one from inside)", got)
	}
	if got := scrape(t, s.AdminAddr(), `rtbd_bidder_source_refused_total{exchange="x1",route="notice"}`); got != 1 {
		t.Errorf("refused notices counted %v, want 1", got)
	}
}

// probeBids sends a bid from src to the exchange listener every second
// for 5 seconds (past the public listener's first-byte timeout of 1s);
// every answer must be 200.
func probeBids(t *testing.T, s *Server, src string) {
	t.Helper()
	c := clientFrom(src)
	body := bannerRequest(t)
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+s.Addr()+bidder.PathBid, bytes.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("probe %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != 200 {
			t.Fatalf("probe %d: %d, want 200", i, resp.StatusCode)
		}
		time.Sleep(time.Second)
	}
}

// TestListenerFloods: silent connections from one address, more than
// either listener's whole connection budget (max_conns and
// public_max_conns, 1,000 here), do not starve the bid port. On the public listener: it holds
// public_max_conns_per_addr of them and closes the rest at accept (and
// the held ones after the first-byte timeout); bids on the exchange
// listener stay 200, probed every second for 5s. On the exchange
// listener, from a source outside every exchange's allow_cidrs: closed
// at accept; bids from an allowed address stay 200.
func TestListenerFloods(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short: 1,200 connections and 5s of probes per listener")
	}
	const budget, flood = 1_000, 1_200
	netfaulttest.RaiseFileLimit(t, flood+2000) // the client's sockets; the bidder holds few of them
	floodConfig := func() *configs.Config {
		cfg := twoListenerConfig(t)
		cfg.Bidder.MaxConns, cfg.Bidder.PublicMaxConns = budget, budget
		return cfg
	}
	t.Run("public", func(t *testing.T) {
		s := startWithBulkUser(t, floodConfig())
		netfaulttest.SilentFlood(t, s.PublicAddr(), flood, "127.0.0.2")
		probeBids(t, s, "127.0.0.1")
		// Each silent connection was refused at accept or held, and a held
		// one is closed by the first-byte timeout: at most 64 are open.
		refused := scrape(t, s.AdminAddr(), `rtbd_bidder_public_conns_refused_total{reason="per_addr"}`)
		timedOut := scrape(t, s.AdminAddr(), "rtbd_bidder_public_first_byte_timeouts_total")
		if refused < 1 || timedOut < 1 || refused+timedOut < flood-64 {
			t.Errorf("refused per address %v, closed by the first-byte timeout %v; want both, and at least %d in all", refused, timedOut, flood-64)
		}
	})
	t.Run("exchange", func(t *testing.T) {
		cfg := floodConfig()
		cfg.Exchanges = configs.Exchanges{exchange.Default: {AllowCIDRs: []string{"127.0.0.1/32"}}}
		s := startWithBulkUser(t, cfg)
		netfaulttest.SilentFlood(t, s.Addr(), flood, "127.0.0.2")
		probeBids(t, s, "127.0.0.1")
		if got := scrape(t, s.AdminAddr(), "rtbd_bidder_source_closed_total"); got < flood {
			t.Errorf("closed at accept %v, want %d", got, flood)
		}
	})
}
