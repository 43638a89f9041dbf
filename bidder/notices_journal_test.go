package bidder

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

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
	return PathBill + "?t=" + string(tok) + "&p=" + p
}

// TestBillJournaled: an accepted bill is in the journal with its fields
// (nonce, kind, user, charge, expiry = token expiry + clock skew) before
// it is answered; a bill the journal cannot write is answered 503, not
// charged, and not remembered as seen (its retry is not a "replay").
func TestBillJournaled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	mf := newMoneyFixture(t, moneyCampaigns(t, ""), func(o *Options) {
		o.Journal = j
		o.NoticeClockSkew = 7 * time.Minute
	})
	now := mf.clock.Now()
	tok := token.Token{Kind: token.KindBill, Issued: now, Expires: now.Add(time.Hour),
		Campaign: "money", Creative: "c", Auction: "a1", Imp: "1", User: userBulk, PriceMicros: 1_500_000, Currency: "USD"}
	tok.Nonce[3] = 9
	raw, err := mf.keys.Append(nil, &tok)
	if err != nil {
		t.Fatal(err)
	}
	if st := mf.notice(PathBill+"?t="+string(raw)+"&p=${AUCTION_PRICE}", "1.25"); st != 204 {
		t.Fatalf("bill: %d", st)
	}
	if j.Pending() != 1 {
		t.Fatalf("journal pending %d after an accepted bill, want 1", j.Pending())
	}
	j.Close()
	j2, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	var got []spend.Notice
	if _, err := j2.Replay(func(c string, n *spend.Notice) error {
		if c != "money" {
			t.Errorf("campaign %q", c)
		}
		got = append(got, *n)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("journal holds %d notices, want 1", len(got))
	}
	// The nonce the token carries; a token without one gets the derived nonce.
	var parsed token.Token
	if _, err := mf.keys.Parse(&parsed, raw, token.KindBill, now, nil); err != nil {
		t.Fatal(err)
	}
	wantNonce := spend.Nonce(parsed.NoticeNonce())
	n := got[0]
	if n.Nonce != wantNonce || n.Kind != spend.NoticeCharge || n.User != userBulk || n.Micros != 1250 ||
		!n.At.Equal(now) || !n.Expires.Equal(tok.Expires.Add(7*time.Minute)) || n.Seq == 0 {
		t.Errorf("journaled %+v; want nonce %x, charge 1250, at %v, expires %v", n, wantNonce, now, tok.Expires.Add(7*time.Minute))
	}

	// The journal (closed above) refuses: 503, twice (not a replay), not charged.
	late := billPath(t, mf.keys, "a2", "${AUCTION_PRICE}")
	for i := range 2 {
		if st := mf.notice(late, "1"); st != 503 {
			t.Errorf("bill %d with the journal refusing: %d, want 503", i, st)
		}
	}
	if got := mf.notices("bill", "unavailable"); got != 2 {
		t.Errorf("unavailable = %v, want 2", got)
	}
	if err := mf.w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	tot, err := mf.store.Read(context.Background(), []string{"money"}, now.UTC().Format(time.DateOnly))
	if err != nil || tot[0].TotalMicros != 1250 || tot[0].TotalImps != 1 {
		t.Errorf("store %+v %v, want only the journaled bill (1250 micros, 1 impression)", tot, err)
	}
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
	keys, err := token.NewKeys(testKey)
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
