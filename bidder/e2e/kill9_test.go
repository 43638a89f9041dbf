package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/rtb"
)

// TestKill9DuringRedisOutage: a bidder with -redis (redis-server with AOF
// and appendfsync always) takes bids while Redis is up, then billing
// notices for them while redis-server is stopped, and is stopped: killed
// with SIGKILL (what it accepted was never flushed and is in no process's
// memory), or sent SIGTERM (its shutdown cannot flush: it must still exit
// 0, the notices being in its journal). Redis and the bidder are started
// again (same Redis data, same bidder data dir): the bidder replays its
// journal, and Redis must hold every accepted bill, exactly (counted: 204
// answers vs Redis's impressions and micros).
func TestKill9DuringRedisOutage(t *testing.T) {
	t.Run("kill9", func(t *testing.T) { stopDuringRedisOutage(t, false) })
	t.Run("sigterm", func(t *testing.T) { stopDuringRedisOutage(t, true) })
}

func stopDuringRedisOutage(t *testing.T, sigterm bool) {
	const bills = 400
	r := spendtest.StartRedis(t, spendtest.RedisOptions{Persist: true})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	cfg := bidderConfig{
		dataDir:   filepath.Join(t.TempDir(), "bidder"),
		campaigns: campaignsYAML(t, ""),
		sets: []string{"redis.addr=" + r.Addr, "user.store=pebble", "spend.flush_interval=200ms", "spend.flush_timeout=300ms",
			"bidder.shutdown_timeout=1s"},
	}
	p := startBidder(t, "kill9", cfg)
	c := newClient()

	urls := make([]string, bills)
	for i := range urls {
		a := bid(c, p.addr, bidRequest(fmt.Sprintf("kill9-%d", i), "www.news.example"))
		for try := 0; try < 5 && a.err == nil && a.nbr == int(rtb.NoBidDeadline); try++ {
			a = bid(c, p.addr, bidRequest(fmt.Sprintf("kill9-%d-%d", i, try), "www.news.example"))
		}
		if a.err != nil || !a.bid {
			t.Fatalf("bid %d: status %d nbr %d err %v", i, a.status, a.nbr, a.err)
		}
		var err error
		if urls[i], err = noticeURL(a.burl, p.addr, clearing); err != nil {
			t.Fatal(err)
		}
	}

	r.Kill()
	var acc, other atomic.Int64
	inWorkers(8, bills, func(i int) bool {
		st, err := get(c, urls[i])
		if err == nil && st == 204 {
			acc.Add(1)
		} else {
			other.Add(1)
			t.Errorf("bill %d with Redis stopped: %d %v", i, st, err)
		}
		return true
	})
	accepted := acc.Load()
	m := p.metrics(t)
	how := "killed (SIGKILL: no shutdown, no final flush)"
	if sigterm {
		how = "stopped (SIGTERM: the final flush fails)"
		if err := p.terminate(); err != nil {
			t.Errorf("bidder exit after SIGTERM with Redis stopped: %v (its notices are in the journal: a clean exit)", err)
		}
	} else {
		p.kill()
	}
	t.Logf("Redis stopped: %d bills sent, %d accepted (204), %d not; the bidder's journal held %v, unflushed %v micros when it was %s",
		bills, accepted, other.Load(), m["rtbd_spend_journal_pending_records"], m["rtbd_spend_unflushed_micros"], how)
	if m["rtbd_spend_journal_pending_records"] < float64(accepted) {
		t.Errorf("journal held %v notices, fewer than the %d accepted", m["rtbd_spend_journal_pending_records"], accepted)
	}

	r.Restart()
	rs := redisstore.New(rdb, redisstore.Options{Prefix: "rtbd:"})
	read := func() (imps, micros int64) {
		tot, err := rs.Read(context.Background(), []string{"money"}, today())
		if err != nil {
			return -1, -1
		}
		return tot[0].TotalImps, tot[0].TotalMicros
	}
	if imps, _ := read(); imps != 0 {
		t.Fatalf("Redis holds %d impressions before the bidder is back: the test did not keep the bills out of Redis", imps)
	}
	p2 := startBidder(t, "kill9-restarted", cfg)
	var imps, micros int64
	waitFor(20*time.Second, func() bool {
		imps, micros = read()
		return imps >= accepted
	})
	t.Logf("after Redis and the bidder are back: %d accepted bills, Redis holds %d impressions, %d micros", accepted, imps, micros)
	if imps != accepted || micros != accepted*chargeMicros {
		t.Errorf("Redis holds %d impressions / %d micros, want every accepted bill: %d / %d", imps, micros, accepted, accepted*chargeMicros)
	}
	if err := p2.terminate(); err != nil {
		t.Errorf("restarted bidder exit: %v", err)
	}
	if imps2, _ := read(); imps2 != imps {
		t.Errorf("Redis holds %d impressions after the restarted bidder's shutdown, %d before", imps2, imps)
	}
}
