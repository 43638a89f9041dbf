package spend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/internal/metrictest"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

var noon = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// TestAddCloseExact: 32 goroutines x 3,000 Adds, then Close: the store holds
// exactly what was added, spend and frequency counts.
func TestAddCloseExact(t *testing.T) {
	store := memPebble(t)
	w, err := spend.NewWriter(store, spend.Options{FlushInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const G, N, C = 32, 3000, 4
	w.SetCampaigns([]spend.CampaignBudget{{ID: "c0", FreqCap: 1 << 30, FreqPeriod: 24 * time.Hour}, {ID: "c1"}, {ID: "c2"}, {ID: "c3"}})
	var wg sync.WaitGroup
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("user-%d", g%8)
			for i := range N {
				if err := w.Add(fmt.Sprintf("c%d", i%C), user, int64(i%5+1), noon); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	closeWriter(t, w)
	var wantM, wantI [C]int64
	for i := range N {
		wantM[i%C] += int64(i%5+1) * G
		wantI[i%C] += G
	}
	for c := range C {
		got := readTotal(t, store, fmt.Sprintf("c%d", c), "2024-05-01")
		if got.DayMicros != wantM[c] || got.TotalMicros != wantM[c] || got.DayImps != wantI[c] || got.TotalImps != wantI[c] {
			t.Errorf("c%d: %+v, want %d micros %d imps", c, got, wantM[c], wantI[c])
		}
	}
	// Frequency: c0 got N/C Adds per goroutine; users are shared by 4 goroutines each.
	exp := time.Unix(noon.Truncate(24*time.Hour).Add(24*time.Hour+spend.DefaultFreqGrace).Unix(), 0)
	win := noon.Truncate(24 * time.Hour).Unix()
	for u := range 8 {
		n, err := store.FreqCount("c0", fmt.Sprintf("user-%d", u), win, exp)
		if err != nil || n != int64(N/C*G/8) {
			t.Errorf("user-%d freq = %d, %v; want %d", u, n, err, N/C*G/8)
		}
	}
	if err := w.Add("c0", "u", 1, noon); !errors.Is(err, spend.ErrClosed) {
		t.Errorf("Add after Close: %v, want ErrClosed", err)
	}
}

func TestAddInvalid(t *testing.T) {
	w, err := spend.NewWriter(memPebble(t), spend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWriter(t, w)
	for _, c := range []struct {
		camp, user string
		micros     int64
	}{{"", "u", 1}, {"c", "u", -1}, {"c|x", "u", 1}, {"c", "bad\nuser", 1}, {string(make([]byte, 300)), "", 1}} {
		if err := w.Add(c.camp, c.user, c.micros, noon); !errors.Is(err, spend.ErrInvalid) {
			t.Errorf("Add(%q, %q, %d) = %v, want ErrInvalid", c.camp, c.user, c.micros, err)
		}
	}
}

// TestThresholdFlush: with a timer of an hour, only the thresholds can flush.
func TestThresholdFlush(t *testing.T) {
	t.Run("imps", func(t *testing.T) {
		cs := newCounting(memPebble(t))
		w, err := spend.NewWriter(cs, spend.Options{FlushInterval: time.Hour, ThresholdImps: 10, BudgetFraction: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer closeWriter(t, w)
		// Below the threshold nothing is flushed (the timer is an hour).
		// Each flush drains everything pending when it runs, so the test
		// waits for one before adding the next ten: added all at once,
		// a flush that ran after 16-19 of 25 adds left fewer than ten
		// pending, rightly not flushed (a flaky test, 2 in 300 runs).
		for range 9 {
			_ = w.Add("c", "", 1, noon)
		}
		if n := cs.flushes.Load(); n != 0 {
			t.Fatalf("%d flushes below the threshold", n)
		}
		_ = w.Add("c", "", 1, noon)
		spendtest.WaitFor(t, 5*time.Second, "10 imps in the store", func() bool { return readTotal(t, cs, "c", "2024-05-01").DayImps == 10 })
		for range 10 {
			_ = w.Add("c", "", 1, noon)
		}
		spendtest.WaitFor(t, 5*time.Second, "20 imps in the store", func() bool { return readTotal(t, cs, "c", "2024-05-01").DayImps == 20 })
		if n := cs.flushes.Load(); n != 2 {
			t.Errorf("%d flushes, want 2 (one per threshold crossed)", n)
		}
	})
	t.Run("micros", func(t *testing.T) {
		cs := newCounting(memPebble(t))
		w, err := spend.NewWriter(cs, spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, ThresholdMicros: 1000, BudgetFraction: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer closeWriter(t, w)
		_ = w.Add("c", "", 999, noon)
		_ = w.Add("c", "", 1, noon)
		spendtest.WaitFor(t, 5*time.Second, "1000 micros in the store", func() bool { return readTotal(t, cs, "c", "2024-05-01").DayMicros == 1000 })
	})
	t.Run("budget_fraction", func(t *testing.T) {
		cs := newCounting(memPebble(t))
		w, err := spend.NewWriter(cs, spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		defer closeWriter(t, w)
		w.SetCampaigns([]spend.CampaignBudget{{ID: "small", DailyMicros: 10000}})
		_ = w.Add("small", "", 1000, noon) // 10% of the daily budget
		spendtest.WaitFor(t, 5*time.Second, "the budget-fraction flush", func() bool { return readTotal(t, cs, "small", "2024-05-01").DayMicros == 1000 })
	})
}

func TestTimerFlush(t *testing.T) {
	cs := newCounting(memPebble(t))
	w, err := spend.NewWriter(cs, spend.Options{FlushInterval: 20 * time.Millisecond, ThresholdImps: -1, BudgetFraction: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWriter(t, w)
	_ = w.Add("c", "u", 7, noon)
	spendtest.WaitFor(t, 5*time.Second, "the timer flush", func() bool { return readTotal(t, cs, "c", "2024-05-01").DayMicros == 7 })
}

// TestBoundedFlushers: with every Flush held, no more than Flushers run at
// once however many campaigns are over their threshold.
func TestBoundedFlushers(t *testing.T) {
	cs := newCounting(memPebble(t))
	cs.holdFlushes()
	const flushers = 3
	w, err := spend.NewWriter(cs, spend.Options{FlushInterval: 10 * time.Millisecond, ThresholdImps: 1, Flushers: flushers, MaxBatch: 1, FlushTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		_ = w.Add(fmt.Sprintf("c%d", i), "", 1, noon)
	}
	spendtest.WaitFor(t, 5*time.Second, "flushers busy", func() bool { return cs.inflight.Load() == flushers })
	// Let the timer try to queue more for a while: still bounded.
	time.Sleep(50 * time.Millisecond)
	if m := cs.maxInflight.Load(); m != flushers {
		t.Errorf("max concurrent flushes = %d, want %d", m, flushers)
	}
	cs.release()
	closeWriter(t, w)
	if m := cs.maxInflight.Load(); m > flushers {
		t.Errorf("max concurrent flushes = %d, want <= %d", m, flushers)
	}
	for i := range 50 {
		if got := readTotal(t, cs, fmt.Sprintf("c%d", i), "2024-05-01"); got.DayImps != 1 {
			t.Errorf("c%d: %+v", i, got)
		}
	}
}

// TestStoreFailsThenRecovers: flushes fail for a while (counted), the deltas
// are retried with the same ids, and nothing is lost once the store is back.
func TestStoreFailsThenRecovers(t *testing.T) {
	cs := newCounting(memPebble(t))
	reg := prometheus.NewRegistry()
	w, err := spend.NewWriter(cs, spend.Options{FlushInterval: 10 * time.Millisecond, ThresholdImps: 5, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	cs.setFailing(true)
	var want int64
	for i := range 200 {
		if err := w.Add("c", fmt.Sprintf("u%d", i%3), int64(i), noon); err != nil {
			t.Fatal(err)
		}
		want += int64(i)
	}
	spendtest.WaitFor(t, 5*time.Second, "failed flushes", func() bool { return cs.failed.Load() >= 3 })
	for i := range 100 {
		_ = w.Add("c", "", int64(i), noon)
		want += int64(i)
	}
	errs := metrictest.Must(t, reg, "rtbd_spend_flushes_total", "result", "error")
	if errs < 3 {
		t.Errorf("flush errors counted = %v, want >= 3", errs)
	}
	cs.setFailing(false)
	closeWriter(t, w)
	got := readTotal(t, cs, "c", "2024-05-01")
	if got.DayMicros != want || got.DayImps != 300 {
		t.Errorf("after recovery: %+v, want %d micros, 300 imps", got, want)
	}
	cs.mu.Lock()
	resent := cs.resent
	cs.mu.Unlock()
	if resent == 0 {
		t.Error("no failed delta id was sent again: retries must keep ids")
	}
}

// TestCloseStoreDown: Close with the store down returns ErrUnflushed and
// says how much was not confirmed, within its context.
func TestCloseStoreDown(t *testing.T) {
	cs := newCounting(memPebble(t))
	cs.setFailing(true)
	w, err := spend.NewWriter(cs, spend.Options{FlushInterval: 10 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Add("c", "", 500, noon)
	_ = w.Add("d", "", 250, noon)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = w.Close(ctx)
	if !errors.Is(err, spend.ErrUnflushed) {
		t.Fatalf("Close = %v, want ErrUnflushed", err)
	}
	if want := "750 micros, 2 impressions"; !contains(err.Error(), want) {
		t.Errorf("Close error %q does not say %q", err, want)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestDayInCampaignZone: the day key is the date in the campaign's zone.
func TestDayInCampaignZone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	store := memPebble(t)
	w, err := spend.NewWriter(store, spend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.SetCampaigns([]spend.CampaignBudget{{ID: "jp", Loc: tokyo}})
	at := time.Date(2024, 5, 1, 16, 0, 0, 0, time.UTC) // 01:00 on May 2nd in Tokyo
	_ = w.Add("jp", "", 10, at)
	_ = w.Add("utc", "", 20, at)
	closeWriter(t, w)
	if got := readTotal(t, store, "jp", "2024-05-02"); got.DayMicros != 10 {
		t.Errorf("jp on 2024-05-02: %+v", got)
	}
	if got := readTotal(t, store, "utc", "2024-05-01"); got.DayMicros != 20 {
		t.Errorf("utc on 2024-05-01: %+v", got)
	}
}

// TestCloseDuringBurst (the building block of TestSIGTERMBurst): Close is
// called while 8 goroutines are adding; every Add that returned nil is in
// the store after it is closed and opened again, and every later Add was
// refused with ErrClosed.
func TestCloseDuringBurst(t *testing.T) {
	dir := t.TempDir()
	store, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := spend.NewWriter(store, spend.Options{FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var accepted, refused atomic.Int64
	var wg sync.WaitGroup
	started := make(chan struct{}, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for i := 0; ; i++ {
				err := w.Add("c", fmt.Sprintf("u%d", g), 10, noon)
				if errors.Is(err, spend.ErrClosed) {
					refused.Add(1)
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				accepted.Add(1)
			}
		}()
	}
	for range 8 {
		<-started
	}
	time.Sleep(30 * time.Millisecond) // a burst in progress
	closeWriter(t, w)
	wg.Wait()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	store, err = pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	got := readTotal(t, store, "c", "2024-05-01")
	if got.DayImps != accepted.Load() || got.DayMicros != 10*accepted.Load() {
		t.Fatalf("store has %d imps after restart, %d Adds were accepted", got.DayImps, accepted.Load())
	}
	if refused.Load() != 8 {
		t.Errorf("refused %d, want one per goroutine", refused.Load())
	}
	t.Logf("%d wins accepted before Close, all in the store", accepted.Load())
}

// noticeCountingStore is a TEST wrapper around a real store that records
// the most notices one Flush call carried.
type noticeCountingStore struct {
	spend.Store
	calls, most atomic.Int64
}

func (s *noticeCountingStore) Flush(ctx context.Context, deltas []spend.Delta) ([]spend.Total, error) {
	n := int64(0)
	for i := range deltas {
		n += int64(len(deltas[i].Notices))
	}
	s.calls.Add(1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	return s.Store.Flush(ctx, deltas)
}

// TestBacklogBoundedFlushes: a backlog of notices (accepted while nothing
// was flushed) goes to the store in calls of at most MaxFlushNotices, and
// the store ends with exactly the backlog.
func TestBacklogBoundedFlushes(t *testing.T) {
	inner := memPebble(t)
	store := &noticeCountingStore{Store: inner}
	const limit, campaigns, per = 700, 3, 2000
	w, err := spend.NewWriter(store, spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1, MaxFlushNotices: limit})
	if err != nil {
		t.Fatal(err)
	}
	for c := range campaigns {
		for i := range per {
			if err := w.Add(fmt.Sprintf("b%d", c), fmt.Sprintf("u%d", i%50), 3, noon); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeWriter(t, w)
	for c := range campaigns {
		if got := readTotal(t, inner, fmt.Sprintf("b%d", c), "2024-05-01"); got.DayImps != per || got.DayMicros != 3*per {
			t.Errorf("b%d: %+v, want %d imps, %d micros", c, got, per, 3*per)
		}
	}
	t.Logf("%d notices flushed in %d calls, at most %d per call (limit %d)", campaigns*per, store.calls.Load(), store.most.Load(), limit)
	if m := store.most.Load(); m > limit || m == 0 {
		t.Errorf("a flush carried %d notices, want 1..%d", m, limit)
	}
	if c := store.calls.Load(); c < campaigns*per/limit {
		t.Errorf("%d flush calls for %d notices, want at least %d", c, campaigns*per, campaigns*per/limit)
	}
}
