package bidder

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/rtb"
)

// delayedBills sends n bid requests for money (daily budget 0.03 USD: 20
// impressions at the 1.5 CPM bid) and calls the burl of each bid (cleared
// at the bid price, 1500 micros) delay requests later, the rest at the end.
// It returns the bids made and the micros charged.
func delayedBills(t *testing.T, mf *moneyFixture, cb spend.CampaignBudget, n, delay int) (bids int, charged int64) {
	t.Helper()
	due := map[int][]string{}
	fire := func(burls []string) {
		for _, u := range burls {
			if st := mf.notice(u, "1.5"); st != 204 {
				t.Fatalf("bill: status %d", st)
			}
		}
	}
	req := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	for i := range n {
		fire(due[i])
		delete(due, i)
		r := mf.bid(withUser(t, req, userBulk, "id", "delayed-"+strconv.Itoa(i)))
		var resp struct {
			NBR     int `json:"nbr"`
			SeatBid []struct {
				Bid []struct {
					BURL string `json:"burl"`
				} `json:"bid"`
			} `json:"seatbid"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &resp) != nil {
			t.Fatalf("bid %d: %d %.300s", i, r.status, r.body)
		}
		if len(resp.SeatBid) == 0 {
			if resp.NBR != int(rtb.NoBidBudgetExhausted) {
				t.Fatalf("bid %d: nbr %d, want a bid or 501", i, resp.NBR)
			}
			continue
		}
		bids++
		u := resp.SeatBid[0].Bid[0].BURL[len("https://bid.example.com"):]
		due[i+delay] = append(due[i+delay], u)
	}
	for _, u := range due {
		fire(u)
	}
	return bids, mf.bg.Status(cb, mf.clock.Now()).TotalMicros
}

// TestExposureDelayedBills: through the bid endpoint and /bill, with every
// billing notice arriving 5 bid requests after its bid, the bidder stops at
// the budget's 20 impressions; without exposure it bids on while the bills
// are in flight and overshoots.
func TestExposureDelayedBills(t *testing.T) {
	const budget, charge = 30_000, 1500
	set := moneyCampaigns(t, "    daily_budget: 0.03\n")
	cb := spend.FromCampaign(mustGetF(t, set, "money"))
	with := newMoneyFixture(t, set)
	bids, charged := delayedBills(t, with, cb, 60, 5)
	without := newMoneyFixture(t, set, func(o *Options) {
		o.Budgets = spend.NewBudgets(o.Spend, spend.BudgetOptions{ExposureWindow: -1})
	})
	bidsNo, chargedNo := delayedBills(t, without, cb, 60, 5)
	t.Logf("daily budget %d micros, bills 5 requests late: with exposure %d bids, %d micros charged; without %d bids, %d micros",
		budget, bids, charged, bidsNo, chargedNo)
	if charged > budget || bids != budget/charge {
		t.Errorf("with exposure: %d bids, %d micros charged; want %d bids and at most %d", bids, charged, budget/charge, budget)
	}
	if chargedNo <= budget {
		t.Errorf("without exposure: %d micros charged, want an overshoot of %d", chargedNo, budget)
	}
}
