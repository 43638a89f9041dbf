package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// readTestdata reads a file of the bidder's testdata.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestartGate: Redis holds the money campaign's
// daily total at its budget (the fleet spent it); a bidder with -redis
// starts with money and free (testdata/free-campaign.yaml: no budget). For the first 2 s after it
// serves, bid requests are sent continuously: 0 bids for money, which is
// spent, and bids for free in those same 2 s.
func TestRestartGate(t *testing.T) {
	const budget = 3_000_000 // daily_budget: 3
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	seed := redisstore.New(rdb, redisstore.Options{Prefix: "rtbd:"})
	if _, err := seed.Flush(context.Background(), []spend.Delta{{ID: "fleet-seed:1", Campaign: "money", Day: today(), Micros: budget, Imps: 2000}}); err != nil {
		t.Fatal(err)
	}
	camps := campaignsYAML(t, "    daily_budget: 3\n"+string(readTestdata(t, "free-campaign.yaml")))
	p := startBidder(t, "gate", bidderConfig{
		dataDir:   filepath.Join(t.TempDir(), "bidder"),
		campaigns: camps,
		sets:      []string{"redis.addr=" + r.Addr, "user.store=pebble"},
	})
	c := newClient()
	counts := map[string]int{}
	requests := 0
	end := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		a := bid(c, p.addr, bidRequest(fmt.Sprintf("gate-%d", i), "www.news.example"))
		if a.err != nil {
			t.Fatal(a.err)
		}
		requests++
		if len(a.cids) == 0 {
			counts["no-bid"]++
		}
		for _, id := range a.cids {
			counts[id]++
		}
	}
	t.Logf("first 2 s after start, %d bid requests: %d bids for the spent money, %d for the unbudgeted free, %d no-bids",
		requests, counts["money"], counts["free"], counts["no-bid"])
	if counts["money"] != 0 {
		t.Errorf("%d bids for money, whose daily budget the fleet has spent: want 0", counts["money"])
	}
	if counts["free"] == 0 {
		t.Errorf("no bid for the unbudgeted free in the first 2 s: %v", counts)
	}
	if tot, err := seed.Read(context.Background(), []string{"money"}, today()); err != nil || tot[0].DayMicros != budget {
		t.Errorf("money's day total %+v (%v), want %d untouched", tot, err, budget)
	}
}

// TestShutdownDelaySIGTERM: after SIGTERM a bidder with
// bidder.shutdown_delay answers /readyz 503 while it still answers bid
// requests, then exits cleanly.
func TestShutdownDelaySIGTERM(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	p := startBidder(t, "delay", bidderConfig{
		dataDir:   filepath.Join(t.TempDir(), "bidder"),
		campaigns: campaignsYAML(t, ""),
		sets:      []string{"redis.addr=" + r.Addr, "user.store=pebble", "bidder.shutdown_delay=3s"},
	})
	c := newClient()
	if a := bid(c, p.addr, bidRequest("delay-0", "www.news.example")); a.err != nil || !a.bid {
		t.Fatalf("bid before SIGTERM: %+v", a)
	}
	p.signalTerm()
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	var body string
	for {
		resp, err := hc.Get("http://" + p.admin + "/readyz")
		if err != nil {
			t.Fatalf("/readyz after SIGTERM: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d 10s after SIGTERM:\n%s", resp.StatusCode, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.HasPrefix(body, "shutting down") {
		t.Errorf("/readyz body after SIGTERM:\n%s", body)
	}
	// A new connection, accepted only before the drain.
	a := bid(newClient(), p.addr, bidRequest("delay-1", "www.news.example"))
	if a.err != nil || !a.bid {
		t.Errorf("bid during the shutdown delay: %+v, want a bid", a)
	}
	if err := p.wait(60 * time.Second); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}
