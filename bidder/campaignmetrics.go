package bidder

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/campaign"
)

// Per-campaign spend gauges. Their campaign label comes from the campaign
// set (the campaigns file or table), never from a request, so the series
// are as many as the campaigns; money is in micros of the campaign's
// currency (the currency label).
var (
	campaignLabels      = []string{"campaign", "currency"}
	descCampaignToday   = prometheus.NewDesc("rtbd_spend_campaign_today_micros", "Today's spend of a campaign (its time zone's day) as this bidder knows it: the fleet total last read plus this bidder's unconfirmed spend, in micros of the campaign's currency.", campaignLabels, nil)
	descCampaignTotal   = prometheus.NewDesc("rtbd_spend_campaign_total_micros", "Lifetime spend of a campaign as this bidder knows it (fleet total last read plus unconfirmed), in micros of its currency.", campaignLabels, nil)
	descCampaignDaily   = prometheus.NewDesc("rtbd_spend_campaign_daily_budget_micros", "Daily budget of a campaign in micros of its currency (0: none).", campaignLabels, nil)
	descCampaignBudget  = prometheus.NewDesc("rtbd_spend_campaign_total_budget_micros", "Total (lifetime) budget of a campaign in micros of its currency (0: none).", campaignLabels, nil)
	descCampaignPacing  = prometheus.NewDesc("rtbd_spend_campaign_pacing_allowed_micros", "What even pacing allows a campaign to have spent by now today, in micros of its currency (0: asap pacing or no daily budget).", campaignLabels, nil)
	descCampaignBidding = prometheus.NewDesc("rtbd_spend_campaign_bidding", "1 while a campaign may bid (active, within its budgets and pacing), else 0.", []string{"campaign"}, nil)
	campaignSpendDescs  = []*prometheus.Desc{descCampaignToday, descCampaignTotal, descCampaignDaily, descCampaignBudget, descCampaignPacing, descCampaignBidding}
)

// campaignSpendCollector exports the budget state of every campaign of the
// current set at each scrape (what GET /admin/campaigns shows).
type campaignSpendCollector struct{ b *Bidder }

func (c campaignSpendCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range campaignSpendDescs {
		ch <- d
	}
}

func (c campaignSpendCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	bg, set := b.opts.Budgets, b.opts.Campaigns.Current()
	if bg == nil || set == nil {
		return
	}
	now := b.opts.Now()
	for _, cp := range set.All() {
		st := bg.Status(*b.budgetOf(set, cp), now)
		gauge := func(d *prometheus.Desc, micros int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(micros), cp.ID, cp.Currency)
		}
		gauge(descCampaignToday, st.DayMicros)
		gauge(descCampaignTotal, st.TotalMicros)
		gauge(descCampaignDaily, st.DailyBudgetMicros)
		gauge(descCampaignBudget, st.TotalBudgetMicros)
		gauge(descCampaignPacing, st.PacingAllowedMicros)
		bidding := 0.0
		if st.Bidding && (cp.Status == "" || cp.Status == campaign.StatusActive) {
			bidding = 1
		}
		ch <- prometheus.MustNewConstMetric(descCampaignBidding, prometheus.GaugeValue, bidding, cp.ID)
	}
}
