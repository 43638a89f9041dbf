//go:build !race

package bidder

import (
	"path/filepath"
	"testing"
)

// TestBidAllocationsWithBudgets: the budget, pacing and frequency-cap
// checks (and the fraud check) add no allocation to a bid: the same pin as
// TestBidAllocations with Options.Budgets, Spend and Fraud set.
func TestBidAllocationsWithBudgets(t *testing.T) {
	f := newMoneyFixture(t, moneyCampaigns(t, "    daily_budget: 1000\n    total_budget: 5000\n    frequency_cap: {impressions: 1000000, period: 24h}\n"),
		func(o *Options) { o.Fraud = fraudList{domain: "blocked.example"} })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	allocs := bidAllocs(t, f.b.Handler(), bidCtx(body), "one bid with budgets")
	t.Logf("one bid with budgets, frequency cap and fraud checks: %.0f allocations", allocs)
	if allocs > 20 {
		t.Errorf("%.0f allocations per bid, want <= 20 (as without the checks)", allocs)
	}
}
