package spendtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
)

// ChargeDay and ChargeAt are the day and time of ChargeNotices' notices.
const ChargeDay = "2024-05-01"

var ChargeAt = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// ChargeNotices sends n notices over three campaigns (users u0..u6, 1..9
// micros) through a Writer on s, then every tenth again (a replay), pausing
// now and then so that there are many flushes; it closes the Writer and
// returns what the store should hold per campaign (micros, impressions)
// and how many Seq values were confirmed (it fails t unless every
// AddNotice's was).
func ChargeNotices(t *testing.T, s spend.Store, n int) (want map[string][2]int64, confirmed int) {
	t.Helper()
	var mu sync.Mutex
	w, err := spend.NewWriter(s, spend.Options{
		FlushInterval: 5 * time.Millisecond, ThresholdImps: 25, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond,
		FlushTimeout: time.Second, InstanceID: "bidder-1",
		Confirmed: func(seqs []uint64) { mu.Lock(); confirmed += len(seqs); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	camps := []string{"c0", "c1", "c2"}
	var cbs []spend.CampaignBudget
	for _, c := range camps {
		cbs = append(cbs, spend.CampaignBudget{ID: c, FreqCap: 1 << 20, FreqPeriod: time.Hour})
	}
	w.SetCampaigns(cbs)
	want = map[string][2]int64{}
	ns := make([]spend.Notice, n)
	for i := range ns {
		ns[i] = Notice(fmt.Sprintf("u%d", i%7), int64(i%9+1), ChargeAt)
		ns[i].Seq = uint64(i + 1)
		c := camps[i%3]
		want[c] = [2]int64{want[c][0] + ns[i].Micros, want[c][1] + 1}
	}
	sent := 0
	for i := range ns {
		if err := w.AddNotice(camps[i%3], &ns[i]); err != nil {
			t.Fatal(err)
		}
		sent++
		if i%40 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	for i := 0; i < n; i += 10 {
		if err := w.AddNotice(camps[i%3], &ns[i]); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if confirmed != sent {
		t.Errorf("%d notice seqs confirmed, want %d", confirmed, sent)
	}
	return want, confirmed
}

// CheckCharged reads the campaigns of want from s, prints the counts and
// fails unless they are exact.
func CheckCharged(t *testing.T, what string, s spend.Store, want map[string][2]int64, faults int) {
	t.Helper()
	var over, under, wantImps, gotImps int64
	for c, wv := range want {
		r, err := s.Read(context.Background(), []string{c}, ChargeDay)
		if err != nil {
			t.Fatal(err)
		}
		got := r[0]
		wantImps += wv[1]
		gotImps += got.TotalImps
		if d := got.TotalImps - wv[1]; d > 0 {
			over += d
		} else {
			under -= d
		}
		if got.DayMicros != wv[0] || got.TotalMicros != wv[0] || got.DayImps != wv[1] || got.TotalImps != wv[1] {
			t.Errorf("%s: %s: %+v, want %d micros, %d impressions per day and in total", what, c, got, wv[0], wv[1])
		}
	}
	t.Logf("%s: %d faults injected; %d notices accepted (+10%% replayed), store holds %d impressions: over-count %d, under-count %d", what, faults, wantImps, gotImps, over, under)
	if faults == 0 {
		t.Errorf("%s: no fault was injected: the test tests nothing", what)
	}
	if over != 0 || under != 0 {
		t.Errorf("%s: over-count %d, under-count %d, want 0", what, over, under)
	}
}
