package demo

import (
	"strconv"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"

	"github.com/rtbd/rtbd/bidder/campaign"
)

// DealID and DealSeat are the deal and seat of the demo's deal
// campaign: those of the OpenRTB 2.6 spec's example request 5 (a private
// auction), so that it gets a bid in the demo.
const (
	DealID   = "AB-Agency1-0001"
	DealSeat = "Agency1"
)

// demoUnits is roughly how many units of a currency make one US dollar, so
// that demo bids clear typical floors whatever the demo currency.
var demoUnits = map[string]int64{
	"JPY": 150, "KRW": 1400, "CNY": 7, "HKD": 8, "TWD": 32, "THB": 36,
	"INR": 85, "PHP": 58, "IDR": 16000, "VND": 25000, "MXN": 18, "BRL": 5,
}

// Campaigns returns the campaigns of the demo environment (`rtbd gen
// -demo`), deterministic for given arguments. For each product group g
// (repeats ignored), three active campaigns that together serve the common IAB sizes (300x250,
// 336x280, 728x90, 160x600, 320x50, 300x50) and native, on every country,
// device type and hour, site and app, without dayparting or caps:
//
//   - demo-<g>-light: 320x50, 300x50, 728x90, template light, bid 1.00;
//   - demo-<g>-medium: 300x250, 336x280 and native, template medium, bid 1.50;
//   - demo-<g>-heavy: 160x600, 300x250, 336x280, template heavy, bid 2.00
//     with multipliers pc x1.2, mobile x0.9.
//
// With at least one group, also demo-deal: deals_only on DealID with
// seat DealSeat (the spec's example request 5), every size and native,
// template medium, bid 3.00, product group groups[0].
//
// All have adomain shop-example.com, cat IAB22 (shopping), pacing asap and
// budgets of 1,000 a day and 100,000 in total. Amounts are in US dollars,
// or the rough equivalent in currency ("" means USD) for a few common
// currencies (JPY x150, KRW x1400, ...), so bids clear typical floors.
func Campaigns(groups []int64, currency string) []*campaign.Campaign {
	if currency == "" {
		currency = "USD"
	}
	unit := int64(1_000_000)
	if f, ok := demoUnits[currency]; ok {
		unit *= f
	}
	amount := func(hundredths int64) int64 { return hundredths * unit / 100 }
	base := func(id, name string, g int64) *campaign.Campaign {
		return &campaign.Campaign{
			ID:                id,
			Name:              name,
			Advertiser:        "Demo Shop",
			ADomain:           []string{"shop-example.com"},
			Cat:               []string{"IAB22"},
			ProductGroupID:    g,
			Status:            campaign.StatusActive,
			TimeZone:          time.UTC,
			Currency:          currency,
			Strategy:          campaign.Strategy{Type: campaign.StrategyFixed},
			DailyBudgetMicros: amount(1_000_00),
			TotalBudgetMicros: amount(100_000_00),
			Pacing:            campaign.PacingASAP,
		}
	}
	var cs []*campaign.Campaign
	seen := make(map[int64]bool, len(groups))
	for _, g := range groups {
		if seen[g] {
			continue // a repeated group would repeat ids
		}
		seen[g] = true
		gs := strconv.FormatInt(g, 10)
		light := base("demo-"+gs+"-light", "Demo group "+gs+": small banners", g)
		light.BidCPMMicros = amount(100)
		light.Creative = campaign.Creative{Template: campaign.TemplateLight, Sizes: [][2]int64{{320, 50}, {300, 50}, {728, 90}}}

		medium := base("demo-"+gs+"-medium", "Demo group "+gs+": rectangles and native", g)
		medium.BidCPMMicros = amount(150)
		medium.Creative = campaign.Creative{Template: campaign.TemplateMedium, Sizes: [][2]int64{{300, 250}, {336, 280}}, Native: true}

		heavy := base("demo-"+gs+"-heavy", "Demo group "+gs+": large formats", g)
		heavy.BidCPMMicros = amount(200)
		heavy.Strategy = campaign.Strategy{Type: campaign.StrategyMultiplier, DeviceType: map[adcom1.DeviceType]float64{
			adcom1.DevicePC: 1.2, adcom1.DeviceMobile: 0.9,
		}}
		heavy.Creative = campaign.Creative{Template: campaign.TemplateHeavy, Sizes: [][2]int64{{160, 600}, {300, 250}, {336, 280}}}
		cs = append(cs, light, medium, heavy)
	}
	if len(groups) > 0 {
		deal := base("demo-deal", "Demo private deal (OpenRTB example request 5)", groups[0])
		deal.BidCPMMicros = amount(300)
		deal.Creative = campaign.Creative{Template: campaign.TemplateMedium, Native: true, Sizes: [][2]int64{
			{300, 250}, {336, 280}, {728, 90}, {160, 600}, {320, 50}, {300, 50},
		}}
		deal.Deals = []string{DealID}
		deal.DealsOnly = true
		deal.Seat = DealSeat
		cs = append(cs, deal)
	}
	return cs
}
