package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/journal"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/token"
)

// billPath is a billing notice URL (path and query) for auction, signed
// with keys, clearing at p.
func billPath(t *testing.T, keys *token.Keys, auction, p string) string {
	t.Helper()
	now := time.Now()
	tok, err := keys.Append(nil, &token.Token{Kind: token.KindBill, Issued: now, Expires: now.Add(time.Hour),
		Campaign: "money", Creative: "c", Auction: auction, Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	return bidder.PathBill + "?t=" + string(tok) + "&p=" + p
}

// TestJournalStoreOutage: a bidder whose spend store (Redis) is down
// accepts bills; it is shut down with them unflushed (a clean exit: they
// are in the journal); started again on the same data dir with Redis
// back, it replays the journal and Redis ends with every charge, and the
// journal is empty after its shutdown.
func TestJournalStoreOutage(t *testing.T) {
	const bills = 200
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	r.Kill()
	cfg := testConfig(t)
	if err := cfg.Set("redis.addr", r.Addr); err != nil {
		t.Fatal(err)
	}
	cfg.User.Store = "pebble"
	cfg.Spend.FlushInterval = 100 * time.Millisecond
	cfg.Spend.FlushTimeout = 200 * time.Millisecond
	cfg.Bidder.ShutdownTimeout = time.Second
	keys, err := token.NewKeys(biddertest.Key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i := range bills {
		if st, b := httpDo(t, "GET", "http://"+s.Addr()+billPath(t, keys, fmt.Sprintf("outage-%d", i), "1.5"), nil); st == 204 {
			accepted++
		} else {
			t.Errorf("bill %d with the store down: %d %s", i, st, b)
		}
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown with the store down: %v (the journal holds the spend: not a failure)", err)
	}
	j, err := journal.Open(cfg.JournalDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	held := j.Pending()
	j.Close()
	t.Logf("store down: %d bills accepted, %d in the journal after shutdown", accepted, held)
	if held != int64(accepted) {
		t.Errorf("journal holds %d notices after shutdown, want the %d accepted", held, accepted)
	}

	r.Restart()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	s2, err := Start(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown(context.Background())
	rs := redisstore.New(rdb, redisstore.Options{Prefix: "rtbd:"})
	var tot spend.Total
	spendtest.WaitFor(t, 20*time.Second, "the replayed journal in Redis", func() bool {
		got, err := rs.Read(context.Background(), []string{"money"}, time.Now().UTC().Format(time.DateOnly))
		if err == nil {
			tot = got[0]
		}
		return tot.TotalImps >= int64(accepted)
	})
	if err := s2.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	t.Logf("after the restart: redis holds %d impressions, %d micros", tot.TotalImps, tot.TotalMicros)
	if tot.TotalImps != int64(accepted) || tot.TotalMicros != int64(accepted)*1500 {
		t.Errorf("redis holds %d impressions / %d micros, want %d / %d", tot.TotalImps, tot.TotalMicros, accepted, accepted*1500)
	}
	j, err = journal.Open(cfg.JournalDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Pending() != 0 {
		t.Errorf("journal holds %d notices after a shutdown with everything flushed, want 0", j.Pending())
	}
}
