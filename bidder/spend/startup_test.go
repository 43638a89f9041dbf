package spend_test

import (
	"context"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
)

// waitFor polls cond every few milliseconds until it holds, failing t after
// limit (a bound on a background loop, not a timing assertion).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGateStoreUnreachable: with WaitForTotals and a store that refuses
// every read, a budgeted campaign is paused (ReasonUnread) however long the
// store stays down, while an unbudgeted one bids; the background loop keeps
// reading, and once the store answers the budgeted campaign bids, against
// the fleet's spend it has now learned.
func TestGateStoreUnreachable(t *testing.T) {
	mem := memPebble(t)
	// The fleet has spent 400 of the campaign's 1000 today.
	if _, err := mem.Flush(context.Background(), []spend.Delta{{ID: "other:1", Campaign: "b", Day: time.Now().UTC().Format(time.DateOnly), Micros: 400, Imps: 1}}); err != nil {
		t.Fatal(err)
	}
	cs := newCounting(mem)
	cs.setFailing(true)
	w := newWriter(t, cs, spend.Options{FlushInterval: 50 * time.Millisecond, RetryMin: 5 * time.Millisecond, FlushTimeout: 100 * time.Millisecond})
	b := spend.NewBudgets(w, spend.BudgetOptions{WaitForTotals: true})
	budgeted := spend.CampaignBudget{ID: "b", DailyMicros: 1000, Pacing: spend.PacingASAP}
	free := spend.CampaignBudget{ID: "u", Pacing: spend.PacingASAP}
	w.SetCampaigns([]spend.CampaignBudget{budgeted, free})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	n, err := b.ReadTotals(ctx)
	cancel()
	if n != 1 || err == nil {
		t.Fatalf("ReadTotals with the store down: %d unread, %v; want 1 and an error", n, err)
	}
	// Past any startup timeout the budgeted campaign stays paused.
	before := cs.reads.Load()
	for i := range 20 {
		now := time.Now()
		if ok, r := b.Check(budgeted, now); ok || r != spend.ReasonUnread {
			t.Fatalf("check %d: budgeted campaign %v %v, want paused (totals_unread)", i, ok, r)
		}
		if ok, r := b.Check(free, now); !ok {
			t.Fatalf("check %d: unbudgeted campaign refused (%v)", i, r)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := b.Status(budgeted, time.Now()); st.Bidding || st.Reason != "totals_unread" || st.TotalsRead {
		t.Errorf("status while unread: %+v", st)
	}
	waitFor(t, 10*time.Second, "background reads retrying", func() bool { return cs.reads.Load() >= before+3 })
	if b.Unread() != 1 {
		t.Errorf("Unread %d, want 1", b.Unread())
	}

	cs.setFailing(false)
	waitFor(t, 10*time.Second, "the budgeted campaign bidding once the store answers", func() bool {
		ok, _ := b.Check(budgeted, time.Now())
		return ok
	})
	st := b.Status(budgeted, time.Now())
	if !st.TotalsRead || st.FleetDayMicros != 400 || b.Unread() != 0 {
		t.Errorf("after the read: %+v, unread %d; want the fleet's 400 micros", st, b.Unread())
	}
}

// TestGateNewCampaign: a budgeted campaign that appears after start (a
// reload) is paused until its totals are read, which Check starts at once;
// one whose budget the fleet has already spent never bids.
func TestGateNewCampaign(t *testing.T) {
	mem := memPebble(t)
	day := time.Now().UTC().Format(time.DateOnly)
	if _, err := mem.Flush(context.Background(), []spend.Delta{{ID: "other:1", Campaign: "spent", Day: day, Micros: 1000, Imps: 1}}); err != nil {
		t.Fatal(err)
	}
	cs := newCounting(mem)
	w := newWriter(t, cs, spend.Options{FlushInterval: time.Hour})
	b := spend.NewBudgets(w, spend.BudgetOptions{WaitForTotals: true})
	if n, err := b.ReadTotals(context.Background()); n != 0 || err != nil {
		t.Fatalf("nothing registered: %d, %v", n, err)
	}
	fresh := spend.CampaignBudget{ID: "fresh", TotalMicros: 1000, Pacing: spend.PacingASAP}
	spent := spend.CampaignBudget{ID: "spent", DailyMicros: 1000, Pacing: spend.PacingASAP}
	// The store refuses reads until the first check has answered: the read
	// Check starts at once could otherwise finish before Check reads the state.
	cs.setFailing(true)
	if ok, r := b.Check(spent, time.Now()); ok || r != spend.ReasonUnread {
		t.Fatalf("first check of a new budgeted campaign: %v %v, want totals_unread", ok, r)
	}
	cs.setFailing(false)
	// The gate loop reads it without waiting for the hour-long refresh.
	waitFor(t, 10*time.Second, "the new campaign's totals read", func() bool {
		_, r := b.Check(spent, time.Now())
		return r != spend.ReasonUnread
	})
	if ok, r := b.Check(spent, time.Now()); ok || r != spend.ReasonDailyBudget {
		t.Errorf("spent campaign after the read: %v %v, want daily_budget", ok, r)
	}
	b.Check(fresh, time.Now())
	waitFor(t, 10*time.Second, "a fresh campaign bidding", func() bool {
		ok, _ := b.Check(fresh, time.Now())
		return ok
	})
}
