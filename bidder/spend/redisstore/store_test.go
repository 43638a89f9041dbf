package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

var prefixSeq atomic.Int64

func client(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestStoreSuite(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	prefixes := map[spend.Store]string{}
	newStore := func(t *testing.T) spend.Store {
		p := fmt.Sprintf("t%d:", prefixSeq.Add(1))
		s := redisstore.New(client(t, r.Addr), redisstore.Options{Prefix: p})
		prefixes[s] = p
		return s
	}
	peer := func(t *testing.T, s spend.Store) spend.Store {
		return redisstore.New(client(t, r.Addr), redisstore.Options{Prefix: prefixes[s]})
	}
	spendtest.RunStoreSuite(t, newStore, spendtest.Capabilities{ExactlyOnce: true, Peer: peer})
}

// TestKeysAndExpiry checks the key layout and expiries the package comment
// promises, through a plain client.
func TestKeysAndExpiry(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	rdb := client(t, r.Addr)
	s := redisstore.New(rdb, redisstore.Options{Prefix: "k:", DayTTL: time.Hour})
	ctx := context.Background()
	exp := time.Now().Add(10 * time.Minute)
	if _, err := s.Flush(ctx, []spend.Delta{{ID: "w:1", Campaign: "c1", Day: "2024-05-01", Micros: 9, Imps: 1, Freq: []spend.FreqDelta{{User: "u1", Window: 3600, Count: 1, Expires: exp}}}}); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.HGetAll(ctx, "k:spend:{c1}:d:2024-05-01").Result(); err != nil || v["m"] != "9" || v["i"] != "1" {
		t.Errorf("day hash = %v, %v", v, err)
	}
	if ttl := rdb.TTL(ctx, "k:spend:{c1}:d:2024-05-01").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("day ttl = %v, want (0, 1h]", ttl)
	}
	if ttl := rdb.TTL(ctx, "k:spend:{c1}:t").Val(); ttl != -1 {
		t.Errorf("total ttl = %v, want none (-1)", ttl)
	}
	if v := rdb.Get(ctx, "k:freq:{c1}:3600:u1").Val(); v != "1" {
		t.Errorf("freq = %q", v)
	}
	if ttl := rdb.TTL(ctx, "k:freq:{c1}:3600:u1").Val(); ttl <= 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("freq ttl = %v, want about 10m", ttl)
	}
	if ttl := rdb.TTL(ctx, "k:spend:{c1}:id:w:1").Val(); ttl <= 23*time.Hour {
		t.Errorf("id ttl = %v, want about 24h", ttl)
	}
}

// TestScriptCacheLost: after SCRIPT FLUSH (what a restarted Redis looks
// like) Flush reloads the script and succeeds.
func TestScriptCacheLost(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	rdb := client(t, r.Addr)
	s := redisstore.New(rdb, redisstore.Options{})
	ctx := context.Background()
	for i := range 3 {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := s.Flush(ctx, []spend.Delta{{ID: fmt.Sprintf("w:%d", i), Campaign: "c", Day: "2024-05-01", Micros: 1, Imps: 1}})
		if err != nil {
			t.Fatalf("flush %d after SCRIPT FLUSH: %v", i, err)
		}
		if got[0].TotalMicros != int64(i+1) {
			t.Errorf("flush %d: total %d", i, got[0].TotalMicros)
		}
	}
}

// TestDown: with Redis killed, Flush and Read fail (bounded by ctx), and
// work again after a restart.
func TestDown(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{Persist: true})
	s := redisstore.New(client(t, r.Addr), redisstore.Options{})
	d := []spend.Delta{{ID: "w:1", Campaign: "c", Day: "2024-05-01", Micros: 5, Imps: 1}}
	r.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.Flush(ctx, d); err == nil {
		t.Fatal("Flush with Redis down succeeded")
	}
	if _, err := s.Read(ctx, []string{"c"}, "2024-05-01"); err == nil {
		t.Fatal("Read with Redis down succeeded")
	}
	r.Restart()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	got, err := s.Flush(ctx2, d)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].TotalMicros != 5 {
		t.Errorf("after restart: %+v", got[0])
	}
}

func TestLeaseSuite(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	prefixes := map[spend.LeaseStore]string{}
	spendtest.RunLeaseSuite(t, func(t *testing.T) spend.LeaseStore {
		p := fmt.Sprintf("l%d:", prefixSeq.Add(1))
		s := redisstore.New(client(t, r.Addr), redisstore.Options{Prefix: p})
		prefixes[s] = p
		return s
	}, func(t *testing.T, s spend.LeaseStore) spend.LeaseStore {
		return redisstore.New(client(t, r.Addr), redisstore.Options{Prefix: prefixes[s]})
	})
}
