package server

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/internal/metrictest"
)

// 4,000 connection attempts against a bidder with bidder.max_conns 200:
// 200 connections are held (idle, kept alive), every other attempt reads a
// 503 and the connection's end, the held ones still bid meanwhile, the
// metrics count both, and a connection closed frees its place.
func TestMaxConnsHoldsThenRejects(t *testing.T) {
	const maxConns, attempts = 200, 4_000
	cfg := testConfig(t)
	cfg.Bidder.MaxConns = maxConns
	cfg.Bidder.AccessLogSample = 0
	s := startWithBulkUser(t, cfg)
	req := biddertest.Post(bidder.PathBid, bannerRequest(t))
	// A bid or a no-bid (the deadline, on a loaded machine) is an answer.
	bidOn := func(c *biddertest.RawConn) {
		t.Helper()
		if st, closed, err := c.Do(req); err != nil || (st != 200 && st != 204) || closed {
			t.Fatalf("bid on a held connection: status %d, closed %v, %v", st, closed, err)
		}
	}
	held := make([]*biddertest.RawConn, maxConns)
	for i := range held {
		c, err := biddertest.Dial(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		bidOn(c)
		held[i] = c
	}
	// The rest of the attempts, with bids on the held connections meanwhile.
	stop := make(chan struct{})
	bids := make(chan int, 1)
	go func() {
		n := 0
		defer func() { bids <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			c := held[i%len(held)]
			if st, _, err := c.Do(req); err != nil || (st != 200 && st != 204) {
				t.Errorf("bid %d on a held connection during the flood: status %d, %v", n, st, err)
				return
			}
			n++
		}
	}()
	res := biddertest.Flood(s.Addr(), req, attempts-maxConns, 16)
	close(stop)
	answered := <-bids
	if res.Failed.Load() > 0 || res.Served.Load() > 0 || res.Rejected.Load() != attempts-maxConns {
		t.Fatalf("of %d attempts over max_conns %d: %d rejected (503 and closed), %d served, %d failed (first: %v)",
			attempts-maxConns, maxConns, res.Rejected.Load(), res.Served.Load(), res.Failed.Load(), res.FirstErr())
	}
	if answered == 0 {
		t.Fatal("no bid answered on a held connection during the flood")
	}
	t.Logf("%d held, %d rejected, %d bids answered on held connections meanwhile", maxConns, res.Rejected.Load(), answered)
	admin := "http://" + s.AdminAddr() + "/metrics"
	_, m := httpDo(t, "GET", admin, nil)
	if got := metrictest.Text(string(m), "rtbd_bidder_conns_rejected_total"); got != attempts-maxConns {
		t.Errorf("rtbd_bidder_conns_rejected_total %v, want %d", got, attempts-maxConns)
	}
	if got := metrictest.Text(string(m), "rtbd_bidder_conns_open"); got != maxConns {
		t.Errorf("rtbd_bidder_conns_open %v, want %d", got, maxConns)
	}
	// Every held connection still bids; one closed frees a place.
	for _, c := range held {
		bidOn(c)
	}
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := biddertest.Dial(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := c.Do(req)
		c.Close()
		if err == nil && (st == 200 || st == 204) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new connection after one held was closed: status %d, %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
