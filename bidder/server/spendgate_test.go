package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// gateCampaigns writes the money campaign (1.5 CPM) with extra lines, and
// "free" (testdata/free-campaign.yaml: the same without a budget at 1.0
// CPM, so money wins whenever it may bid), and returns the file's path.
func gateCampaigns(t *testing.T, extra string) string {
	t.Helper()
	y := string(biddertest.ReadFile(t, filepath.Join("..", "testdata", "money-campaign.yaml"))) + extra
	y += string(biddertest.ReadFile(t, filepath.Join("..", "testdata", "free-campaign.yaml")))
	path := filepath.Join(t.TempDir(), "gate-campaigns.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// bidCampaign sends the spec banner request for the bulk user and returns
// the campaign of the bid ("" for a no-bid).
func bidCampaign(t *testing.T, s *Server) string {
	t.Helper()
	req := bannerRequest(t)
	st, b := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, req)
	switch st {
	case 204:
		return ""
	case 200:
	default:
		t.Fatalf("bid: %d %.300s", st, b)
	}
	var resp struct {
		SeatBid []struct {
			Bid []struct {
				CID string `json:"cid"`
			} `json:"bid"`
		} `json:"seatbid"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("bid response: %v: %.300s", err, b)
	}
	for _, sb := range resp.SeatBid {
		for _, bd := range sb.Bid {
			return bd.CID
		}
	}
	return ""
}

// TestSpendGateStoreDown: a bidder whose spend store (Redis) is down at
// start keeps its budgeted campaign paused (debug reason, /admin/campaigns)
// and /readyz 503 ("not ready: spend") until spend.startup_read_timeout;
// after it /readyz is 200, the budgeted campaign stays paused while the
// unbudgeted one bids; once Redis is back the budgeted campaign bids.
func TestSpendGateStoreDown(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	r.Kill()
	cfg := testConfig(t)
	for k, v := range map[string]string{"redis.addr": r.Addr, "user.store": "pebble",
		"bidder.campaigns":           gateCampaigns(t, "    daily_budget: 1000\n"),
		"spend.startup_read_timeout": "3s", "spend.flush_interval": "100ms"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Bidder.ShutdownTimeout = time.Second
	s := startWithBulkUser(t, cfg)

	st, b := httpDo(t, "GET", "http://"+s.AdminAddr()+"/readyz", nil)
	if st != 503 {
		t.Fatalf("/readyz at start with the spend store down: %d, want 503:\n%s", st, b)
	}
	wantLines(t, string(b), "not ready: spend", "spend: reading the fleet totals of 1 budgeted campaigns")
	counts := map[string]int{}
	for range 10 {
		counts[bidCampaign(t, s)]++
	}
	body := readyzUntil(t, s, 200, 20*time.Second)
	wantLines(t, body, "spend: 1 budgeted campaigns paused: fleet totals unread")
	for range 10 {
		counts[bidCampaign(t, s)]++
	}
	t.Logf("bids by campaign with the spend store down, before and after the timeout: %v", counts)
	if counts["money"] != 0 || counts["free"] != 20 {
		t.Errorf("bids %v, want 0 for the budgeted money and 20 for the unbudgeted free", counts)
	}

	// The reason is shown in the debug endpoint and /admin/campaigns.
	req := bannerRequest(t)
	_, dbg := httpDo(t, "POST", "http://"+s.AdminAddr()+"/admin/debug/bid", req)
	if !strings.Contains(string(dbg), "budget: totals_unread") {
		t.Errorf("debug bid lacks the reason budget: totals_unread:\n%s", dbg)
	}
	_, adm := httpDo(t, "GET", "http://"+s.AdminAddr()+"/admin/campaigns", nil)
	var camps []bidder.CampaignStatus
	if err := json.Unmarshal(adm, &camps); err != nil {
		t.Fatal(err)
	}
	for _, c := range camps {
		if c.Campaign == "money" && (c.Bidding || c.Reason != "totals_unread" || c.TotalsRead) {
			t.Errorf("/admin/campaigns money: bidding %v, reason %q, totals read %v; want paused, totals_unread", c.Bidding, c.Reason, c.TotalsRead)
		}
	}

	r.Restart()
	deadline := time.Now().Add(20 * time.Second)
	for bidCampaign(t, s) != "money" {
		if time.Now().After(deadline) {
			t.Fatal("money does not bid 20s after Redis is back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantLines(t, readyzUntil(t, s, 200, time.Second), "spend: fleet totals of budgeted campaigns read")
}

// TestShutdownDelay: Shutdown turns /readyz 503 at once, then goes on
// serving bids for bidder.shutdown_delay before it drains.
func TestShutdownDelay(t *testing.T) {
	cfg := testConfig(t)
	cfg.Bidder.ShutdownDelay = 3 * time.Second
	s, err := Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Users().Put(context.Background(), userBulk, biddertest.BulkProfile()); err != nil {
		t.Fatal(err)
	}
	if c := bidCampaign(t, s); c == "" {
		t.Fatal("no bid before the shutdown")
	}
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	body := readyzUntil(t, s, 503, 10*time.Second)
	wantLines(t, body, "shutting down", "shutting_down: yes")
	// A new connection: accepted only while the listener is open, so
	// before the drain (bidCampaign fails the test on a refused one).
	if c := bidCampaign(t, s); c == "" {
		t.Error("no bid during the shutdown delay")
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
