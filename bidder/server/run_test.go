package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/rtb/money"
)

// testConfig is a complete bidder configuration on loopback ports chosen by
// the system, the fixture catalog, a fresh data dir and campaigns file.
func testConfig(t *testing.T) *configs.Config {
	t.Helper()
	cfg, err := configs.Default()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	campaigns := filepath.Join(dir, "campaigns.yaml")
	if err := os.WriteFile(campaigns, biddertest.ReadFile(t, filepath.Join("..", "testdata", "campaigns.yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Catalog.Data = biddertest.CatalogDir()
	cfg.Bidder.HTTPListen = "127.0.0.1:0"
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Bidder.DataDir = filepath.Join(dir, "bidder")
	cfg.Bidder.Campaigns = campaigns
	cfg.Bidder.PublicURL = "http://127.0.0.1:8080"
	cfg.Bidder.TokenKeys = []string{string(biddertest.Key)}
	cfg.Bidder.AccessLogSample = 1
	cfg.Bidder.ShutdownDelay = 0 // tests that measure the delay set it
	// No exploration of segments with data. A segment without data still
	// explores below the campaign's price (shading.explore_cold), so tests
	// clear bills at a price taken from the bid, not a fixed one.
	cfg.Shading.Explore = 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startWithBulkUser starts the bidder of cfg, shut down at cleanup, with
// userBulk's profile in its user store.
func startWithBulkUser(t *testing.T, cfg *configs.Config) *Server {
	t.Helper()
	s, _ := startStoppable(t, cfg)
	return s
}

// startStoppable is startWithBulkUser that also returns the bidder's
// Shutdown, for a test to call: the cleanup then does not shut it down
// again.
func startStoppable(t *testing.T, cfg *configs.Config) (*Server, func() error) {
	t.Helper()
	s, err := Start(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	shutdown := sync.OnceValue(func() error { return s.Shutdown(context.Background()) })
	t.Cleanup(func() { shutdown() })
	if err := s.Users().Put(context.Background(), userBulk, biddertest.BulkProfile()); err != nil {
		t.Fatal(err)
	}
	return s, shutdown
}

func httpDo(t *testing.T, method, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestServerLocal starts the bidder as rtbd does (Start: stores from the
// config, fasthttp on 127.0.0.1, admin listener), bids over TCP, reads the
// admin endpoints, and shuts down.
func TestServerLocal(t *testing.T) {
	cfg := testConfig(t)
	s, shutdown := startStoppable(t, cfg)
	body := bannerRequest(t)
	status, resp := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, body)
	if status != 200 || !strings.Contains(string(resp), `"nurl":"http://127.0.0.1:8080/win?t=`) {
		t.Fatalf("bid: %d %.300s", status, resp)
	}
	admin := "http://" + s.AdminAddr()
	if st, b := httpDo(t, "GET", admin+"/readyz", nil); st != 200 {
		t.Errorf("readyz %d %s", st, b)
	}
	st, metrics := httpDo(t, "GET", admin+"/metrics", nil)
	for _, want := range []string{`rtbd_bidder_requests_total{exchange="default"} 1`, `rtbd_bidder_bids_total{exchange="default"} 1`, `rtbd_bidder_nobids_total{nbr="deadline"} 0`,
		`rtbd_bidder_stage_seconds_count{stage="catalog"} 1`, "rtbd_bidder_in_flight 0", "rtbd_campaign_reloads_total", "rtbd_user_lookups_total"} {
		if st != 200 || !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	st, ex := httpDo(t, "POST", admin+"/admin/debug/bid", body)
	if st != 200 || !strings.Contains(string(ex), `"decision": "bid"`) {
		t.Errorf("debug: %d %.300s", st, ex)
	}
	// The local index has a hot cache, so banners keep their cells: the
	// bid rendered 15 (misses: seen), the debug run the same 15 (misses:
	// stored), a second debug run took them from the cache (hits).
	if st, _ := httpDo(t, "POST", admin+"/admin/debug/bid", body); st != 200 {
		t.Errorf("debug: %d", st)
	}
	_, metrics = httpDo(t, "GET", admin+"/metrics", nil)
	for _, want := range []string{`rtbd_bidder_banner_cells_total{result="miss"} 30`, `rtbd_bidder_banner_cells_total{result="hit"} 15`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if st, _ := httpDo(t, "POST", admin+"/admin/catalog/refresh", nil); st != 404 && st != 405 {
		t.Errorf("catalog refresh with a local index: %d, want 404/405", st)
	}
	// The bid's billing notice over TCP, charged to the embedded spend
	// store (bidder.data_dir/spend) by Shutdown's final flush.
	var br struct {
		SeatBid []struct {
			Bid []struct {
				BURL, CID string
				Price     json.Number
			}
		}
	}
	if err := json.Unmarshal(resp, &br); err != nil || len(br.SeatBid) == 0 {
		t.Fatalf("bid: %v", err)
	}
	// Cleared at the bid's own price: a first-price bid may be shaded (or
	// explored) below the campaign's value, and a bill above the bid is refused.
	price := br.SeatBid[0].Bid[0].Price.String()
	cpm, err := money.Parse(price)
	if err != nil {
		t.Fatalf("bid price %q: %v", price, err)
	}
	billed := money.PerImpression(cpm)
	bill := strings.Replace(strings.Replace(br.SeatBid[0].Bid[0].BURL, "http://127.0.0.1:8080", "http://"+s.Addr(), 1), "${AUCTION_PRICE}", price, 1)
	if st, b := httpDo(t, "GET", bill, nil); st != 204 {
		t.Fatalf("bill: %d %s", st, b)
	}
	cid := br.SeatBid[0].Bid[0].CID
	st, cb := httpDo(t, "GET", admin+"/admin/campaigns", nil)
	var camps []bidder.CampaignStatus
	if err := json.Unmarshal(cb, &camps); st != 200 || err != nil {
		t.Fatalf("/admin/campaigns: %d %v %.300s", st, err, cb)
	}
	found := false
	for _, c := range camps {
		if c.Campaign == cid {
			found = true
			if c.TotalMicros != billed || c.UnflushedTotalMicros != billed || !c.Bidding {
				t.Errorf("/admin/campaigns %s: %+v", cid, c)
			}
		}
	}
	if !found || len(camps) != 4 {
		t.Errorf("/admin/campaigns: %d campaigns, %s found %v", len(camps), cid, found)
	}
	// The same spend as per-campaign gauges on /metrics.
	_, metrics = httpDo(t, "GET", admin+"/metrics", nil)
	for _, c := range camps {
		var want []string
		if c.Campaign == cid {
			want = []string{
				fmt.Sprintf(`rtbd_spend_campaign_total_micros{campaign=%q,currency=%q} %d`, cid, c.Currency, billed),
				fmt.Sprintf(`rtbd_spend_campaign_today_micros{campaign=%q,currency=%q} %d`, cid, c.Currency, billed),
				fmt.Sprintf(`rtbd_spend_campaign_bidding{campaign=%q} 1`, cid),
			}
		}
		want = append(want, fmt.Sprintf(`rtbd_spend_campaign_daily_budget_micros{campaign=%q,currency=%q} %d`, c.Campaign, c.Currency, c.DailyBudgetMicros))
		for _, w := range want {
			if !strings.Contains(string(metrics), w) {
				t.Errorf("metrics lack %q", w)
			}
		}
	}
	if err := shutdown(); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	db, err := pebblestore.Open(filepath.Join(cfg.Bidder.DataDir, "spend"), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tot, err := db.Read(context.Background(), []string{cid}, time.Now().UTC().Format("2006-01-02"))
	if err != nil || len(tot) != 1 || tot[0].TotalMicros != billed || tot[0].TotalImps != 1 {
		t.Errorf("spend store after Shutdown: %+v %v, want %d micros, 1 impression", tot, err, billed)
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Error("still accepting after Shutdown")
	}
	var p user.Profile
	if _, err := s.Users().Get(context.Background(), userBulk, &p); !errors.Is(err, user.ErrClosed) {
		t.Errorf("user store after Shutdown: %v, want ErrClosed", err)
	}
}

// TestServerRemote: with catalog.target set, the same bidder reads products
// from a catalog node over gRPC, and the admin listener refreshes it.
func TestServerRemote(t *testing.T) {
	local, err := catalog.OpenLocal(biddertest.CatalogDir(), catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	addr, err := biddertest.StartCatalogNode(t, local)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Catalog.Target = "static:///" + addr
	cfg.Catalog.Data = filepath.Join(t.TempDir(), "absent") // not opened with a target
	s := startWithBulkUser(t, cfg)
	body := bannerRequest(t, "tmax", 500)
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, resp := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, body)
		if status == 200 {
			if !strings.Contains(string(resp), "https://img.example.com/1/1.jpg") {
				t.Errorf("bid without the products: %.300s", resp)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no bid through the remote catalog: %d %s", status, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The near cache (on by default) hands out one decoded product per
	// cached id, so the banner cell cache works as with the local index:
	// the bids rendered its cells (misses; the cell cache keeps a product's
	// cell from its second sighting on), and later bids reuse them.
	for i := range 2 {
		if status, resp := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, body); status != 200 {
			t.Fatalf("bid %d: %d %s", i+2, status, resp)
		}
	}
	_, m := httpDo(t, "GET", "http://"+s.AdminAddr()+"/metrics", nil)
	if strings.Contains(string(m), `rtbd_bidder_banner_cells_total{result="miss"} 0`) || strings.Contains(string(m), `rtbd_bidder_banner_cells_total{result="hit"} 0`) {
		t.Errorf("with a remote catalog and its near cache, the banner cell cache was not used:\n%s", grepLines(string(m), "rtbd_bidder_banner_cells_total{"))
	}
	st, b := httpDo(t, "POST", "http://"+s.AdminAddr()+"/admin/catalog/refresh", nil)
	var out struct {
		Nodes []string `json:"nodes"`
	}
	if st != 200 || json.Unmarshal(b, &out) != nil || len(out.Nodes) != 1 || out.Nodes[0] != addr {
		t.Errorf("refresh: %d %s", st, b)
	}
}

func TestStartErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		edit func(*configs.Config)
		key  string
	}{
		{func(c *configs.Config) { c.Catalog.Data = "/nonexistent/catalog" }, "catalog.data"},
		{func(c *configs.Config) { c.Bidder.Campaigns = "/nonexistent/campaigns.yaml" }, "bidder.campaigns"},
		{func(c *configs.Config) { c.Bidder.HTTPListen = "256.0.0.1:1" }, "bidder.http_listen"},
		{func(c *configs.Config) { c.Bidder.FXRates = []string{"JPY"} }, "fx"},
		{func(c *configs.Config) { c.Bidder.FXFile = "/nonexistent/latest.json" }, "bidder.fx_file"},
	} {
		cfg := testConfig(t)
		tc.edit(cfg)
		s, err := Start(cfg, nil)
		if err == nil {
			s.Shutdown(context.Background())
			t.Errorf("%s: Start succeeded", tc.key)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("error %q does not name %s", err, tc.key)
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestDeprecatedGCFloorKey: a config that still sets bidder.gc_floor_mb
// (the GC floor is gone) loads, and the bidder starts with it and logs a
// warning naming the key.
func TestDeprecatedGCFloorKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rtbd.yaml")
	if err := os.WriteFile(path, []byte("bidder:\n  gc_floor_mb: 256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := configs.Load(path)
	if err != nil {
		t.Fatalf("a config with bidder.gc_floor_mb does not load: %v", err)
	}
	if loaded.Bidder.GCFloorMB != 256 {
		t.Fatalf("bidder.gc_floor_mb read as %d, want 256", loaded.Bidder.GCFloorMB)
	}
	cfg := testConfig(t)
	cfg.Bidder.GCFloorMB = loaded.Bidder.GCFloorMB
	core, logs := observer.New(zap.WarnLevel)
	s, err := Start(cfg, zap.New(core))
	if err != nil {
		t.Fatalf("start with bidder.gc_floor_mb set: %v", err)
	}
	warned := logs.FilterField(zap.String("key", "bidder.gc_floor_mb")).All()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || warned[0].Level != zap.WarnLevel {
		t.Fatalf("warnings naming bidder.gc_floor_mb: %v, want one", warned)
	}
	// Unset, no warning.
	cfg2 := testConfig(t)
	core2, logs2 := observer.New(zap.WarnLevel)
	s2, err := Start(cfg2, zap.New(core2))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown(context.Background())
	if n := logs2.FilterField(zap.String("key", "bidder.gc_floor_mb")).Len(); n != 0 {
		t.Fatalf("%d warnings about bidder.gc_floor_mb when it is not set", n)
	}
}
