package bidder

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb"
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
// Once per bid and per bidder (the replay set), and only from a verified
// token (a forged notice teaches nothing):
//
//   - the win is the notice that charges the bid under its exchange's
//     billing mode: /bill under burl (an exchange that wins a bid and never
//     fires its burl, because the ad did not render, reads as a loss), /win
//     or /bill under nurl, /imp or /bill under render. Its m (the price to
//     tie: the next bid or the floor) is a minimum bid to win when it is at
//     most the price bid.
//   - a loss notice with reason 102 (lost to a higher bid) or 100 (below
//     the floor) is a loss at the bid's price; its m, when above the bid
//     and within 20 times it (and 1,000 CPM), a minimum bid to win. Other
//     reasons teach nothing.
//   - on an exchange with exchanges.NAME.loss_notices false (the default),
//     a bid with no win within exchanges.NAME.notice_wait is a loss.
//
// An m that is absent, the unfilled macro, not a price, negative, above the
// price on a win, at or below it on a loss, or absurd is not used and is
// counted in rtbd_shading_min_to_win_total by that result.
//
// # A fleet learns as one
//
// The spend store keeps the counts too (shading.Store: Pebble a single
// bidder's own across restarts, Redis and Aerospike the fleet's): a
// background loop Syncs every shading.fleet_interval (flush what settled
// here, read the fleet's counts of the segments held), and the bidder
// process (bidder/server) loads the fleet's counts, coarse segments
// first, before serving. The bid path never waits for the store.

// shadingMetrics are the rtbd_shading_* metrics.
type shadingMetrics struct {
	bids     [shading.NumHow]prometheus.Counter
	minToWin [shading.NumBadMinToWin]prometheus.Counter
	observed [2]prometheus.Counter    // loss, win
	fleet    [2][2]prometheus.Counter // load, sync x error, ok
}

func newShadingMetrics(reg prometheus.Registerer, sh *shading.Shader) (*shadingMetrics, error) {
	bids := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_bids_total",
		Help: "Bids made, by how their price was set: off (bid_shading: off), second_price, fixed_price, no_data (first price, no estimate yet: the value), shaded, explored, explored_cold."},
		[]string{"how"})
	mtw := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_min_to_win_total",
		Help: "The m (minimum bid to win) of win and loss notices that teach bid shading, by result: ok, or why it was not used (absent, macro, not_price, negative, above_bid, below_bid, absurd)."},
		[]string{"result"})
	obs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_observations_total",
		Help: "Wins and losses bid shading learned from (once per bid and bidder)."},
		[]string{"outcome"})
	fleet := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_fleet_total",
		Help: "Reads and writes of the fleet's shading counts in the spend store: op load (at start) or sync (flush and read, every shading.fleet_interval), result ok or error."},
		[]string{"op", "result"})
	segs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_shading_segments",
		Help: "Bid shading segments held (all levels)."}, func() float64 { return float64(sh.Len()) })
	m := &shadingMetrics{}
	for h := range shading.NumHow {
		m.bids[h] = bids.WithLabelValues(h.String())
	}
	for r := range shading.NumBadMinToWin {
		m.minToWin[r] = mtw.WithLabelValues(r.String())
	}
	m.observed[0], m.observed[1] = obs.WithLabelValues("loss"), obs.WithLabelValues("win")
	for i, op := range []string{"load", "sync"} {
		m.fleet[i][0], m.fleet[i][1] = fleet.WithLabelValues(op, "error"), fleet.WithLabelValues(op, "ok")
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{bids, mtw, obs, fleet, segs} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// newShader builds the Bidder's Shader from Options.Shading and the
// exchanges (their index is the exchange of a segment id).
func newShader(o *shading.Options, xs exchangeSet) *shading.Shader {
	if o == nil {
		return nil
	}
	so := *o
	so.Exchanges = make([]shading.Exchange, len(xs.list))
	for i, x := range xs.list {
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

// shaded sets the tokens' shading fields of a bid: its segment and price
// bucket (0 and 0 when not first price) and its value.
func shadedToken(t *token.Token, cd *candidate) {
	setTokenShading(t, cd.value, cd.seg, cd.price)
}

// learnBid counts a bid made (not a test bid nor a debug run's).
func (b *Bidder) learnBid(cd *candidate, now time.Time) {
	if b.shader == nil {
		return
	}
	b.sm.bids[cd.how].Inc()
	if cd.seg != 0 {
		b.shader.Bid(cd.seg, cd.price, now)
	}
}

// learnWin teaches the win of tok's bid (its first charging notice in this
// process), with the notice's m.
func (b *Bidder) learnWin(tok *token.Token, m []byte, now time.Time) {
	seg := tokenSegment(tok)
	if b.shader == nil || seg == 0 {
		return
	}
	v, r := shading.ParseMinToWin(m, tok.PriceMicros, true)
	b.sm.minToWin[r].Inc()
	b.sm.observed[1].Inc()
	b.shader.Observe(seg, tok.PriceMicros, tok.Issued, true, v, r == shading.MinToWinOK, now)
}

// The loss reasons that teach bid shading: 102 and 100.
var lossHigherBid, lossBelowFloor = rtb.LossReasonOf(102), rtb.LossReasonOf(100)

// learnLoss teaches the loss of tok's bid (its first loss notice in this
// process) for reason, with the notice's m.
func (b *Bidder) learnLoss(tok *token.Token, reason rtb.LossReason, m []byte, now time.Time) {
	seg := tokenSegment(tok)
	if b.shader == nil || seg == 0 || (reason != lossHigherBid && reason != lossBelowFloor) {
		return
	}
	v, r := shading.ParseMinToWin(m, tok.PriceMicros, false)
	b.sm.minToWin[r].Inc()
	b.sm.observed[0].Inc()
	b.shader.Observe(seg, tok.PriceMicros, tok.Issued, false, v, r == shading.MinToWinOK, now)
}

// ShadingHandler serves GET /admin/shading (the admin listener): JSON of
// every bid shading segment held (shading.SegmentView: its level, the
// observations, the estimated curve, the last bid it priced), or
// {"enabled": false} without Options.Shading.
func (b *Bidder) ShadingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		out := struct {
			Enabled  bool                  `json:"enabled"`
			Segments []shading.SegmentView `json:"segments"`
		}{Enabled: b.shader != nil, Segments: b.shader.Snapshot(b.exchanges.names())}
		if out.Segments == nil {
			out.Segments = []shading.SegmentView{}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
}

// Operations of rtbd_shading_fleet_total.
const (
	fleetLoad = iota
	fleetSync
)

// CountShadingFleet counts one read or write of the fleet's shading counts
// in rtbd_shading_fleet_total: a load (at start) or a sync, ok or not.
// Nil-safe without shading.
func (b *Bidder) CountShadingFleet(load, ok bool) {
	if b.shader == nil || b.sm == nil {
		return
	}
	op, r := fleetSync, 0
	if load {
		op = fleetLoad
	}
	if ok {
		r = 1
	}
	b.sm.fleet[op][r].Inc()
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
