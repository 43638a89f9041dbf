package explain

import (
	"strconv"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/rtb"
)

// The auction's explain trace: one method per thing the debug endpoint
// reports, each returning at once on a nil receiver (the bid path's
// value), so the decision reads without explain code beside it and builds
// no string when nobody asks. The types are in explain.go.

// Dry reports whether this is a debug run: its bid is not sent, so it
// counts, records, charges and learns nothing.
func (e *Explain) Dry() bool { return e != nil }

// NoServableImp notes that no imp can be served.
func (e *Explain) NoServableImp() {
	e.Note("no imp has a banner or native object, nor a video one that a campaign with a VAST template could serve")
}

// NoCurrency notes that no currency of the request has a rate.
func (e *Explain) NoCurrency(cur []string) {
	if e != nil {
		e.Note("none of the request's currencies %v has a rate in bidder.fx_rates", cur)
	}
}

// Fraud notes the fraud lists' block.
func (e *Explain) Fraud(nbr rtb.NoBidReason) {
	if e != nil {
		e.Note("blocked by the fraud lists: %s", nbr)
	}
}

// UserFailed notes that uid's lookup failed: problem, then err.
func (e *Explain) UserFailed(uid, problem string, err error) {
	if e != nil {
		e.SetUser(uid, false, problem+err.Error())
	}
}

// MatchRejections returns where campaign.Set.Match writes its rejections: nil
// (none kept) when ie is.
func (ie *ImpExplain) MatchRejections() *campaign.Rejections {
	if ie == nil {
		return nil
	}
	return &campaign.Rejections{}
}

// NoProducts notes c's rejection: no products of its group.
func (ie *ImpExplain) NoProducts(c *campaign.Campaign) {
	if ie != nil {
		ie.Campaign(c.ID, "rejected", "user has no viewed or recommended products in group "+strconv.FormatInt(c.ProductGroupID, 10), 0, 0, "")
	}
}

// NoCreative notes c's rejection: no creative for imp.
func (ie *ImpExplain) NoCreative(c *campaign.Campaign, imp *openrtb2.Imp, secure bool) {
	if ie == nil {
		return
	}
	why := "no creative for this imp"
	if secure && imp.Video != nil && c.Creative.VASTPlainHTTP {
		why = "secure imp and the VAST template has http URLs"
	}
	ie.Campaign(c.ID, "rejected", why, 0, 0, "")
}

// NoCampaignRate notes c's rejection: its currency has no rate.
func (ie *ImpExplain) NoCampaignRate(c *campaign.Campaign) {
	if ie != nil {
		ie.Campaign(c.ID, "rejected", "campaign currency "+c.Currency+" has no rate in bidder.fx_rates", 0, 0, "")
	}
}

// NoFloorRate: the floor's currency has no rate to cur; own says whether
// the request's own rates were the only ones asked.
func (ie *ImpExplain) NoFloorRate(c *campaign.Campaign, floorCur, cur string, own bool, price int64, deal string) {
	if ie == nil {
		return
	}
	why := "floor currency " + floorCur + " has no rate in bidder.fx_rates"
	if own {
		why = "floor currency " + floorCur + " has no rate to " + cur + " in the request's ext.prebid.currency.rates (usepbsrates: false)"
	}
	ie.Campaign(c.ID, "rejected", why, price, 0, deal)
}
