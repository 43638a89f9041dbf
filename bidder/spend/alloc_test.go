//go:build !race

package spend_test

import (
	"context"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
)

// TestAllocs pins the bid path (Check, with the totals gate and exposure,
// FreqOK, Bid) at zero allocations, and Add and AddNotice at zero for a
// (user, campaign, window) already seen.
func TestAllocs(t *testing.T) {
	w := newWriter(t, memPebble(t), spend.Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	b := spend.NewBudgets(w, spend.BudgetOptions{WaitForTotals: true})
	tz, _ := time.LoadLocation("America/New_York")
	c := spend.CampaignBudget{ID: "c", Loc: tz, DailyMicros: 1 << 40, TotalMicros: 1 << 50, FreqCap: 1 << 20, FreqPeriod: time.Hour}
	w.SetCampaigns([]spend.CampaignBudget{c})
	now := time.Now()
	_ = w.Add("c", "user-1", 1, now)
	b.Bid("c", 1, now)
	if n, err := b.ReadTotals(context.Background()); n != 0 || err != nil {
		t.Fatalf("ReadTotals: %d unread, %v", n, err)
	}
	n := spend.Notice{Nonce: spend.Nonce{1}, Kind: spend.NoticeCharge, User: "user-1", Micros: 1, At: now, Expires: now.Add(time.Hour), Seq: 1}
	for name, f := range map[string]func(){
		"Check":  func() { b.Check(c, now) },
		"Bid":    func() { b.Bid("c", 1, now) },
		"FreqOK": func() { b.FreqOK(c, "user-1", now) },
		"Add":    func() { _ = w.Add("c", "user-1", 1, now) },
		"AddNotice": func() {
			n.Nonce[0]++
			_ = w.AddNotice("c", &n)
		},
	} {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}

// TestBudgetCacheAllocs pins BudgetCache.Of, once its Set's table is
// built, at zero allocations.
func TestBudgetCacheAllocs(t *testing.T) {
	bc := spend.NewBudgetCache(nil)
	set := budgetSet(t, 1_000_000)
	c := set.All()[1]
	bc.Of(set, c)
	if n := testing.AllocsPerRun(100, func() { bc.Of(set, c) }); n != 0 {
		t.Errorf("BudgetCache.Of: %.1f allocs/op, want 0", n)
	}
}
