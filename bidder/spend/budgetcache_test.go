package spend_test

import (
	"testing"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/spend"
)

func budgetSet(t *testing.T, total int64) *campaign.Set {
	t.Helper()
	c := func(id string) *campaign.Campaign {
		return &campaign.Campaign{ID: id, Status: campaign.StatusActive, ADomain: []string{"shop.example"}, ProductGroupID: 1,
			BidCPMMicros: 1_000_000, Currency: "USD", Creative: campaign.Creative{Template: campaign.TemplateLight, Native: true}}
	}
	a, b := c("a"), c("b")
	a.TotalBudgetMicros, b.DailyBudgetMicros = total, 5_000_000
	set, err := campaign.NewSet([]*campaign.Campaign{a, b})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestBudgetCache: one table per Set (the same budget each call), a new
// one when a reload brings a new Set, and a campaign outside the Set
// still gets its budget.
func TestBudgetCache(t *testing.T) {
	bc := spend.NewBudgetCache(nil)
	s1 := budgetSet(t, 3_000_000)
	a1 := bc.Of(s1, s1.All()[0])
	if a1.ID != "a" || a1.TotalMicros != 3_000_000 {
		t.Fatalf("Of(a) = %+v", a1)
	}
	if again := bc.Of(s1, s1.All()[0]); again != a1 {
		t.Error("the same Set's budget was built twice")
	}
	if b := bc.Of(s1, s1.All()[1]); b.ID != "b" || b.DailyMicros != 5_000_000 {
		t.Errorf("Of(b) = %+v", b)
	}
	s2 := budgetSet(t, 9_000_000)
	if a2 := bc.Of(s2, s2.All()[0]); a2.TotalMicros != 9_000_000 {
		t.Errorf("after a reload: total %d, want 9000000", a2.TotalMicros)
	}
	stray := &campaign.Campaign{ID: "z", TotalBudgetMicros: 7}
	if z := bc.Of(s2, stray); z.ID != "z" || z.TotalMicros != 7 {
		t.Errorf("Of(campaign outside the set) = %+v", z)
	}
}
