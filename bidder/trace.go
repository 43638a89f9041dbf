package bidder

import (
	"strconv"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/rtb"
)

// The auction's explain trace: one method per thing the debug endpoint
// reports, each returning at once on a nil receiver (the bid path's
// value), so the decision reads without explain code beside it and builds
// no string when nobody asks. The types are in debug.go.

// dry reports whether this is a debug run: its bid is not sent, so it
// counts, records, charges and learns nothing.
func (e *Explain) dry() bool { return e != nil }

func (e *Explain) noServableImp() {
	e.note("no imp has a banner or native object, nor a video one that a campaign with a VAST template could serve")
}

func (e *Explain) noCurrency(cur []string) {
	if e != nil {
		e.note("none of the request's currencies %v has a rate in bidder.fx_rates", cur)
	}
}

func (e *Explain) fraud(nbr rtb.NoBidReason) {
	if e != nil {
		e.note("blocked by the fraud lists: %s", nbr)
	}
}

// userFailed notes that uid's lookup failed: problem, then err.
func (e *Explain) userFailed(uid, problem string, err error) {
	if e != nil {
		e.setUser(uid, false, problem+err.Error())
	}
}

// matchRejections returns where campaign.Set.Match writes its rejections: nil
// (none kept) when ie is.
func (ie *ImpExplain) matchRejections() *campaign.Rejections {
	if ie == nil {
		return nil
	}
	return &campaign.Rejections{}
}

func (ie *ImpExplain) noProducts(c *campaign.Campaign) {
	if ie != nil {
		ie.campaign(c.ID, "rejected", "user has no viewed or recommended products in group "+strconv.FormatInt(c.ProductGroupID, 10), 0, 0, "")
	}
}

func (ie *ImpExplain) noCreative(c *campaign.Campaign, imp *openrtb2.Imp, secure bool) {
	if ie == nil {
		return
	}
	why := "no creative for this imp"
	if secure && imp.Video != nil && c.Creative.VASTPlainHTTP {
		why = "secure imp and the VAST template has http URLs"
	}
	ie.campaign(c.ID, "rejected", why, 0, 0, "")
}

func (ie *ImpExplain) noCampaignRate(c *campaign.Campaign) {
	if ie != nil {
		ie.campaign(c.ID, "rejected", "campaign currency "+c.Currency+" has no rate in bidder.fx_rates", 0, 0, "")
	}
}

// noFloorRate: the floor's currency has no rate to cur; own says whether
// the request's own rates were the only ones asked.
func (ie *ImpExplain) noFloorRate(c *campaign.Campaign, floorCur, cur string, own bool, price int64, deal string) {
	if ie == nil {
		return
	}
	why := "floor currency " + floorCur + " has no rate in bidder.fx_rates"
	if own {
		why = "floor currency " + floorCur + " has no rate to " + cur + " in the request's ext.prebid.currency.rates (usepbsrates: false)"
	}
	ie.campaign(c.ID, "rejected", why, price, 0, deal)
}

func (ie *ImpExplain) overBudget(c *campaign.Campaign, nbr rtb.NoBidReason, why spend.Reason, price, floor int64, deal string) {
	if ie != nil {
		ie.campaign(c.ID, "rejected", budgetWhy(nbr, why), price, floor, deal)
	}
}

// candidate notes candidate cd's decision and, for the bid, how it was
// priced.
func (ie *ImpExplain) candidate(cd *candidate, decision, reason string) {
	if ie != nil {
		ie.campaign(cd.c.ID, decision, reason, cd.price, cd.floor, cd.dealID)
	}
}

func (ie *ImpExplain) notTried(cd *candidate) {
	if ie != nil {
		ie.candidate(cd, "not tried", "outbid; "+strconv.Itoa(maxTries)+" candidates tried already")
	}
}

// failed notes that cd failed at stage (catalog, creative) for nbr.
func (ie *ImpExplain) failed(cd *candidate, stage string, nbr rtb.NoBidReason) {
	if ie != nil {
		ie.candidate(cd, "rejected", stage+": "+nbr.String())
	}
}

// bid notes cd's bid with n products, then the outbid rest.
func (ie *ImpExplain) bid(cd *candidate, n int, rest []candidate) {
	if ie == nil {
		return
	}
	ie.candidate(cd, "bid", cd.kind.String()+" with "+strconv.Itoa(n)+" products")
	ie.shading(cd)
	for j := range rest {
		ie.candidate(&rest[j], "outbid", "")
		ie.shading(&rest[j])
	}
	ie.done(bidMade, "")
}
