package spend_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

func redisClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestFleet: three Writers (three bidders, each with its own Redis client)
// share one redis-server. A campaign with a small daily budget wins on all
// three at a high rate, each checking Budgets before each Add. The recorded
// spend overshoots the budget by at most 1% plus one flush interval's worth
// of the fleet's spend, and every bidder stops within one flush interval of
// the store reaching the budget.
func TestFleet(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	const (
		bidders  = 3
		workers  = 2 // per bidder
		budget   = 3_000_000
		price    = 1000 // micros per win
		interval = 200 * time.Millisecond
	)
	c := spend.CampaignBudget{ID: "fleet", DailyMicros: budget, Pacing: spend.PacingASAP}
	day := dayKeyNow()
	watch := redisstore.New(redisClient(t, r.Addr), redisstore.Options{})

	var ws []*spend.Writer
	var bs []*spend.Budgets
	for range bidders {
		w, err := spend.NewWriter(redisstore.New(redisClient(t, r.Addr), redisstore.Options{}), spend.Options{FlushInterval: interval})
		if err != nil {
			t.Fatal(err)
		}
		w.SetCampaigns([]spend.CampaignBudget{c})
		ws = append(ws, w)
		bs = append(bs, spend.NewBudgets(w, spend.BudgetOptions{}))
	}

	start := time.Now()
	var exhausted atomic.Int64 // unix nanos when the store first held >= budget
	lastAdd := make([]atomic.Int64, bidders)
	var accepted [bidders]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range bidders {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tk := time.NewTicker(2 * time.Millisecond)
				defer tk.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tk.C:
					}
					now := time.Now()
					if ok, _ := bs[i].Check(c, now); !ok {
						continue
					}
					if err := ws[i].Add(c.ID, "", price, now); err != nil {
						t.Error(err)
						return
					}
					accepted[i].Add(1)
					lastAdd[i].Store(time.Now().UnixNano())
				}
			}()
		}
	}
	// Watch the store; stop the run three intervals after it is exhausted.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatal("budget not reached within 30s")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		tot, err := watch.Read(ctx, []string{c.ID}, day)
		cancel()
		if err == nil && tot[0].DayMicros >= budget && exhausted.Load() == 0 {
			exhausted.Store(time.Now().UnixNano())
		}
		if e := exhausted.Load(); e != 0 && time.Since(time.Unix(0, e)) > 3*interval {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for _, w := range ws {
		closeWriter(t, w)
	}
	if dayKeyNow() != day {
		t.Skip("the run crossed midnight UTC: the daily budget restarted")
	}
	final := readTotal(t, watch, c.ID, day)
	var acc int64
	for i := range accepted {
		acc += accepted[i].Load()
	}
	if final.DayImps != acc || final.DayMicros != acc*price {
		t.Fatalf("store holds %d imps / %d micros, bidders accepted %d wins", final.DayImps, final.DayMicros, acc)
	}
	ex := time.Unix(0, exhausted.Load())
	rate := float64(budget) / ex.Sub(start).Seconds() // fleet spend rate, micros/s
	over := final.DayMicros - budget
	bound := 0.01*budget + rate*interval.Seconds()
	t.Logf("budget %d, recorded %d, overshoot %d micros (%.2f%%), bound %.0f (1%% + %v at %.0f micros/s); run %v",
		budget, final.DayMicros, over, 100*float64(over)/budget, bound, interval, rate, ex.Sub(start))
	if float64(over) > bound {
		t.Errorf("overshoot %d micros above the bound %.0f", over, bound)
	}
	for i := range bidders {
		lag := time.Duration(lastAdd[i].Load() - ex.UnixNano())
		t.Logf("bidder %d: %d wins, last win %v after the store reached the budget", i, accepted[i].Load(), lag)
		if lag > interval {
			t.Errorf("bidder %d kept winning %v after the budget was reached (> one flush interval %v)", i, lag, interval)
		}
	}
}

func dayKeyNow() string { return time.Now().UTC().Format(time.DateOnly) }
