package bidder

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/rtb/money"
	"github.com/rtbd/rtbd/rtb/money/moneytest"
)

// TestMoneyPaths feeds the moneytest amounts through every path of the
// bidder that turns text or a float into micros: campaign bids and budgets
// (the campaign file), the imp floor (the auction, seen through Explain),
// deal floors (Set.MatchDeal) and currency conversion, and checks each
// gives the table's micros and saturation. Package notice's test feeds
// the same table through notice prices, ingest/feed's through product
// prices.
func TestMoneyPaths(t *testing.T) {
	f := newFixture(t, nil)
	request := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	dc, ok := f.set.Get("deal-agency1")
	if !ok {
		t.Fatal("no deal-agency1 campaign")
	}
	for _, a := range moneytest.Amounts {
		name := strconv.Quote(a.Text)
		quoted, _ := json.Marshal(a.Text) // a YAML double-quoted scalar
		textOK := a.Err == nil

		// Campaign bid: > 0 as well.
		bid, problems := parseCampaign(t, "bid_cpm: "+string(quoted))
		switch {
		case textOK && a.Micros > 0:
			if problems != "" || bid.BidCPMMicros != a.Micros {
				t.Errorf("%s: bid_cpm = %d, %q; want %d", name, bid.BidCPMMicros, problems, a.Micros)
			}
		case !strings.Contains(problems, "campaigns[0].bid_cpm:"):
			t.Errorf("%s: bid_cpm accepted: %d", name, bid.BidCPMMicros)
		}

		// Campaign budgets: 0 is unlimited, and so is an empty value (a
		// budget not given).
		c, problems := parseCampaign(t, "bid_cpm: 1\n    daily_budget: "+string(quoted)+"\n    total_budget: "+string(quoted))
		switch {
		case a.Text == "":
			if problems != "" || c.DailyBudgetMicros != 0 || c.TotalBudgetMicros != 0 {
				t.Errorf("%s: budgets = %d/%d, %q; want unlimited", name, c.DailyBudgetMicros, c.TotalBudgetMicros, problems)
			}
		case textOK:
			if problems != "" || c.DailyBudgetMicros != a.Micros || c.TotalBudgetMicros != a.Micros {
				t.Errorf("%s: budgets = %d/%d, %q; want %d", name, c.DailyBudgetMicros, c.TotalBudgetMicros, problems, a.Micros)
			}
		case !strings.Contains(problems, "campaigns[0].daily_budget:") || !strings.Contains(problems, "campaigns[0].total_budget:"):
			t.Errorf("%s: budgets accepted: %d/%d, %q", name, c.DailyBudgetMicros, c.TotalBudgetMicros, problems)
		case errors.Is(a.Err, money.ErrNegative) && a.Text != "-0" && !strings.Contains(problems, "must be >= 0"):
			t.Errorf("%s: negative budget: %q", name, problems)
		}

		// Deal floor: any float.
		imp := &openrtb2.Imp{ID: "1", PMP: &openrtb2.PMP{Deals: []openrtb2.Deal{{ID: "AB-Agency1-0001", BidFloor: a.Float}}}}
		if _, floor, _, ok := f.set.MatchDeal(dc, imp); !ok || floor != a.FloatMicros {
			t.Errorf("%v: deal floor = %d, %v; want %d", a.Float, floor, ok, a.FloatMicros)
		}

		// Conversion saturates the same way: Max stays Max into a currency
		// of smaller units, 0 stays 0.
		if a.FloatMicros == money.Max || a.FloatMicros == 0 {
			for _, cur := range [][2]string{{"USD", "JPY"}, {"EUR", "USD"}, {"usd", "USD"}} {
				down, _ := f.b.opts.Rates.Convert(a.FloatMicros, cur[0], cur[1])
				up, _ := f.b.opts.Rates.ConvertUp(a.FloatMicros, cur[0], cur[1])
				if down != a.FloatMicros || up != a.FloatMicros {
					t.Errorf("%v: %s->%s = %d/%d, want %d", a.Float, cur[0], cur[1], down, up, a.FloatMicros)
				}
			}
		}

		// Imp floor, through the auction: bidfloor in a bid request.
		if !a.JSON() {
			continue
		}
		body := withFloor(t, request, strconv.FormatFloat(a.Float, 'g', -1, 64))
		ex := f.b.Explain(withUser(t, body, userBulk))
		if a.Float < 0 {
			if ex.NBR != 2 {
				t.Errorf("%v: bidfloor accepted: %+v", a.Float, ex)
			}
			continue
		}
		seen := 0
		for _, imp := range ex.Imps {
			for _, ce := range imp.Campaigns {
				if ce.PriceMicros == 0 { // rejected before the floor was compared
					continue
				}
				seen++
				if ce.FloorMicros != a.FloatMicros {
					t.Errorf("%v: auction floor of %s = %d, want %d", a.Float, ce.ID, ce.FloorMicros, a.FloatMicros)
				}
			}
		}
		if seen == 0 {
			t.Errorf("%v: no campaign reached the floor: %+v", a.Float, ex)
		}
	}
}

// withFloor returns the bid request body with imp[0].bidfloor set to the
// JSON number floor and bidfloorcur USD.
func withFloor(t *testing.T, body []byte, floor string) []byte {
	t.Helper()
	return editJSON(t, body, func(m map[string]any) {
		imp := m["imp"].([]any)[0].(map[string]any)
		imp["bidfloor"] = json.Number(floor)
		imp["bidfloorcur"] = "USD"
	})
}

// parseCampaign parses one campaign with the given money fields and
// returns it (zero if the file is invalid) and its problems.
func parseCampaign(t *testing.T, fields string) (campaign.Campaign, string) {
	t.Helper()
	data := "campaigns:\n  - id: money\n    advertiser: Example Shop\n    adomain: [shop.example.com]\n" +
		"    product_group_id: 1\n    status: active\n    " + fields + "\n" +
		"    creative: {template: light, sizes: [\"300x250\"]}\n"
	s, err := campaign.Parse([]byte(data), "money.yaml")
	if err != nil {
		var ve *campaign.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: %v", fields, err)
		}
		return campaign.Campaign{}, strings.Join(ve.Problems, "; ")
	}
	c, ok := s.Get("money")
	if !ok {
		t.Fatalf("%s: no campaign", fields)
	}
	return *c, ""
}
