package bidder

import (
	"encoding/json"
	"net/http"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/rtb"
)

// CampaignStatus is one campaign of GET /admin/campaigns: the spend
// package's view (today's and total spend in micros of the campaign's
// currency, this bidder's unflushed part and the fleet-wide totals as last
// read, budgets, pacing, frequency cap) plus the campaign's own state.
type CampaignStatus struct {
	spend.Status
	// Name, Status ("active", "paused") and Currency of the campaign.
	Name     string `json:"name,omitempty"`
	State    string `json:"status"`
	Currency string `json:"currency"`
	// FreqPeriodText is FreqPeriod as a Go duration ("24h0m0s"); "" without a cap.
	FreqPeriodText string `json:"freq_period,omitempty"`
	// Bidding (overriding spend.Status's) is false when the campaign is
	// paused or its budget or pacing stops it; Reason says which
	// ("paused", "daily_budget", "total_budget", "pacing", "totals_unread":
	// a budgeted campaign whose fleet totals are not read yet; "ok" when
	// bidding). Flights and dayparts are not evaluated here.

	// Bids, Wins and Losses are the campaign's lifetime auction outcomes,
	// fleet-wide as last learned (a flush or a read, at most about one
	// flush interval old) plus this bidder's not yet flushed: bids made
	// (test bids excluded), bids won (the first accepted win or billing
	// notice of a bid) and accepted loss notices; LossReasons splits
	// Losses by reason label (rtbd_loss_total's; reasons with a count
	// only). BidWinRate is Wins / Bids (0 before the first bid). Without
	// Options.Spend all are zero.
	Bids        int64            `json:"bids"`
	Wins        int64            `json:"wins"`
	Losses      int64            `json:"losses"`
	LossReasons map[string]int64 `json:"loss_reasons,omitempty"`
	BidWinRate  float64          `json:"bid_win_rate"`
}

// setOutcomes fills the outcome fields of cs from c.
func (cs *CampaignStatus) setOutcomes(c *spend.Counts) {
	cs.Bids, cs.Wins, cs.Losses = c[spend.CountBids], c[spend.CountWins], c.Losses()
	if cs.Bids > 0 {
		cs.BidWinRate = float64(cs.Wins) / float64(cs.Bids)
	}
	for r := range rtb.NumLossReasons {
		if n := c[spend.CountLosses+r]; n > 0 {
			if cs.LossReasons == nil {
				cs.LossReasons = map[string]int64{}
			}
			cs.LossReasons[rtb.LossReason(r).String()] = n
		}
	}
}

// CampaignsHandler serves GET /admin/campaigns (the admin listener): a
// JSON array of CampaignStatus, one per campaign of the current set, in
// file order. Without Options.Budgets it answers 404.
func (b *Bidder) CampaignsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		bg := b.opts.Budgets
		set := b.opts.Campaigns.Current()
		if bg == nil || set == nil {
			http.Error(w, "no spend tracking configured", http.StatusNotFound)
			return
		}
		now := b.opts.Now()
		out := make([]CampaignStatus, 0, set.Len())
		for _, c := range set.All() {
			cb := b.budgetOf(set, c)
			cs := CampaignStatus{Status: bg.Status(*cb, now), Name: c.Name, State: c.Status, Currency: c.Currency}
			if cb.FreqCap > 0 {
				cs.FreqPeriodText = cb.FreqPeriod.String()
			}
			if c.Status != "" && c.Status != "active" {
				cs.Bidding, cs.Reason = false, "paused"
			}
			if w := b.opts.Spend; w != nil {
				counts := w.Counts(c.ID)
				cs.setOutcomes(&counts)
			}
			out = append(out, cs)
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	})
}
