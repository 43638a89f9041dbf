package spend_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// seq returns a Rand that yields vs in turn (then repeats the last).
func seq(vs ...float64) func() float64 {
	var mu sync.Mutex
	i := 0
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		v := vs[min(i, len(vs)-1)]
		i++
		return v
	}
}

func newWriter(t *testing.T, s spend.Store, o spend.Options) *spend.Writer {
	t.Helper()
	w, err := spend.NewWriter(s, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWriter(t, w) })
	return w
}

func TestBudgetsDailyAndTotal(t *testing.T) {
	w := newWriter(t, memPebble(t), spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	b := spend.NewBudgets(w, spend.BudgetOptions{})
	daily := spend.CampaignBudget{ID: "d", DailyMicros: 1000, Pacing: spend.PacingASAP}
	if ok, r := b.Check(daily, noon); !ok || r != spend.ReasonNone {
		t.Fatalf("fresh campaign: %v %v", ok, r)
	}
	_ = w.Add("d", "", 999, noon)
	if ok, _ := b.Check(daily, noon); !ok {
		t.Fatal("999 of 1000 spent: must still bid")
	}
	_ = w.Add("d", "", 1, noon)
	if ok, r := b.Check(daily, noon); ok || r != spend.ReasonDailyBudget {
		t.Fatalf("daily budget spent: %v %v", ok, r)
	}
	// The next day in the campaign's zone starts from zero.
	if ok, r := b.Check(daily, noon.Add(24*time.Hour)); !ok {
		t.Fatalf("next day: %v %v", ok, r)
	}

	total := spend.CampaignBudget{ID: "t", DailyMicros: 1000, TotalMicros: 1500, Pacing: spend.PacingASAP}
	b.Check(total, noon)
	_ = w.Add("t", "", 900, noon)
	_ = w.Add("t", "", 600, noon.Add(24*time.Hour))
	if ok, r := b.Check(total, noon.Add(24*time.Hour)); ok || r != spend.ReasonTotalBudget {
		t.Fatalf("total budget spent: %v %v", ok, r)
	}
	if r := spend.ReasonTotalBudget.String(); r != "total_budget" {
		t.Errorf("Reason string %q", r)
	}
}

// TestPacingEven: even pacing never skips an auction; its multiplier
// falls when spend runs ahead of the target (flat traffic: the elapsed
// share of the day) and comes back when it falls behind; asap and a
// campaign without a daily budget keep 1.
func TestPacingEven(t *testing.T) {
	w := newWriter(t, memPebble(t), spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	b := spend.NewBudgets(w, spend.BudgetOptions{Pacer: spend.PacerOptions{Interval: time.Minute}})
	c := spend.CampaignBudget{ID: "p", DailyMicros: 1_440_000} // 1,000 a minute
	now := noon
	if ok, r := b.Check(c, now); !ok || r != spend.ReasonNone {
		t.Fatalf("check: %v %v", ok, r)
	}
	if m := b.PaceMultiplier(&c, now); m != 1 {
		t.Fatalf("multiplier %v at the start, want 1", m)
	}
	// Five minutes at 3x the target: mu rises.
	for range 5 {
		_ = w.Add("p", "", 3000, now)
		now = now.Add(time.Minute)
		b.PaceMultiplier(&c, now)
	}
	high := b.PaceMultiplier(&c, now)
	if high >= 0.9 {
		t.Errorf("multiplier %v after spending 3x the target, want well below 1", high)
	}
	if ok, r := b.Check(c, now); !ok {
		t.Errorf("ahead of the curve: %v %v, want bidding (at a lower price)", ok, r)
	}
	st := b.Status(c, now)
	if st.PacingMultiplier != high || st.BidProbability != 1 || st.PacingAllowedMicros <= 0 {
		t.Errorf("status %+v", st)
	}
	// Ten minutes spending nothing: mu falls back to 0.
	for range 10 {
		now = now.Add(time.Minute)
		b.PaceMultiplier(&c, now)
	}
	if m := b.PaceMultiplier(&c, now); m <= high || m < 0.99 {
		t.Errorf("multiplier %v after spending nothing, want back to 1 (was %v)", m, high)
	}
	for _, other := range []spend.CampaignBudget{{ID: "a", DailyMicros: 1000, Pacing: spend.PacingASAP}, {ID: "u"}} {
		b.Check(other, now)
		if m := b.PaceMultiplier(&other, now); m != 1 {
			t.Errorf("%s: multiplier %v, want 1", other.ID, m)
		}
	}
}

// TestThrottleProbability: at noon with slack 1% and width 5%, spend under
// 51% bids, 52% with probability 0.8, 56% never.
func TestThrottleProbability(t *testing.T) {
	for _, tc := range []struct {
		spent int64
		want  float64
	}{{500_000, 1}, {520_000, 0.8}, {560_000, 0}} {
		if p := spend.ThrottleProbability(1_000_000, tc.spent, 0.5, 0.01, 0.05); math.Abs(p-tc.want) > 1e-9 {
			t.Errorf("spent %d: %v, want %v", tc.spent, p, tc.want)
		}
	}
}

func TestFreqCap(t *testing.T) {
	w := newWriter(t, memPebble(t), spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	b := spend.NewBudgets(w, spend.BudgetOptions{})
	c := spend.CampaignBudget{ID: "f", FreqCap: 3, FreqPeriod: time.Hour}
	w.SetCampaigns([]spend.CampaignBudget{c})
	for i := range 3 {
		if !b.FreqOK(c, "u1", noon) {
			t.Fatalf("impression %d refused", i)
		}
		_ = w.Add("f", "u1", 1, noon)
	}
	if b.FreqOK(c, "u1", noon.Add(59*time.Minute)) {
		t.Error("4th impression in the window allowed")
	}
	if !b.FreqOK(c, "u2", noon) {
		t.Error("another user refused")
	}
	if !b.FreqOK(c, "u1", noon.Add(time.Hour)) {
		t.Error("next window refused")
	}
	if !b.FreqOK(spend.CampaignBudget{ID: "f"}, "u1", noon) {
		t.Error("no cap refused")
	}
}

// TestFleetLearning: two Writers on one store. B learns A's spend through
// its refresh loop without any Add of its own, and B learns a user's fleet
// count at its own flush of that user.
func TestFleetLearning(t *testing.T) {
	store := memPebble(t)
	o := spend.Options{FlushInterval: 20 * time.Millisecond, ThresholdImps: -1, BudgetFraction: -1}
	wa, wb := newWriter(t, store, o), newWriter(t, store, o)
	ba, bb := spend.NewBudgets(wa, spend.BudgetOptions{}), spend.NewBudgets(wb, spend.BudgetOptions{})
	c := spend.CampaignBudget{ID: "c", DailyMicros: 1000, Pacing: spend.PacingASAP, FreqCap: 3, FreqPeriod: 24 * time.Hour}
	now := time.Now()
	if ok, _ := bb.Check(c, now); !ok {
		t.Fatal("B must bid at first")
	}
	ba.Check(c, now)
	_ = wa.Add("c", "u", 1000, now)
	_ = wa.Add("c", "u", 0, now)
	spendtest.WaitFor(t, 10*time.Second, "B to see A's spend", func() bool { ok, _ := bb.Check(c, time.Now()); return !ok })
	st := bb.Status(c, time.Now())
	if st.FleetDayMicros != 1000 || st.UnflushedTotalMicros != 0 || st.Reason != "daily_budget" {
		t.Errorf("B status %+v", st)
	}
	// B serves u once and flushes: it learns u's fleet count (2 + 1).
	_ = wb.Add("c", "u", 0, now)
	spendtest.WaitFor(t, 10*time.Second, "B to learn u's fleet count", func() bool { return bb.FreqCount(c, "u", now) == 3 })
	if bb.FreqOK(c, "u", now) {
		t.Error("u has 3 impressions fleet-wide: B must refuse")
	}
}

func TestFromCampaign(t *testing.T) {
	tz, _ := time.LoadLocation("Europe/Paris")
	c := &campaign.Campaign{ID: "x", TimeZone: tz, DailyBudgetMicros: 5, TotalBudgetMicros: 50, Pacing: campaign.PacingASAP,
		FrequencyCap: campaign.FrequencyCap{Impressions: 3, Period: time.Hour}}
	got := spend.FromCampaign(c)
	want := spend.CampaignBudget{ID: "x", Loc: tz, DailyMicros: 5, TotalMicros: 50, Pacing: spend.PacingASAP, FreqCap: 3, FreqPeriod: time.Hour}
	if got != want {
		t.Errorf("FromCampaign = %+v, want %+v", got, want)
	}
	c.Pacing = campaign.PacingEven
	if spend.FromCampaign(c).Pacing != spend.PacingEven {
		t.Error("even pacing")
	}
}
