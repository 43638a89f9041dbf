package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/rtb/money"
)

// TestServerRedis: Start with redis.addr set (as -redis does) picks the
// Redis spend store and syncs the fraud lists: a request from a site on
// the Redis block list gets nbr 7, a bill is in Redis after Shutdown.
func TestServerRedis(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.SAdd(ctx, "rtbd:fraud:domains", "blocked.example").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Incr(ctx, "rtbd:fraud:version").Err(); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	if err := cfg.Set("redis.addr", r.Addr); err != nil {
		t.Fatal(err)
	}
	cfg.Bidder.NBRBody = true
	s, shutdown := startStoppable(t, cfg)
	body := bannerRequest(t)
	blocked := biddertest.WithUser(t, body, "", "site", map[string]any{"id": "s1", "domain": "www.blocked.example"})
	if st, b := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, blocked); st != 200 || !strings.Contains(string(b), `"nbr":7`) {
		t.Fatalf("blocked site: %d %.300s", st, b)
	}
	st, resp := httpDo(t, "POST", "http://"+s.Addr()+bidder.PathBid, body)
	var br struct {
		SeatBid []struct {
			Bid []struct {
				BURL, CID string
				Price     float64
			}
		}
	}
	if err := json.Unmarshal(resp, &br); st != 200 || err != nil || len(br.SeatBid) == 0 {
		t.Fatalf("bid: %d %v %.300s", st, err, resp)
	}
	// Cleared at a third of the bid's price: a segment without data may
	// explore below the campaign's price, so a fixed price may exceed it.
	bid := br.SeatBid[0].Bid[0]
	price := money.FromFloat(bid.Price) / 3
	bill := strings.Replace(strings.Replace(bid.BURL, "http://127.0.0.1:8080", "http://"+s.Addr(), 1), "${AUCTION_PRICE}", money.Format(price), 1)
	if st, b := httpDo(t, "GET", bill, nil); st != 204 {
		t.Fatalf("bill: %d %s", st, b)
	}
	if err := shutdown(); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	cid := br.SeatBid[0].Bid[0].CID
	tot, err := redisstore.New(rdb, redisstore.Options{Prefix: "rtbd:"}).Read(ctx, []string{cid}, time.Now().UTC().Format("2006-01-02"))
	if want := money.PerImpression(price); err != nil || len(tot) != 1 || tot[0].TotalMicros != want || tot[0].TotalImps != 1 {
		t.Errorf("redis after Shutdown: %+v %v, want %d micros, 1 impression", tot, err, want)
	}
}
