package spend

import (
	"sync/atomic"

	"github.com/rtbd/rtbd/bidder/campaign"
)

// BudgetCache gives the CampaignBudget of each campaign of the current
// campaign.Set, built once per Set (a reload makes a new Set) so that the
// bid path's budget checks build nothing. When a Set is first seen, its
// campaigns' settings are given to the Writer (Writer.SetCampaigns), if
// there is one. Safe for concurrent use; Of allocates nothing once the
// Set's table is built.
type BudgetCache struct {
	w   *Writer
	cur atomic.Pointer[budgetTable]
}

type budgetTable struct {
	set *campaign.Set
	by  map[*campaign.Campaign]*CampaignBudget
}

// NewBudgetCache returns a cache that registers each new Set's campaigns
// with w; w may be nil.
func NewBudgetCache(w *Writer) *BudgetCache { return &BudgetCache{w: w} }

// Of returns c's CampaignBudget from the table of set (built, and the
// Writer told of set's campaigns, when set is not the last one seen). A
// campaign not in set (cannot happen for c from set) is built on the spot.
// The result is shared: do not modify it.
func (bc *BudgetCache) Of(set *campaign.Set, c *campaign.Campaign) *CampaignBudget {
	t := bc.cur.Load()
	if t == nil || t.set != set {
		t = bc.build(set)
	}
	if cb, ok := t.by[c]; ok {
		return cb
	}
	cb := FromCampaign(c)
	return &cb
}

func (bc *BudgetCache) build(set *campaign.Set) *budgetTable {
	all := set.All()
	t := &budgetTable{set: set, by: make(map[*campaign.Campaign]*CampaignBudget, len(all))}
	list := make([]CampaignBudget, len(all))
	for i, c := range all {
		list[i] = FromCampaign(c)
		t.by[c] = &list[i]
	}
	if bc.w != nil {
		bc.w.SetCampaigns(list)
	}
	bc.cur.Store(t)
	return t
}
