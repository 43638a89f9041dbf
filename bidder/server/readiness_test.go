package server

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/catalog"
)

// serveCatalogOn serves store with a catalog node's gRPC server on addr
// (127.0.0.1:0 for a free port) and returns the address and a stop that
// kills it (listener and connections closed, no draining). Stop runs at
// cleanup too.
func serveCatalogOn(t *testing.T, store catalog.Store, addr string) (string, func()) {
	t.Helper()
	g, _ := catalog.NewGRPCServer(catalog.NewServer(store, catalog.ServerOptions{}), catalog.GRPCOptions{})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln) //nolint:errcheck // returns when stopped
	stop := func() { g.Stop() }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// readyzUntil polls the admin listener's /readyz every 20ms until it
// answers code, failing t after limit (a bound, not a timing assertion).
// It returns the body of that answer.
func readyzUntil(t *testing.T, s *Server, code int, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, b := httpDo(t, "GET", "http://"+s.AdminAddr()+"/readyz", nil)
		if st == code {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d after %s, want %d:\n%s", st, limit, code, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains("\n"+body, "\n"+l) {
			t.Errorf("/readyz body lacks a line starting %q:\n%s", l, body)
		}
	}
}

// TestReadyzRemoteCatalog: a bidder whose only catalog node stops turns
// unready once admin.ready_catalog_grace has passed, and ready again when
// a node is back on the same address.
func TestReadyzRemoteCatalog(t *testing.T) {
	local, err := catalog.OpenLocal(biddertest.CatalogDir(), catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	addr, stop := serveCatalogOn(t, local, "127.0.0.1:0")
	cfg := testConfig(t)
	cfg.Catalog.Target = "static:///" + addr
	cfg.Catalog.Data = filepath.Join(t.TempDir(), "absent")
	cfg.Admin.ReadyCatalogGrace = 200 * time.Millisecond
	s := startWithBulkUser(t, cfg)

	body := readyzUntil(t, s, 200, 10*time.Second)
	wantLines(t, body, "ready\n", "shutting_down: no", "catalog: remote, 1 node resolved, reachable", "campaigns: ")

	stop()
	body = readyzUntil(t, s, 503, 10*time.Second)
	wantLines(t, body, "not ready: catalog", "shutting_down: no", "catalog: remote, 1 node resolved, none reachable for ")
	// Bids are still answered (no-bids: no products) while unready.
	req := bannerRequest(t)
	if st, b := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, req); st != 204 {
		t.Errorf("bid with the catalog down: %d %.300s, want a 204 no-bid", st, b)
	}

	serveCatalogOn(t, local, addr)
	body = readyzUntil(t, s, 200, 20*time.Second)
	wantLines(t, body, "catalog: remote, 1 node resolved, reachable")

	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestReadyzRedisDown: with Redis as the spend store and for the fraud
// lists, killing redis-server leaves /readyz 200 (the redis line says it is
// unreachable) and bid requests answered, with a bid or a no-bid.
func TestReadyzRedisDown(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	cfg := testConfig(t)
	if err := cfg.Set("redis.addr", r.Addr); err != nil {
		t.Fatal(err)
	}
	cfg.Bidder.ShutdownTimeout = time.Second // the final spend flush cannot reach Redis
	s := startWithBulkUser(t, cfg)
	body := readyzUntil(t, s, 200, 10*time.Second)
	wantLines(t, body, "ready\n", "catalog: local", "redis: reachable")
	req := bannerRequest(t)
	if st, b := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, req); st != 200 {
		t.Fatalf("bid with Redis up: %d %.300s", st, b)
	}

	r.Kill()
	answers := map[int]int{}
	for i := range 20 {
		st, b := httpDo(t, "GET", "http://"+s.AdminAddr()+"/readyz", nil)
		if st != 200 {
			t.Fatalf("/readyz %d with Redis down, want 200:\n%s", st, b)
		}
		if i == 19 {
			wantLines(t, string(b), "redis: unreachable (ignored for readiness)")
		}
		// Every bid request is answered within its deadline's order of
		// magnitude (the client gives up after 10s: a hang fails).
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Post("http://"+s.Addr()+bidder.PathBid, "application/json", bytes.NewReader(req))
		if err != nil {
			t.Fatalf("bid with Redis down: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 204 {
			t.Fatalf("bid with Redis down: %d, want a bid (200) or a no-bid (204)", resp.StatusCode)
		}
		answers[resp.StatusCode]++
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("bid answers with Redis down, by status: %v", answers)
}
