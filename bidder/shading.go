package bidder

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb/money"
)

// Bid shading (package bidder/shading), as the bidder wires it.
//
// # Which bids
//
// A candidate's auction type is its deal's at where a deal of the imp
// applies (pmp.deals[].at; absent: the request's), else the request's at
// (2 when absent). Only a first-price bid (at 1) of a campaign with
// bid_shading: auto is shaded: its price is the one in [floor, value] that
// maximises (value - price) x P(win | price) for its segment, the value
// being the campaign's bid (bid_cpm times its strategy) in the response
// currency. Second-price auctions, fixed-price deals (at 3: the deal's
// bidfloor is the price) and bid_shading: off bid the value, as without
// shading. Candidates of an imp are ranked by value; the price sent is the
// shaded one.
//
// # Segments and tokens
//
// A first-price bid's segment is exchange x publisher (site or app
// publisher id, else the site domain or app bundle) x format and size
// (shading.Segment); its notice tokens carry the segment id and the price
// bucket, so whichever bidder a notice lands on attributes it without a
// lookup. A bid that is not first price carries segment 0 and teaches
// nothing (its m is a second price).
//
// # What a notice teaches
//
// Wins (the notice that charges the bid) and losses (reasons 102 and 100)
// with their m: package notice, once per bid and per bidder, only from a
// verified token.
//
// # A fleet learns as one
//
// The spend store keeps the counts too (shading.Store: Pebble a single
// bidder's own across restarts, Redis and Aerospike the fleet's): a
// background loop Syncs every shading.fleet_interval (flush what settled
// here, read the fleet's counts of the segments held), and the bidder
// process (bidder/server) loads the fleet's counts, coarse segments
// first, before serving. The bid path never waits for the store.

// newShader builds the Bidder's Shader from Options.Shading and the
// exchanges (their index is the exchange of a segment id).
func newShader(o *shading.Options, xs exchange.Set) *shading.Shader {
	if o == nil {
		return nil
	}
	so := *o
	so.Exchanges = make([]shading.Exchange, len(xs.List))
	for i, x := range xs.List {
		so.Exchanges[i] = shading.Exchange{LossNotices: x.LossNotices, NoticeWait: x.NoticeWait}
	}
	return shading.New(so)
}

// Shader is the Bidder's bid shading (nil without Options.Shading): its
// Refresh must run periodically (Start does it every
// shading.refresh_interval).
func (b *Bidder) Shader() *shading.Shader { return b.shader }

// auctionType is the auction type of a bid on imp: the deal's at when
// dealID (a deal of imp) has one, else the request's, 2 when absent.
func auctionType(req *openrtb2.BidRequest, imp *openrtb2.Imp, dealID string) shading.AuctionType {
	at := req.AT
	if dealID != "" && imp.PMP != nil {
		for k := range imp.PMP.Deals {
			if d := &imp.PMP.Deals[k]; d.ID == dealID && d.AT != 0 {
				at = d.AT
				break
			}
		}
	}
	switch at {
	case 1:
		return shading.FirstPrice
	case 3:
		return shading.FixedPrice
	}
	return shading.SecondPrice
}

// publisherOf is the request's publisher for its segment: the site's or
// app's publisher id, else the site domain or app bundle.
func publisherOf(req *openrtb2.BidRequest) string {
	switch {
	case req.Site != nil && req.Site.Publisher != nil && req.Site.Publisher.ID != "":
		return req.Site.Publisher.ID
	case req.App != nil && req.App.Publisher != nil && req.App.Publisher.ID != "":
		return req.App.Publisher.ID
	case req.Site != nil && req.Site.Domain != "":
		return req.Site.Domain
	case req.App != nil:
		return req.App.Bundle
	}
	return ""
}

var shadingFormats = [...]shading.Format{mediaBanner: shading.FormatBanner, mediaNative: shading.FormatNative, mediaVideo: shading.FormatVideo}

// shade prices candidate cd (its price the value) for imp: sets cd.value,
// cd.seg (0 unless first price) and cd.how, and cd.price to the shaded
// price. No allocation.
func (b *Bidder) shade(st *reqState, imp *openrtb2.Imp, cd *candidate) {
	cd.value = cd.price
	at := auctionType(&st.req, imp, cd.dealID)
	if at == shading.FirstPrice {
		cd.seg = shading.Segment(st.exchange, publisherOf(&st.req), shadingFormats[cd.kind], cd.w, cd.h)
	}
	d := b.shader.Price(cd.seg, at, cd.c.BidShading != campaign.ShadingOff, cd.value, cd.floor)
	cd.price, cd.how, cd.shadeLevel, cd.winProb = d.Price, d.How, d.Level, d.WinProb
	if cd.price != cd.value && cd.value > 0 {
		// The exposure of the bid at its shaded price.
		cd.charge = int64(float64(cd.charge) * float64(cd.price) / float64(cd.value))
	}
}

// shadingNote is the debug endpoint's line on how cd's price was set.
func shadingNote(cd *candidate) string {
	v, p := money.Format(cd.value), money.Format(cd.price)
	switch cd.how {
	case shading.HowOff:
		if cd.seg == 0 {
			return "not shaded: the value " + v
		}
		return "not shaded (bid_shading: off): the value " + v
	case shading.HowSecondPrice:
		return "not shaded (second-price auction): the value " + v
	case shading.HowFixedPrice:
		return "not shaded (fixed-price deal): the value " + v
	case shading.HowNoData:
		return "first price, no segment with enough observations yet: the value " + v
	case shading.HowExploredCold:
		return "first price, no segment with enough observations yet: explored at " + p + " (value " + v + ")"
	}
	s := "shaded from " + v + " to " + p + " with the estimate of segment " + strconv.FormatUint(uint64(cd.seg.At(int(cd.shadeLevel))), 16) +
		" (level " + [...]string{"exchange", "publisher", "format"}[cd.shadeLevel] + ", P(win) " + strconv.FormatFloat(cd.winProb, 'f', 3, 64) + ")"
	if cd.how == shading.HowExplored {
		s += ", then moved at random (exploration)"
	}
	return s
}

// shadedToken sets a bid token's shading fields: its value before
// shading, and for a first-price bid its segment and price bucket (0 and
// 0 otherwise).
func shadedToken(t *token.Token, cd *candidate) {
	t.ValueMicros = cd.value
	if cd.seg != 0 {
		t.Segment, t.Bucket = uint32(cd.seg), shading.Bucket(cd.price)
	}
}

// learnBid counts a bid made (not a test bid nor a debug run's).
func (b *Bidder) learnBid(cd *candidate, now time.Time) {
	if b.shader == nil {
		return
	}
	b.sm.Bid(cd.how)
	if cd.seg != 0 {
		b.shader.Bid(cd.seg, cd.price, now)
	}
}

// ShadingHandler serves GET /admin/shading (the admin listener):
// shading.Handler of the Bidder's Shader and exchanges.
func (b *Bidder) ShadingHandler() http.Handler {
	return shading.Handler(b.shader, b.exchanges.Names())
}

// CountShadingFleet counts one read or write of the fleet's shading counts
// in rtbd_shading_fleet_total: a load (at start) or a sync, ok or not.
// Nil-safe without shading.
func (b *Bidder) CountShadingFleet(load, ok bool) {
	if b.shader == nil || b.sm == nil {
		return
	}
	b.sm.Fleet(load, ok)
}

// pacedBid is campaign c's bid for st.req (micros of its currency): its
// bid_cpm times its strategy, times its pacing multiplier (even pacing
// with a daily budget: spend.Budgets.PaceMultiplier) unless the request is
// a test. Bid shading then prices this paced value.
func (b *Bidder) pacedBid(st *reqState, set *campaign.Set, c *campaign.Campaign) int64 {
	bid := c.BidMicros(&st.req, st.now)
	if bg := b.opts.Budgets; bg != nil && st.req.Test != 1 && c.Pacing == campaign.PacingEven && c.DailyBudgetMicros > 0 {
		if m := bg.PaceMultiplier(b.budgetOf(set, c), st.now); m < 1 {
			bid = int64(float64(bid) * m)
		}
	}
	return bid
}
