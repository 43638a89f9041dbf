package redisstore_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/internal/metrictest"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// TestWriterRedisOutage: Redis is killed, restarted, then
// frozen (slow) and resumed while wins keep coming. Add never waits on
// Redis, Budgets keeps answering, flush errors are counted, flushes resume
// once Redis is back, and the store ends up with every accepted win.
func TestWriterRedisOutage(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{Persist: true})
	rdb := client(t, r.Addr)
	store := redisstore.New(rdb, redisstore.Options{})
	reg := prometheus.NewRegistry()
	w, err := spend.NewWriter(store, spend.Options{
		FlushInterval: 50 * time.Millisecond, ThresholdImps: 100,
		FlushTimeout: 300 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	b := spend.NewBudgets(w, spend.BudgetOptions{})
	c := spend.CampaignBudget{ID: "c", DailyMicros: 1 << 50, Pacing: spend.PacingASAP, FreqCap: 1 << 20, FreqPeriod: time.Hour}
	w.SetCampaigns([]spend.CampaignBudget{c})
	var sent, micros atomic.Int64
	// burst adds n wins from 4 goroutines and fails the test if they do not
	// all return within 5s (an Add waiting on Redis would).
	burst := func(n int) {
		t.Helper()
		done := make(chan struct{}, 4)
		for g := range 4 {
			go func() {
				for i := range n / 4 {
					now := time.Now()
					if ok, _ := b.Check(c, now); !ok {
						t.Error("Check refused an unlimited campaign")
					}
					if err := w.Add("c", []string{"u0", "u1", "u2", "u3"}[g], int64(i%10+1), now); err != nil {
						t.Error(err)
					}
					sent.Add(1)
					micros.Add(int64(i%10 + 1))
				}
				done <- struct{}{}
			}()
		}
		timeout := time.After(5 * time.Second)
		for range 4 {
			select {
			case <-done:
			case <-timeout:
				t.Fatal("Adds blocked for 5s while Redis was unavailable")
			}
		}
	}
	burst(2000)
	errs0 := metrictest.Value(t, reg, "rtbd_spend_flushes_total", "result", "error")

	r.Kill() // down
	burst(2000)
	spendtest.WaitFor(t, 10*time.Second, "flush errors while Redis is down", func() bool { return metrictest.Value(t, reg, "rtbd_spend_flushes_total", "result", "error") > errs0 })
	burst(2000)
	r.Restart()
	burst(2000)

	errs1 := metrictest.Value(t, reg, "rtbd_spend_flushes_total", "result", "error")
	r.Pause() // slow: connections open, no answers
	burst(2000)
	spendtest.WaitFor(t, 10*time.Second, "flush timeouts while Redis is frozen", func() bool { return metrictest.Value(t, reg, "rtbd_spend_flushes_total", "result", "error") > errs1 })
	r.Resume()
	burst(2000)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tot, err := store.Read(ctx, []string{"c"}, time.Now().UTC().Format(time.DateOnly))
	if err != nil {
		t.Fatal(err)
	}
	if tot[0].TotalImps != sent.Load() || tot[0].TotalMicros != micros.Load() {
		t.Errorf("store has %d imps / %d micros; accepted %d / %d", tot[0].TotalImps, tot[0].TotalMicros, sent.Load(), micros.Load())
	}
	// Frequency counts are exact too: 3000 per user.
	win := time.Now().Truncate(time.Hour).Unix()
	for _, u := range []string{"u0", "u1", "u2", "u3"} {
		n, err := rdb.Get(ctx, "rtbd:freq:{c}:"+strconv.FormatInt(win, 10)+":"+u).Int64()
		if err != nil || n != 3000 {
			t.Errorf("freq %s = %d, %v; want 3000 (unless the hour turned during the test)", u, n, err)
		}
	}
	t.Logf("accepted %d wins, flush errors %v", sent.Load(), metrictest.Value(t, reg, "rtbd_spend_flushes_total", "result", "error"))
}
