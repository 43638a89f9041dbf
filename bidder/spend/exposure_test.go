package spend_test

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
)

// delayedRun drives one campaign on a simulated clock: one bid request
// every step; a bid the budget check allows is recorded (Budgets.Bid) and,
// when won (every winEvery-th bid), billed delay steps later (Writer.Add).
// Bills still due after the last step all arrive. It returns the bids made
// and the spend billed.
type delayedRun struct {
	exposure        time.Duration // BudgetOptions.ExposureWindow (negative: off)
	budget, charge  int64         // micros
	steps, delay    int
	step            time.Duration
	winEvery        int
	bids, billed    int64
	pausedByBudget  int
	maxOutstanding  int64
	lastExposure    int64
	lastWinRate     float64
	lastOutstanding int64
}

func (r *delayedRun) run(t *testing.T) {
	t.Helper()
	w := newWriter(t, memPebble(t), spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	b := spend.NewBudgets(w, spend.BudgetOptions{ExposureWindow: r.exposure})
	c := spend.CampaignBudget{ID: "delayed", DailyMicros: r.budget, Pacing: spend.PacingASAP}
	w.SetCampaigns([]spend.CampaignBudget{c})
	start := time.Date(2024, 5, 1, 1, 0, 0, 0, time.UTC)
	due := map[int]int{} // step -> bills arriving then
	bill := func(i int, now time.Time) {
		for range due[i] {
			if err := w.Add(c.ID, "", r.charge, now); err != nil {
				t.Fatal(err)
			}
			r.billed += r.charge
		}
		delete(due, i)
	}
	for i := 0; i < r.steps; i++ {
		now := start.Add(time.Duration(i) * r.step)
		bill(i, now)
		ok, reason := b.Check(c, now)
		if !ok {
			if reason != spend.ReasonDailyBudget {
				t.Fatalf("step %d: refused for %v", i, reason)
			}
			r.pausedByBudget++
			continue
		}
		b.Bid(c.ID, r.charge, now)
		r.bids++
		if r.bids%int64(r.winEvery) == 0 {
			due[i+r.delay]++
		}
		st := b.Status(c, now)
		r.maxOutstanding = max(r.maxOutstanding, st.OutstandingBids)
		r.lastExposure, r.lastWinRate, r.lastOutstanding = st.ExposureMicros, st.WinRate, st.OutstandingBids
	}
	end := start.Add(time.Duration(r.steps) * r.step)
	for i := range due {
		bill(i, end)
	}
}

// TestExposureDelayedNotices: every bid wins and its billing notice comes
// 20 bid requests later. Without exposure the bidder keeps bidding until
// the bills reach the budget and overshoots by the bids in flight; with it
// the bills of its bids stay within the budget.
func TestExposureDelayedNotices(t *testing.T) {
	const charge = 1000
	base := delayedRun{budget: 200 * charge, charge: charge, steps: 2000, delay: 20, step: 50 * time.Millisecond, winEvery: 1}

	with := base
	with.run(t)
	without := base
	without.exposure = -1
	without.run(t)
	t.Logf("budget %d micros, bills %d requests after the bid: with exposure %d bids, %d micros billed (max outstanding %d); without %d bids, %d micros billed",
		base.budget, base.delay, with.bids, with.billed, with.maxOutstanding, without.bids, without.billed)
	if with.billed > base.budget {
		t.Errorf("with exposure: %d micros billed, over the budget %d", with.billed, base.budget)
	}
	if with.billed < base.budget-charge {
		t.Errorf("with exposure: %d micros billed, want the budget %d spent", with.billed, base.budget)
	}
	if without.billed <= base.budget {
		t.Errorf("without exposure: %d micros billed, want an overshoot of %d (the test cannot fail otherwise)", without.billed, base.budget)
	}
	if with.maxOutstanding < int64(base.delay)-1 || with.maxOutstanding > int64(base.delay)+1 {
		t.Errorf("outstanding bids peaked at %d, want about the %d in flight", with.maxOutstanding, base.delay)
	}
}

// TestExposureWinRate: half the bids win. The win rate exposure uses falls
// from 1 (no history) towards 0.5 once the campaign has bids older than
// the current bucket; the bills stay within the budget, and the budget is
// still spent as unbilled lost bids leave the window.
func TestExposureWinRate(t *testing.T) {
	const charge = 1000
	r := delayedRun{budget: 1000 * charge, charge: charge, steps: 20_000, delay: 20, step: 50 * time.Millisecond, winEvery: 2,
		exposure: 5 * time.Minute}
	r.run(t)
	t.Logf("budget %d micros: %d bids, %d micros billed; last win rate %.3f, outstanding %d, exposure %d micros",
		r.budget, r.bids, r.billed, r.lastWinRate, r.lastOutstanding, r.lastExposure)
	if r.billed > r.budget {
		t.Errorf("%d micros billed, over the budget %d", r.billed, r.budget)
	}
	if r.billed < r.budget*9/10 {
		t.Errorf("%d micros billed, want at least 90%% of the budget %d spent", r.billed, r.budget)
	}
	if r.lastWinRate < 0.45 || r.lastWinRate > 0.7 {
		t.Errorf("win rate %.3f, want about 0.5", r.lastWinRate)
	}
}

// TestExposureBounded: the win rate never goes below the floor, and
// exposure is 0 for a campaign without bids or once its bids have left the
// window.
func TestExposureBounded(t *testing.T) {
	w := newWriter(t, memPebble(t), spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	b := spend.NewBudgets(w, spend.BudgetOptions{ExposureWindow: time.Minute, WinRateFloor: 0.05})
	c := spend.CampaignBudget{ID: "lost", DailyMicros: 1 << 40, Pacing: spend.PacingASAP}
	b.Check(c, noon)
	if st := b.Status(c, noon); st.ExposureMicros != 0 || st.OutstandingBids != 0 {
		t.Fatalf("no bids: %+v", st)
	}
	for i := range 10_000 { // none ever billed
		b.Bid(c.ID, 100, noon.Add(time.Duration(i)*time.Millisecond))
	}
	now := noon.Add(10 * time.Second)
	st := b.Status(c, now)
	if st.WinRate != 0.05 || st.OutstandingBids != 10_000 || st.ExposureMicros != 10_000*100/20 {
		t.Errorf("all lost: win rate %v, outstanding %d, exposure %d; want the floor 0.05, 10000, 50000", st.WinRate, st.OutstandingBids, st.ExposureMicros)
	}
	if st := b.Status(c, now.Add(2*time.Minute)); st.ExposureMicros != 0 || st.OutstandingBids != 0 {
		t.Errorf("after the window: outstanding %d, exposure %d, want 0", st.OutstandingBids, st.ExposureMicros)
	}
}

// TestExposureBilledByNotice: a bill recorded by AddNotice (as by Add)
// ends its bid's exposure.
func TestExposureBilledByNotice(t *testing.T) {
	w := newWriter(t, memPebble(t), spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	b := spend.NewBudgets(w, spend.BudgetOptions{})
	c := spend.CampaignBudget{ID: "n", TotalMicros: 1 << 40}
	b.Check(c, noon)
	b.Bid(c.ID, 500, noon)
	b.Bid(c.ID, 500, noon)
	if st := b.Status(c, noon); st.OutstandingBids != 2 || st.ExposureMicros != 1000 {
		t.Fatalf("two bids: outstanding %d, exposure %d; want 2, 1000", st.OutstandingBids, st.ExposureMicros)
	}
	if err := w.AddNotice(c.ID, &spend.Notice{Nonce: spend.Nonce{1}, Kind: spend.NoticeCharge, Micros: 400, At: noon, Expires: noon.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if st := b.Status(c, noon); st.OutstandingBids != 1 || st.ExposureMicros != 500 {
		t.Errorf("one billed: outstanding %d, exposure %d; want 1, 500", st.OutstandingBids, st.ExposureMicros)
	}
}
