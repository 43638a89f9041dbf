package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/rtb"

	"github.com/rtbd/rtbd/internal/netfaulttest"
)

// phaseStats is what the SSP side saw during one phase of TestRedisOutage.
type phaseStats struct {
	name              string
	bids, notBid      int64 // normal requests: answered with a bid, or not
	blocked, notBlock int64 // requests from the blocked site: nbr 7, or not
	bills, billFailed int64 // billing notices: 204, or not
	lats              []time.Duration
	firstProblem      string
}

// TestRedisOutage: one bidder process uses a
// redis-server (AOF on, so a restart keeps the data) through a TCP relay
// the test controls. The fraud lists block www.blocked.example. Load runs
// through five phases: healthy; Redis slow (every relayed chunk delayed
// 1.5s, longer than tmax 500ms and than spend.flush_timeout 300ms); Redis
// hung (the relay holds every chunk); Redis down (redis-server killed);
// Redis restarted on the same port, until the bidder's flushes and fraud
// syncs have resumed.
//
// Asserted in every phase: every normal bid request gets a bid (a bid path
// that waited on Redis would miss its deadline: nbr 508), every request
// from the blocked site gets nbr 7 (the lists last synced are kept), every
// billing notice is answered 204, and the slowest bid answer stays under
// the request's tmax (500ms; a wait on the slow relay alone is 1.5s). The
// latencies are logged per phase. After the outage: the flush and fraud
// sync errors are counted in /metrics; the flushes resume on their own
// (a flush succeeds and no campaign is left retrying; once the load
// stops, the unflushed spend goes back to 0 without a shutdown); and Redis holds exactly
// the spend of every accepted billing notice.
func TestRedisOutage(t *testing.T) {
	const (
		tmax       = 500 * time.Millisecond
		slow       = 1500 * time.Millisecond
		phase      = 1500 * time.Millisecond
		workers    = 4
		recoveryIn = 20 * time.Second // > spend.Options.RetryMax (10s) + margins
	)
	r := spendtest.StartRedis(t, spendtest.RedisOptions{Persist: true})
	ctx := context.Background()
	direct := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true})
	defer direct.Close()
	if err := direct.SAdd(ctx, "rtbd:fraud:domains", "blocked.example").Err(); err != nil {
		t.Fatal(err)
	}
	if err := direct.Incr(ctx, "rtbd:fraud:version").Err(); err != nil {
		t.Fatal(err)
	}
	rl := netfaulttest.Start(t, r.Addr)
	p := startBidder(t, "outage", bidderConfig{
		dataDir:   filepath.Join(t.TempDir(), "bidder"),
		campaigns: campaignsYAML(t, ""),
		sets: []string{"redis.addr=" + rl.Addr(), "user.store=pebble", "spend.flush_interval=200ms", "spend.flush_timeout=300ms",
			"fraud.check_interval=200ms"},
	})
	c := newClient()

	var (
		mu       sync.Mutex
		cur      *phaseStats
		accepted atomic.Int64
		seq      atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	note := func(f func(ps *phaseStats) string) {
		mu.Lock()
		if problem := f(cur); problem != "" && cur.firstProblem == "" {
			cur.firstProblem = problem
		}
		mu.Unlock()
	}
	worker := func(blocked bool) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			domain := "www.news.example"
			if blocked {
				domain = "www.blocked.example"
			}
			a := bid(c, p.addr, bidRequest(fmt.Sprintf("outage-%d", seq.Add(1)), domain))
			if blocked {
				note(func(ps *phaseStats) string {
					ps.lats = append(ps.lats, a.latency)
					if a.err == nil && !a.bid && a.nbr == int(rtb.NoBidBlockedPublisher) {
						ps.blocked++
						return ""
					}
					ps.notBlock++
					return fmt.Sprintf("blocked site: bid %v nbr %d err %v", a.bid, a.nbr, a.err)
				})
				time.Sleep(5 * time.Millisecond)
				continue
			}
			note(func(ps *phaseStats) string {
				ps.lats = append(ps.lats, a.latency)
				if a.err == nil && a.bid {
					ps.bids++
					return ""
				}
				ps.notBid++
				return fmt.Sprintf("normal request: status %d nbr %d err %v after %v", a.status, a.nbr, a.err, a.latency)
			})
			if !a.bid {
				continue
			}
			url, err := noticeURL(a.burl, p.addr, clearing)
			st := 0
			if err == nil {
				st, err = get(c, url)
			}
			if st == 204 {
				accepted.Add(1)
			}
			note(func(ps *phaseStats) string {
				if st == 204 {
					ps.bills++
					return ""
				}
				ps.billFailed++
				return fmt.Sprintf("bill: %d %v", st, err)
			})
		}
	}
	var phases []*phaseStats
	begin := func(name string) {
		mu.Lock()
		cur = &phaseStats{name: name}
		phases = append(phases, cur)
		mu.Unlock()
	}
	begin("healthy")
	wg.Add(workers + 1)
	for range workers {
		go worker(false)
	}
	go worker(true)

	time.Sleep(phase)
	m0 := p.metrics(t)

	begin("slow (1.5s per chunk)")
	rl.SetDelay(slow)
	time.Sleep(phase)

	begin("hung (relay paused)")
	rl.SetDelay(0)
	rl.Pause()
	time.Sleep(phase)

	begin("down (redis-server killed)")
	rl.Resume()
	r.Kill()
	time.Sleep(phase)
	mDown := p.metrics(t)

	begin("restarted, until flushes resumed")
	r.Restart()
	restarted := time.Now()
	var mUp map[string]float64
	okKey, fraudOK := `rtbd_spend_flushes_total{result="ok"}`, `rtbd_fraud_syncs_total{kind="version",result="ok"}`
	resumed := waitFor(recoveryIn, func() bool {
		mUp = p.metrics(t)
		return mUp["rtbd_spend_retrying_campaigns"] == 0 && mUp[okKey] > mDown[okKey] && mUp[fraudOK] > mDown[fraudOK]
	})
	recovery := time.Since(restarted)
	close(stop)
	wg.Wait()
	// The load has stopped: the timer flushes the rest (no shutdown).
	drained := waitFor(10*time.Second, func() bool {
		mUp = p.metrics(t)
		return mUp["rtbd_spend_unflushed_micros"] == 0 && mUp["rtbd_spend_retrying_campaigns"] == 0
	})

	for _, ps := range phases {
		slices.Sort(ps.lats)
		var p50, p99, mx time.Duration
		if n := len(ps.lats); n > 0 {
			p50, p99, mx = ps.lats[n/2], ps.lats[n*99/100], ps.lats[n-1]
		}
		t.Logf("%-36s bids %5d (not %d), blocked nbr7 %4d (not %d), bills 204 %5d (not %d); bid latency p50 %v p99 %v max %v",
			ps.name, ps.bids, ps.notBid, ps.blocked, ps.notBlock, ps.bills, ps.billFailed,
			p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), mx.Round(10*time.Microsecond))
		if ps.notBid+ps.notBlock+ps.billFailed > 0 {
			t.Errorf("phase %s: %d requests without a bid, %d blocked-site requests without nbr 7, %d bills not 204; first: %s",
				ps.name, ps.notBid, ps.notBlock, ps.billFailed, ps.firstProblem)
		}
		if ps.bids == 0 || ps.blocked == 0 {
			t.Errorf("phase %s: no load went through (%d bids, %d blocked)", ps.name, ps.bids, ps.blocked)
		}
		if mx >= tmax {
			t.Errorf("phase %s: slowest bid answer %v, not under tmax %v", ps.name, mx, tmax)
		}
	}
	flushErr := mDown[`rtbd_spend_flushes_total{result="error"}`] - m0[`rtbd_spend_flushes_total{result="error"}`]
	readErr := mDown[`rtbd_spend_reads_total{result="error"}`] - m0[`rtbd_spend_reads_total{result="error"}`]
	fraudErr := mDown[`rtbd_fraud_syncs_total{kind="version",result="error"}`] - m0[`rtbd_fraud_syncs_total{kind="version",result="error"}`]
	t.Logf("during the outage: %v flush errors, %v fleet read errors, %v fraud version check errors (rtbd_spend_flushes_total, rtbd_spend_reads_total, rtbd_fraud_syncs_total); unflushed at the end of it: %v micros",
		flushErr, readErr, fraudErr, mDown["rtbd_spend_unflushed_micros"])
	if flushErr == 0 || fraudErr == 0 {
		t.Errorf("outage errors not counted: %v flush errors, %v fraud sync errors", flushErr, fraudErr)
	}
	if mDown["rtbd_spend_unflushed_micros"] == 0 {
		t.Errorf("no spend was buffered during the outage (the test did not exercise the buffer)")
	}
	if !resumed {
		t.Fatalf("flushes and fraud syncs did not resume within %v of the restart: retrying %v campaigns, flushes ok %v -> %v, fraud checks ok %v -> %v",
			recoveryIn, mUp["rtbd_spend_retrying_campaigns"], mDown[okKey], mUp[okKey], mDown[fraudOK], mUp[fraudOK])
	}
	t.Logf("flushes and fraud syncs resumed %v after the restart (flush retry backoff grows up to spend RetryMax 10s)", recovery.Round(time.Millisecond))
	if !drained {
		t.Fatalf("after the load stopped, unflushed spend stayed at %v micros", mUp["rtbd_spend_unflushed_micros"])
	}

	// Nothing lost: Redis holds every accepted bill, before any shutdown
	// flush (the bidder is still running).
	tot, err := redisstore.New(direct, redisstore.Options{Prefix: "rtbd:"}).Read(ctx, []string{"money"}, today())
	if err != nil {
		t.Fatal(err)
	}
	acc := accepted.Load()
	t.Logf("accepted bills %d; redis holds %d impressions, %d micros", acc, tot[0].TotalImps, tot[0].TotalMicros)
	if tot[0].TotalImps != acc || tot[0].TotalMicros != acc*chargeMicros {
		t.Errorf("redis holds %d impressions / %d micros, want %d / %d", tot[0].TotalImps, tot[0].TotalMicros, acc, acc*chargeMicros)
	}
	if err := p.terminate(); err != nil {
		t.Errorf("bidder exit: %v", err)
	}
}
