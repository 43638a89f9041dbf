package bidder

import (
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/dsa"
	"github.com/rtbd/rtbd/bidder/explain"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// media is the kind of ad a candidate serves on an imp.
type media uint8

const (
	mediaNone media = iota
	mediaBanner
	mediaNative
	mediaVideo
)

func (k media) String() string {
	switch k {
	case mediaBanner:
		return "banner"
	case mediaNative:
		return "native"
	case mediaVideo:
		return "video"
	}
	return "none"
}

// candidate is a campaign that may bid on an imp, with its price in
// micros of the response currency.
type candidate struct {
	c      *campaign.Campaign
	price  int64
	floor  int64
	dealID string
	kind   media
	w, h   int64
	// charge is the most one impression of the bid costs, in micros of
	// the campaign's currency (its exposure, spend.Budgets.Bid).
	charge int64
	// deferred: its budgets and frequency cap are checked when its imp is
	// bid on, not at selection (see selectCands).
	deferred bool
	// dsa is what its bid says under the EU DSA (supplycheck.go).
	dsa dsa.Decision
	// value is the price before bid shading (see shading.go); seg the
	// bid's shading segment (0 unless first price), how and shadeLevel how
	// price was set, winProb the estimated P(win) at it.
	value      int64
	seg        shading.SegmentID
	how        shading.How
	shadeLevel int8
	winProb    float64
}

// impPlan is the outcome of candidate selection for one imp (plan).
type impPlan struct {
	start, end int // st.cands[start:end], highest price first
	reason     rtb.NoBidReason
	ok         bool // false: the imp gets no bid, for reason
	secure     bool
}

// Budget checks at selection (selectCands).
const (
	budgetsNow      = iota // check every candidate's now
	budgetsDeferBid        // defer those whose campaign is a candidate of an earlier imp
	budgetsDeferAll        // defer all
)

// chooseMedia returns what c serves on imp: a banner of the first imp
// size c has, else native, else video from the campaign's VAST template
// when what it declares fits imp.video (the bid's w/h: imp.video.w/h, else
// the template's declared size); on a secure imp only a template without
// http URLs.
func chooseMedia(c *campaign.Campaign, imp *openrtb2.Imp, secure bool) (media, int64, int64) {
	if w, h, ok := c.BannerSize(imp); ok {
		return mediaBanner, w, h
	}
	if imp.Native != nil && c.Creative.Native {
		return mediaNative, 0, 0
	}
	if c.VideoFits(imp.Video) && !(secure && c.Creative.VASTPlainHTTP) {
		w, h := c.VideoSize(imp.Video)
		return mediaVideo, w, h
	}
	return mediaNone, 0, 0
}

// plan selects the candidates of every imp of st.req (st.plans[i], in
// st.cands) and, when the product store answers in batches, tells the
// fetcher the lookups of every candidate that may be tried: per imp, the
// best maxTries of those whose budgets are checked, and the deferred ones
// (budgets checked only when the imp is bid on: they may drop out) ranked
// above the last of them; then lets it prefetch them (catalog.Fetcher). It
// returns the time spent in the catalog.
//
// The debug run (explain) checks no budget here: bidImp selects again,
// explaining, with the budgets checked as it goes.
func (b *Bidder) plan(st *reqState) time.Duration {
	st.cands = st.cands[:0]
	st.plans = st.plans[:0]
	mode := budgetsDeferBid
	if st.a.ex.Dry() {
		mode = budgetsDeferAll
	}
	for i := range st.req.Imp {
		start := len(st.cands)
		reason, ok, secure := b.selectCands(st, i, nil, mode)
		st.plans = append(st.plans, impPlan{start: start, end: len(st.cands), reason: reason, ok: ok, secure: secure})
	}
	if !b.products.Batched() {
		return 0 // looked up one by one, as bidImp reaches each candidate
	}
	for _, p := range st.plans {
		tries := 0
		for k := p.start; k < p.end && tries < maxTries; k++ {
			cd := &st.cands[k]
			b.products.Want(&st.lookups, st.query(cd.c))
			if !cd.deferred {
				tries++
			}
		}
	}
	return b.products.Prefetch(&st.dctx, &st.lookups, st.deadline)
}

// selectCands appends to st.cands the candidates of imp i (the campaigns
// that match it, have products of their group in the user's profile, a
// creative for it, a price at least the floor, and budget), highest price
// first. It returns the reason of the best rejection so far, and ok false
// when the imp gets no bid whatever the catalog says (the reason is then
// final and ie done). With Options.Budgets, mode says which candidates'
// budgets and frequency caps are checked now; the others are deferred.
func (b *Bidder) selectCands(st *reqState, i int, ie *explain.ImpExplain, mode int) (reason rtb.NoBidReason, ok, secure bool) {
	set, cur := st.a.set, st.a.cur
	req := &st.req
	imp := &req.Imp[i]
	rej := ie.MatchRejections()
	st.matched = set.Match(req, imp, st.profile.Segments, st.now, st.matched[:0], rej)
	ie.Rejections(rej)
	if len(st.matched) == 0 {
		if imp.Banner == nil && imp.Native == nil {
			explainDone(ie, rtb.NoBidUnsupportedImpType, "no banner or native, and no campaign with a VAST template matches")
			return rtb.NoBidUnsupportedImpType, false, false
		}
		explainDone(ie, rtb.NoBidNoMatchingCampaign, "no campaign matches")
		return rtb.NoBidNoMatchingCampaign, false, false
	}
	// A secure imp (imp.secure=1) gets only https: rtbd's URLs from the
	// secure base, products whose image is https, VAST templates without
	// http URLs.
	secure = imp.Secure != nil && *imp.Secure == 1
	if secure && !b.secureURLs.ok {
		explainDone(ie, rtb.NoBidInsecure, "secure imp and no https base: set bidder.secure_public_url")
		return rtb.NoBidInsecure, false, true
	}
	reason = rtb.NoBidNoMatchingCampaign
	impFloor, impFloorCur := money.FromFloat(imp.BidFloor), imp.BidFloorCur
	rates := st.fxOwn
	first := len(st.cands)
	for _, c := range st.matched {
		g := c.ProductGroupID
		if len(st.profile.ViewedIn(g)) == 0 && len(st.profile.RecommendedIn(g)) == 0 {
			reason = worse(reason, rtb.NoBidNoProducts)
			ie.NoProducts(c)
			continue
		}
		kind, w, h := chooseMedia(c, imp, secure)
		if kind == mediaNone {
			reason = worse(reason, rtb.NoBidUnsupportedImpType)
			ie.NoCreative(c, imp, secure)
			continue
		}
		dd, nbr := b.pathCheck(st, c, kind, ie)
		if nbr != bidMade {
			reason = worse(reason, nbr)
			continue
		}
		bid := b.pacedBid(st, set, c)
		price, ok := rates.Convert(bid, c.Currency, cur)
		if !ok {
			ie.NoCampaignRate(c)
			continue
		}
		floor, floorCur := impFloor, impFloorCur
		dealID, dealFloor, dealCur, isDeal := set.MatchDeal(c, imp)
		if !isDeal {
			dealID = ""
		} else if dealFloor > 0 {
			floor, floorCur = dealFloor, dealCur
		}
		f, ok := st.fxReq.ConvertFloor(rates, floor, floorCur, cur)
		if !ok {
			reason = worse(reason, rtb.NoBidBelowFloor)
			ie.NoFloorRate(c, floorCur, cur, st.fxReq.RequestOnly(), price, dealID)
			continue
		}
		if price <= 0 || price < f {
			reason = worse(reason, rtb.NoBidBelowFloor)
			ie.Campaign(c.ID, "rejected", "bid below the floor", price, f, dealID)
			continue
		}
		deferred := false
		if b.opts.Budgets != nil {
			// A campaign that may bid on an earlier imp of the request is
			// checked after that bid is recorded (spend.Budgets.Bid), as
			// its exposure then counts it.
			if mode == budgetsDeferAll || mode == budgetsDeferBid && candidateOf(st.cands[:first], c) {
				deferred = true
			} else if nbr, why := b.budgetOK(st, c); nbr != bidMade {
				reason = worse(reason, nbr)
				explainOverBudget(ie, c, nbr, why, price, f, dealID)
				continue
			}
		}
		st.cands = append(st.cands, candidate{c: c, price: price, floor: f, dealID: dealID, kind: kind, w: w, h: h,
			charge: money.PerImpression(bid), deferred: deferred, dsa: dd})
		b.shade(st, imp, &st.cands[len(st.cands)-1])
	}
	// Highest value first (insertion sort: a handful of candidates; stable,
	// so equal values keep the file order).
	cs := st.cands[first:]
	for a := 1; a < len(cs); a++ {
		for j := a; j > 0 && cs[j].value > cs[j-1].value; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	return reason, true, secure
}

// candidateOf reports whether c is the campaign of one of cs.
func candidateOf(cs []candidate, c *campaign.Campaign) bool {
	for k := range cs {
		if cs[k].c == c {
			return true
		}
	}
	return false
}

// budgetOK checks c's budgets and pacing, then the user's frequency cap
// (Options.Budgets is set): bidMade, or the no-bid reason (and, for a
// budget, spend's reason).
func (b *Bidder) budgetOK(st *reqState, c *campaign.Campaign) (rtb.NoBidReason, spend.Reason) {
	bg := b.opts.Budgets
	cb := b.budgetOf(st.a.set, c)
	if ok, why := budgetCheck(bg, cb, st.req.Test == 1, st.now); !ok {
		return rtb.NoBidBudgetExhausted, why
	}
	if cb.FreqCap > 0 && !bg.FreqOK(*cb, st.a.uid, st.now) {
		return rtb.NoBidFrequencyCapped, spend.ReasonNone
	}
	return bidMade, spend.ReasonNone
}

// budgetWhy is the debug endpoint's line for a budgetOK rejection.
func budgetWhy(nbr rtb.NoBidReason, why spend.Reason) string {
	if nbr == rtb.NoBidFrequencyCapped {
		return "frequency cap reached for this user"
	}
	return "budget: " + why.String()
}

// budgetOf returns c's CampaignBudget (spend.BudgetCache).
func (b *Bidder) budgetOf(set *campaign.Set, c *campaign.Campaign) *spend.CampaignBudget {
	return b.budgets.Of(set, c)
}

// budgetCheck is bg.Check, except for a test request (test: 1), which is
// never billed: it skips budgets and pacing, so it bids even for a campaign
// out of budget.
func budgetCheck(bg *spend.Budgets, cb *spend.CampaignBudget, test bool, now time.Time) (bool, spend.Reason) {
	if test {
		return true, spend.ReasonNone
	}
	return bg.Check(*cb, now)
}
