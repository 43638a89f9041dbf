package bidder

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/dsa"
	"github.com/rtbd/rtbd/bidder/privacy"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog/catalogpb"
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

// fetched caches one product lookup within a request (several imps of one
// request often want the same group's products).
type fetched struct {
	group      int64
	q1, q2     int32
	start, end int // st.products[start:end]
	state      uint8
}

// States of a fetched lookup.
const (
	fetchDone     = iota // answered: st.products[start:end]
	fetchPending         // collected for the batch, not yet asked
	fetchFailed          // the batch failed: technical error
	fetchDeadline        // the batch missed the deadline
)

// Budget checks at selection (selectCands).
const (
	budgetsNow      = iota // check every candidate's now
	budgetsDeferBid        // defer those whose campaign is a candidate of an earlier imp
	budgetsDeferAll        // defer all
)

// maxTries bounds the candidates tried per imp when the best ones have no
// products (each try is one catalog lookup).
const maxTries = 3

// reasonRank orders no-bid reasons: of the reasons the imps of a request
// got, the response reports the one that got furthest.
func reasonRank(r rtb.NoBidReason) float64 {
	switch r {
	case rtb.NoBidTechnicalError:
		return 6
	case rtb.NoBidInsecure:
		return 5.5
	case rtb.NoBidBelowFloor:
		return 5
	case rtb.NoBidNoProducts:
		return 4
	case rtb.NoBidInvalidRequest:
		return 3
	case rtb.NoBidUnsupportedImpType:
		return 2
	case rtb.NoBidFrequencyCapped:
		return 1.75
	case rtb.NoBidBudgetExhausted:
		return 1.5
	case rtb.NoBidDSA:
		return 1.3
	case rtb.NoBidIncompleteSupplyChain, rtb.NoBidAdsTxtUnavailable, rtb.NoBidAdsTxtViolation, rtb.NoBidBlockedSupplyChainNode:
		return 1.25
	case rtb.NoBidNoMatchingCampaign:
		return 1
	}
	return 0
}

func worse(a, b rtb.NoBidReason) rtb.NoBidReason {
	if reasonRank(b) > reasonRank(a) {
		return b
	}
	return a
}

// auction decides the bids for st.req (decoded and validated) at now, and
// fills st.resp. It returns bidMade or the no-bid reason. ex, when not
// nil, records why each campaign did or did not bid (debug endpoint).
func (b *Bidder) auction(st *reqState, now time.Time, ex *Explain) rtb.NoBidReason {
	req := &st.req
	m := st.m
	st.now = now
	set := b.opts.Campaigns.Current()
	if set == nil || set.Len() == 0 {
		ex.note("no campaigns loaded")
		return rtb.NoBidNoMatchingCampaign
	}
	sig := privacy.FromRequest(req, &st.exts)
	if d := sig.Decide(b.opts.GDPRVendorID); !d.Allowed() {
		ex.setPrivacy(d.String())
		return rtb.NoBidPrivacy
	}
	ex.setPrivacy("ok")
	b.explainPath(st, ex)
	if !anyServable(set, req) {
		if ex != nil {
			ex.note("no imp has a banner or native object, nor a video one that a campaign with a VAST template could serve")
		}
		return rtb.NoBidUnsupportedImpType
	}
	st.fxOwn = b.rates()
	cur := b.responseCurrency(req, st.fxOwn)
	if cur == "" {
		if ex != nil {
			ex.note("none of the request's currencies %v has a rate in bidder.fx_rates", req.Cur)
		}
		return rtb.NoBidNoMatchingCampaign
	}
	st.resp.Cur = cur
	uid, matchable := "", false
	if u := req.User; u != nil {
		uid = u.BuyerUID
		if uid == "" {
			// user.id is the exchange's own id: resolved through the
			// match table (/match), else taken as rtbd's uid.
			uid = u.ID
			matchable = uid != "" && b.matchStore != nil
		}
	}
	if b.opts.Fraud != nil {
		if blocked, nbr := b.fraudCheck(req, uid); blocked {
			if ex != nil {
				ex.note("blocked by the fraud lists: %s", nbr)
			}
			return nbr
		}
	}
	if uid == "" {
		ex.setUser("", false, "no user.buyeruid or user.id")
		return rtb.NoBidUnmatchedUser
	}
	t := time.Now()
	if !t.Before(st.deadline) {
		m.misses[missUser].Inc()
		return rtb.NoBidDeadline
	}
	var found bool
	var err error
	if matchable {
		st.matchKey = user.MatchKey(st.matchKey[:0], b.exchanges.list[st.exchange].Name, uid)
		matchable = len(st.matchKey) <= user.MaxUIDLen
	}
	if matchable {
		var got []byte
		got, found, err = b.matchStore.GetMatched(&st.dctx, str(st.matchKey), uid, st.uidBuf[:0], &st.profile)
		if got != nil {
			st.uidBuf, uid = got, str(got)
		}
	} else {
		found, err = b.opts.Users.Get(&st.dctx, uid, &st.profile)
	}
	m.stage[stageUser].Observe(time.Since(t).Seconds())
	if err != nil {
		switch {
		case st.dctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			m.misses[missUser].Inc()
			m.userErrs[errDeadline].Inc()
			if ex != nil {
				ex.setUser(uid, false, "deadline: "+err.Error())
			}
			return rtb.NoBidDeadline
		case errors.Is(err, user.ErrInvalidUID):
			if ex != nil {
				ex.setUser(uid, false, err.Error())
			}
			return rtb.NoBidUnmatchedUser
		case errors.Is(err, user.ErrClosed):
			m.userErrs[errClosed].Inc()
		default:
			m.userErrs[errOther].Inc()
		}
		if ex != nil {
			ex.setUser(uid, false, "store error: "+err.Error())
		}
		return rtb.NoBidTechnicalError
	}
	if !found {
		ex.setUser(uid, false, "unknown user")
		return rtb.NoBidUnmatchedUser
	}
	ex.setUser(uid, true, "")
	ex.setProfile(&st.profile)
	if result, present := st.fxReq.read(&st.exts.Currency); present && ex == nil {
		b.fxm.requestRates[result].Inc()
	}

	if bg := b.opts.Budgets; bg != nil && ex == nil {
		bg.CountOpportunity(now) // the traffic curve of even pacing
	}
	td := time.Now()
	catalogTime := b.plan(st, set, cur, uid, ex != nil)
	reason := rtb.NoBidUnknownError
	for i := range req.Imp {
		nbr, ct := b.bidImp(st, set, i, cur, uid, ex)
		catalogTime += ct
		if nbr == rtb.NoBidDeadline {
			return nbr
		}
		if nbr != bidMade {
			reason = worse(reason, nbr)
		}
	}
	m.stage[stageDecide].Observe((time.Since(td) - catalogTime).Seconds())
	if len(st.bids) == 0 {
		if reason == rtb.NoBidUnknownError {
			reason = rtb.NoBidNoMatchingCampaign
		}
		return reason
	}
	b.buildResponse(st)
	return bidMade
}

// anyServable reports whether some imp of req could get an ad: a banner
// or native imp, or a video imp that a campaign's VAST template fits. It
// saves the user lookup for requests that are video or audio only.
func anyServable(set *campaign.Set, req *openrtb2.BidRequest) bool {
	video := false
	for i := range req.Imp {
		imp := &req.Imp[i]
		if imp.Banner != nil || imp.Native != nil {
			return true
		}
		video = video || imp.Video != nil
	}
	if video {
		for _, c := range set.All() {
			if c.Creative.VAST == "" {
				continue
			}
			for i := range req.Imp {
				if c.VideoFits(req.Imp[i].Video) {
					return true
				}
			}
		}
	}
	return false
}

// responseCurrency is the currency to bid in, codes matched in any case
// and returned in upper case: Options.Currency when the request lists no
// cur; else the floor currency (the bidfloorcur of the first imp with a
// floor) when cur lists it and rates has it, so the exchange compares the
// bid with its floor unconverted; else Options.Currency when cur lists it;
// else the first currency cur lists that rates has; "" if none has.
func (b *Bidder) responseCurrency(req *openrtb2.BidRequest, rates *money.Rates) string {
	if len(req.Cur) == 0 {
		return b.opts.Currency
	}
	if fc := floorCurrency(req); fc != "" && rates.Known(fc) {
		for _, c := range req.Cur {
			if code, _ := money.Code(c); code == fc {
				return fc
			}
		}
	}
	for _, c := range req.Cur {
		if code, _ := money.Code(c); code == b.opts.Currency {
			return code
		}
	}
	for _, c := range req.Cur {
		if code, ok := money.Code(c); ok && rates.Known(code) {
			return code
		}
	}
	return ""
}

// floorCurrency is the upper-case bidfloorcur of the first imp of req
// with a floor, "" if none has one or its code is not ISO 4217.
func floorCurrency(req *openrtb2.BidRequest) string {
	for i := range req.Imp {
		if imp := &req.Imp[i]; imp.BidFloor > 0 {
			code, _ := money.Code(imp.BidFloorCur)
			return code
		}
	}
	return ""
}

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
// st.cands) and, with a BatchProductStore, collects in st.fetched the
// lookups of every candidate that may be tried: per imp, the best
// maxTries of those whose budgets are checked, and the deferred ones
// (budgets checked only when the imp is bid on: they may drop out) ranked
// above the last of them. A plain BatchProductStore is asked them all now,
// in one call; a CachedProductStore is asked each from its cache when
// bidImp's fetch reaches it, the first it lacks asking the rest in one
// call (answerPending). It returns the time spent in the catalog.
//
// The debug run (explain) checks no budget here: bidImp selects again,
// explaining, with the budgets checked as it goes.
func (b *Bidder) plan(st *reqState, set *campaign.Set, cur, uid string, explain bool) time.Duration {
	st.cands = st.cands[:0]
	st.plans = st.plans[:0]
	mode := budgetsDeferBid
	if explain {
		mode = budgetsDeferAll
	}
	for i := range st.req.Imp {
		start := len(st.cands)
		reason, ok, secure := b.selectCands(st, set, i, cur, uid, nil, mode)
		st.plans = append(st.plans, impPlan{start: start, end: len(st.cands), reason: reason, ok: ok, secure: secure})
	}
	if b.batch == nil {
		return 0 // looked up one by one, as bidImp reaches each candidate
	}
	for _, p := range st.plans {
		tries := 0
		for k := p.start; k < p.end && tries < maxTries; k++ {
			cd := &st.cands[k]
			st.want(cd.c)
			if !cd.deferred {
				tries++
			}
		}
	}
	if b.cached != nil {
		return 0
	}
	return b.fetchBatch(st)
}

// selectCands appends to st.cands the candidates of imp i (the campaigns
// that match it, have products of their group in the user's profile, a
// creative for it, a price at least the floor, and budget), highest price
// first. It returns the reason of the best rejection so far, and ok false
// when the imp gets no bid whatever the catalog says (the reason is then
// final and ie done). With Options.Budgets, mode says which candidates'
// budgets and frequency caps are checked now; the others are deferred.
func (b *Bidder) selectCands(st *reqState, set *campaign.Set, i int, cur, uid string, ie *ImpExplain, mode int) (reason rtb.NoBidReason, ok, secure bool) {
	req := &st.req
	imp := &req.Imp[i]
	var rej *campaign.Rejections
	if ie != nil {
		rej = &campaign.Rejections{}
	}
	st.matched = set.Match(req, imp, st.profile.Segments, st.now, st.matched[:0], rej)
	ie.rejections(rej)
	if len(st.matched) == 0 {
		if imp.Banner == nil && imp.Native == nil {
			ie.done(rtb.NoBidUnsupportedImpType, "no banner or native, and no campaign with a VAST template matches")
			return rtb.NoBidUnsupportedImpType, false, false
		}
		ie.done(rtb.NoBidNoMatchingCampaign, "no campaign matches")
		return rtb.NoBidNoMatchingCampaign, false, false
	}
	// A secure imp (imp.secure=1) gets only https: rtbd's URLs from the
	// secure base, products whose image is https, VAST templates without
	// http URLs.
	secure = imp.Secure != nil && *imp.Secure == 1
	if secure && !b.secureURLs.ok {
		ie.done(rtb.NoBidInsecure, "secure imp and no https base: set bidder.secure_public_url")
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
			if ie != nil {
				ie.campaign(c.ID, "rejected", "user has no viewed or recommended products in group "+strconv.FormatInt(g, 10), 0, 0, "")
			}
			continue
		}
		kind, w, h := chooseMedia(c, imp, secure)
		if kind == mediaNone {
			reason = worse(reason, rtb.NoBidUnsupportedImpType)
			if ie != nil {
				why := "no creative for this imp"
				if secure && imp.Video != nil && c.Creative.VASTPlainHTTP {
					why = "secure imp and the VAST template has http URLs"
				}
				ie.campaign(c.ID, "rejected", why, 0, 0, "")
			}
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
			if ie != nil {
				ie.campaign(c.ID, "rejected", "campaign currency "+c.Currency+" has no rate in bidder.fx_rates", 0, 0, "")
			}
			continue
		}
		floor, floorCur := impFloor, impFloorCur
		dealID, dealFloor, dealCur, isDeal := set.MatchDeal(c, imp)
		if !isDeal {
			dealID = ""
		} else if dealFloor > 0 {
			floor, floorCur = dealFloor, dealCur
		}
		f, ok := st.fxReq.convertFloor(rates, floor, floorCur, cur)
		if !ok {
			reason = worse(reason, rtb.NoBidBelowFloor)
			if ie != nil {
				why := "floor currency " + floorCur + " has no rate in bidder.fx_rates"
				if st.fxReq.custom && !st.fxReq.usePBS {
					why = "floor currency " + floorCur + " has no rate to " + cur + " in the request's ext.prebid.currency.rates (usepbsrates: false)"
				}
				ie.campaign(c.ID, "rejected", why, price, 0, dealID)
			}
			continue
		}
		if price <= 0 || price < f {
			reason = worse(reason, rtb.NoBidBelowFloor)
			ie.campaign(c.ID, "rejected", "bid below the floor", price, f, dealID)
			continue
		}
		deferred := false
		if b.opts.Budgets != nil {
			// A campaign that may bid on an earlier imp of the request is
			// checked after that bid is recorded (spend.Budgets.Bid), as
			// its exposure then counts it.
			if mode == budgetsDeferAll || mode == budgetsDeferBid && candidateOf(st.cands[:first], c) {
				deferred = true
			} else if nbr, why := b.budgetOK(st, set, c, uid); nbr != bidMade {
				reason = worse(reason, nbr)
				if ie != nil {
					ie.campaign(c.ID, "rejected", budgetWhy(nbr, why), price, f, dealID)
				}
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
func (b *Bidder) budgetOK(st *reqState, set *campaign.Set, c *campaign.Campaign, uid string) (rtb.NoBidReason, spend.Reason) {
	bg := b.opts.Budgets
	cb := b.budgetOf(set, c)
	if ok, why := budgetCheck(bg, cb, st.req.Test == 1, st.now); !ok {
		return rtb.NoBidBudgetExhausted, why
	}
	if cb.FreqCap > 0 && !bg.FreqOK(*cb, uid, st.now) {
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

// bidImp runs the auction of imp i: at most one bid, the highest price
// among the matching campaigns that have products for the user. It returns
// bidMade or the reason, and the time spent in the catalog.
func (b *Bidder) bidImp(st *reqState, set *campaign.Set, i int, cur, uid string, ex *Explain) (rtb.NoBidReason, time.Duration) {
	var (
		cs     []candidate
		reason rtb.NoBidReason
		secure bool
		ie     *ImpExplain
	)
	if ex != nil {
		// The debug run selects again, explaining each campaign, with the
		// budgets checked now (plan deferred them all).
		ie = ex.imp(&st.req.Imp[i])
		start := len(st.cands)
		r, ok, sec := b.selectCands(st, set, i, cur, uid, ie, budgetsNow)
		if !ok {
			return r, 0
		}
		cs, reason, secure = st.cands[start:], r, sec
	} else {
		p := &st.plans[i]
		if !p.ok {
			return p.reason, 0
		}
		cs, reason, secure = st.cands[p.start:p.end], p.reason, p.secure
		// The deferred candidates' budgets, now that the earlier imps'
		// bids are recorded.
		n := 0
		for k := range cs {
			if cs[k].deferred {
				cs[k].deferred = false
				if nbr, _ := b.budgetOK(st, set, cs[k].c, uid); nbr != bidMade {
					reason = worse(reason, nbr)
					continue
				}
			}
			cs[n] = cs[k]
			n++
		}
		cs = cs[:n]
	}
	st.urls = &b.urls
	if secure {
		st.urls = &b.secureURLs
	}
	return b.tryCands(st, i, cs, reason, secure, cur, uid, ex, ie)
}

// tryCands tries the candidates cs of imp i, highest price first, until
// one bids: at most maxTries, each one catalog lookup (from st.fetched
// when plan fetched it).
func (b *Bidder) tryCands(st *reqState, i int, cs []candidate, reason rtb.NoBidReason, secure bool, cur, uid string, ex *Explain, ie *ImpExplain) (rtb.NoBidReason, time.Duration) {
	var catalogTime time.Duration
	for k := range cs {
		cd := &cs[k]
		if k >= maxTries {
			if ie != nil {
				ie.campaign(cd.c.ID, "not tried", "outbid; "+strconv.Itoa(maxTries)+" candidates tried already", cd.price, cd.floor, cd.dealID)
			}
			continue
		}
		t := time.Now()
		products, nbr := b.fetch(st, cd.c)
		catalogTime += time.Since(t)
		if nbr == rtb.NoBidDeadline {
			ie.campaign(cd.c.ID, "rejected", "deadline passed in the catalog lookup", cd.price, cd.floor, cd.dealID)
			return nbr, catalogTime
		}
		if nbr != bidMade {
			reason = worse(reason, nbr)
			if ie != nil {
				ie.campaign(cd.c.ID, "rejected", "catalog: "+nbr.String(), cd.price, cd.floor, cd.dealID)
			}
			continue
		}
		if secure {
			if products = st.httpsOnly(products); len(products) == 0 {
				reason = worse(reason, rtb.NoBidNoProducts)
				ie.campaign(cd.c.ID, "rejected", "secure imp and no product with an https image", cd.price, cd.floor, cd.dealID)
				continue
			}
		}
		if nbr := b.addBid(st, i, cd, products, cur, uid, secure); nbr != bidMade {
			reason = worse(reason, nbr)
			if ie != nil {
				ie.campaign(cd.c.ID, "rejected", "creative: "+nbr.String(), cd.price, cd.floor, cd.dealID)
			}
			continue
		}
		if bg := b.opts.Budgets; bg != nil && ex == nil && st.req.Test != 1 { // an Explain's bid is not sent; a test bid is never billed
			bg.Bid(cd.c.ID, cd.charge, st.now)
		}
		if ex == nil {
			b.recordBid(st, i, cd, products, cur)
		}
		if ex == nil && st.req.Test != 1 {
			b.learnBid(cd, st.now)
		}
		if ie != nil {
			ie.campaign(cd.c.ID, "bid", cd.kind.String()+" with "+strconv.Itoa(len(products))+" products", cd.price, cd.floor, cd.dealID)
			ie.shading(cd)
		}
		for j := k + 1; j < len(cs); j++ {
			rest := &cs[j]
			ie.campaign(rest.c.ID, "outbid", "", rest.price, rest.floor, rest.dealID)
			ie.shading(rest)
		}
		ie.done(bidMade, "")
		return bidMade, catalogTime
	}
	ie.done(reason, "")
	return reason, catalogTime
}

// fetch returns the products of c for the user in st.profile: one
// ProductMastersRequest (viewed ids, then recommended, quantities from the
// creative template), cached per request: found in st.fetched when plan's
// batch (or an earlier imp) asked it, else asked now. bidMade means
// products were found.
func (b *Bidder) fetch(st *reqState, c *campaign.Campaign) ([]*catalogpb.Product, rtb.NoBidReason) {
	g := c.ProductGroupID
	q1, q2 := c.Creative.Quantities()
	for k := range st.fetched {
		f := &st.fetched[k]
		if f.group == g && f.q1 == q1 && f.q2 == q2 {
			if f.state == fetchPending {
				b.answerPending(st, k)
			}
			switch f.state {
			case fetchDeadline:
				st.m.misses[missCatalog].Inc()
				return nil, rtb.NoBidDeadline
			case fetchFailed:
				return nil, rtb.NoBidTechnicalError
			}
			if f.end == f.start {
				return nil, rtb.NoBidNoProducts
			}
			return st.products[f.start:f.end], bidMade
		}
	}
	if !time.Now().Before(st.deadline) {
		st.m.misses[missCatalog].Inc()
		return nil, rtb.NoBidDeadline
	}
	pm := st.pm
	pm.ProductGroupId = g
	pm.Product1QuantityAtMost, pm.Product1Ids = q1, st.profile.ViewedIn(g)
	pm.Product2QuantityAtMost, pm.Product2Ids = q2, st.profile.RecommendedIn(g)
	pm.SimilarToViewed = len(pm.Product2Ids) == 0 // no Recommended: products like the viewed ones
	t := time.Now()
	resp, err := b.opts.Products.GetProductMasters(&st.dctx, pm)
	st.m.stage[stageCatalog].Observe(time.Since(t).Seconds())
	pm.Product1Ids, pm.Product2Ids = nil, nil
	if err != nil {
		kind := catalogErrKind(err)
		st.m.catErrs[kind].Inc()
		if kind == errDeadline || st.dctx.Err() != nil {
			st.m.misses[missCatalog].Inc()
			return nil, rtb.NoBidDeadline
		}
		return nil, rtb.NoBidTechnicalError
	}
	start := len(st.products)
	st.addProducts(resp)
	st.fetched = append(st.fetched, fetched{group: g, q1: q1, q2: q2, start: start, end: len(st.products)})
	if len(st.products) == start {
		return nil, rtb.NoBidNoProducts
	}
	return st.products[start:], bidMade
}

// addProducts appends the products of resp to st.products: the viewed
// ones, then the recommended ones not among them.
func (st *reqState) addProducts(resp *catalogpb.ProductMastersResponse) {
	start := len(st.products)
	for _, list := range [2][]*catalogpb.Product{resp.GetProduct1S(), resp.GetProduct2S()} {
		for _, p := range list {
			if p == nil || containsProduct(st.products[start:], p.ProductId) {
				continue // recommended may repeat a viewed product
			}
			st.products = append(st.products, p)
		}
	}
}

// want adds c's lookup to the batch plan collects in st.fetched (state
// fetchPending; its request st.pmBatch[index]), once per group and
// quantities.
func (st *reqState) want(c *campaign.Campaign) {
	g := c.ProductGroupID
	q1, q2 := c.Creative.Quantities()
	for _, f := range st.fetched {
		if f.group == g && f.q1 == q1 && f.q2 == q2 {
			return
		}
	}
	n := len(st.fetched)
	if n == len(st.pmBatch) {
		st.pmBatch = append(st.pmBatch, &catalogpb.ProductMastersRequest{})
	}
	pm := st.pmBatch[n]
	pm.ProductGroupId = g
	pm.Product1QuantityAtMost, pm.Product1Ids = q1, st.profile.ViewedIn(g)
	pm.Product2QuantityAtMost, pm.Product2Ids = q2, st.profile.RecommendedIn(g)
	pm.SimilarToViewed = len(pm.Product2Ids) == 0 // no Recommended: products like the viewed ones
	st.fetched = append(st.fetched, fetched{group: g, q1: q1, q2: q2, state: fetchPending})
}

// answerPending answers the pending lookup st.fetched[k] from b.cached's
// cache when it can, else asks every lookup still pending in one call
// (fetchBatch).
func (b *Bidder) answerPending(st *reqState, k int) {
	if t := time.Now(); b.cached != nil && t.Before(st.deadline) {
		if b.cached.GetProductMastersCached(st.pmBatch[k], &st.pmCached) {
			st.m.stage[stageCatalog].Observe(time.Since(t).Seconds())
			f := &st.fetched[k]
			f.start = len(st.products)
			st.addProducts(&st.pmCached)
			f.end, f.state = len(st.products), fetchDone
			resetResp(&st.pmCached)
			return
		}
	}
	b.fetchBatch(st)
}

// fetchBatch asks b.batch, in one call under the request's deadline, the
// lookups of st.fetched still pending (want collected them), and settles
// them: answered, failed (counted by error kind) or past the deadline (the
// miss is counted when a candidate needs it, as fetch counts one). It
// returns the call's time.
func (b *Bidder) fetchBatch(st *reqState) time.Duration {
	st.pending, st.pmAsk = st.pending[:0], st.pmAsk[:0]
	for k := range st.fetched {
		if st.fetched[k].state == fetchPending {
			st.pending = append(st.pending, k)
			st.pmAsk = append(st.pmAsk, st.pmBatch[k])
		}
	}
	n := len(st.pending)
	if n == 0 {
		return 0
	}
	reqs := st.pmAsk
	defer clear(st.pmAsk)
	if !time.Now().Before(st.deadline) {
		st.settle(fetchDeadline)
		return 0
	}
	for len(st.pmResps) < n {
		st.pmResps = append(st.pmResps, nil)
	}
	resps := st.pmResps[:n]
	t := time.Now()
	err := b.batch.GetProductMastersBatch(&st.dctx, reqs, resps)
	d := time.Since(t)
	st.m.stage[stageCatalog].Observe(d.Seconds())
	defer resetResps(resps)
	if err != nil {
		kind := catalogErrKind(err)
		st.m.catErrs[kind].Inc()
		if kind == errDeadline || st.dctx.Err() != nil {
			st.settle(fetchDeadline)
		} else {
			st.settle(fetchFailed)
		}
		return d
	}
	for j, k := range st.pending {
		f := &st.fetched[k]
		f.start = len(st.products)
		st.addProducts(resps[j])
		f.end, f.state = len(st.products), fetchDone
	}
	return d
}

// resetResps empties the answers of a batch for the next one, keeping
// them and their lists' capacity (so that a batch the near cache answers
// allocates nothing) but no product of this one.
func resetResps(resps []*catalogpb.ProductMastersResponse) {
	for _, r := range resps {
		if r != nil {
			resetResp(r)
		}
	}
}

func resetResp(r *catalogpb.ProductMastersResponse) {
	clear(r.Product1S)
	clear(r.Product2S)
	r.Product1S, r.Product2S, r.Version = r.Product1S[:0], r.Product2S[:0], nil
}

// settle gives every pending lookup of st.fetched the state s.
func (st *reqState) settle(s uint8) {
	for _, k := range st.pending {
		st.fetched[k].state = s
	}
}

// httpsOnly returns the products of ps a secure creative may show: all but
// those whose image URL is plain http (a product without a usable image
// URL shows none, so it stays). It filters into st.secure, reused by the
// request's imps; ps itself is returned when it has nothing to drop.
func (st *reqState) httpsOnly(ps []*catalogpb.Product) []*catalogpb.Product {
	drop := false
	for _, p := range ps {
		if p != nil && creative.PlainHTTP(p.ImageUrl) {
			drop = true
			break
		}
	}
	if !drop {
		return ps
	}
	st.secure = st.secure[:0]
	for _, p := range ps {
		if p != nil && !creative.PlainHTTP(p.ImageUrl) {
			st.secure = append(st.secure, p)
		}
	}
	return st.secure
}

func containsProduct(ps []*catalogpb.Product, id int64) bool {
	for _, p := range ps {
		if p.ProductId == id {
			return true
		}
	}
	return false
}

// str returns the bytes of the arena from start as a string without
// copying. The arena is only appended to during a request, so the bytes do
// not change; the string keeps its backing array alive if the arena grows.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// addBid renders the creative and adds the bid of candidate cd on imp i.
// Its URLs start with st.urls (secure: products and template already
// checked for https).
func (b *Bidder) addBid(st *reqState, i int, cd *candidate, products []*catalogpb.Product, cur, uid string, secure bool) rtb.NoBidReason {
	req := &st.req
	imp := &req.Imp[i]
	c := cd.c
	a := len(st.arena)
	st.newNonce() // carried by both tokens of the bid

	// crid: campaign-template-format, e.g. "c1-medium-300x250".
	st.arena = append(st.arena, c.ID...)
	st.arena = append(st.arena, '-')
	tmpl := c.Creative.Template
	if tmpl == "" {
		tmpl = campaign.TemplateMedium
	}
	st.arena = append(st.arena, tmpl...)
	st.arena = append(st.arena, '-')
	switch cd.kind {
	case mediaBanner:
		st.arena = strconv.AppendInt(st.arena, cd.w, 10)
		st.arena = append(st.arena, 'x')
		st.arena = strconv.AppendInt(st.arena, cd.h, 10)
	default:
		st.arena = append(st.arena, cd.kind.String()...)
	}
	crid := str(st.arena[a:])

	// The bid is signed once (token.Keys.AppendBid): the exchange token
	// serves its nurl, burl and lurl, the markup token its impression
	// tracker and the click links, which add their product id to it (the
	// token lists the products that get a link).
	st.clickIDs = st.clickIDs[:0]
	var group int64
	for _, p := range products {
		if p == nil {
			continue
		}
		if group == 0 {
			group = p.ProductGroupId
		}
		if hasLanding(c, p) {
			st.clickIDs = append(st.clickIDs, p.ProductId)
		}
	}
	x := &b.exchanges.list[st.exchange]
	st.tok = token.Token{
		Issued: st.now, Expires: st.now.Add(b.opts.NoticeTTL), ClickExpires: st.now.Add(b.opts.ClickTTL),
		Campaign: c.ID, Creative: crid, Auction: st.req.ID, Imp: imp.ID, User: uid,
		PriceMicros: cd.price, ValueMicros: cd.value, Currency: cur, Group: group, Products: st.clickIDs,
		Nonce: st.nonce, Billing: x.Billing, Test: req.Test == 1,
	}
	if st.exchange != 0 {
		st.tok.Exchange = x.Name
	}
	shadedToken(&st.tok, cd)
	a = len(st.arena)
	mid := 0
	var err error
	st.arena, mid, err = b.opts.Keys.AppendBid(st.arena, &st.tok)
	st.tok = token.Token{}
	if err != nil {
		st.arena = st.arena[:a]
		return rtb.NoBidTechnicalError
	}
	exchTok, markupTok := str(st.arena[a:mid]), st.arena[mid:len(st.arena):len(st.arena)]
	st.link = link{c: c}
	if len(st.clickIDs) > 0 {
		st.link.tok = markupTok
	}
	// The creative's own impression tracker (/imp): native and video
	// always, banners with the pixel option or when the render bills.
	impURL := ""
	if cd.kind != mediaBanner || b.opts.BannerImpPixel || x.Billing == token.BillingRender {
		impURL = st.noticeURL(st.urls.imp, str(markupTok), priceMacro)
	}
	a = len(st.arena)
	var mtype openrtb2.MarkupType
	switch cd.kind {
	case mediaBanner:
		st.banner = creativeBanner(st, cd, products)
		st.banner.ImpURL = impURL
		if st.banner.DSALabel, _ = b.dsaLabel(st, cd); st.banner.DSALabel != "" {
			a = len(st.arena) // the label stays in the arena, before the markup
		}
		st.arena = creative.AppendBanner(st.arena, &st.banner)
		mtype = openrtb2.MarkupBanner
	case mediaNative:
		if st.nativeImp != i {
			st.nativeImp = i
			st.nativeErr = creative.ParseNative(imp.Native.Request, &st.native)
		}
		if st.nativeErr != nil {
			st.arena = st.arena[:a]
			return rtb.NoBidInvalidRequest
		}
		label, nbr := b.dsaLabel(st, cd)
		if nbr != bidMade {
			return nbr
		}
		if label != "" {
			a = len(st.arena)
		}
		st.nat = creative.Native{Request: &st.native, Products: products, Advertiser: c.Advertiser, DSALabel: label, Links: st, Resize: b.resizeFor(secure), ImpURL: impURL}
		var err error
		if st.arena, err = creative.AppendNative(st.arena, &st.nat); err != nil {
			st.arena = st.arena[:a]
			return rtb.NoBidUnsupportedImpType
		}
		mtype = openrtb2.MarkupNative
	case mediaVideo:
		st.vast = creative.VAST{Template: c.Creative.VAST, Products: products, Advertiser: c.Advertiser, Links: st, ImpURL: impURL, Secure: secure}
		st.arena = creative.AppendVAST(st.arena, &st.vast)
		mtype = openrtb2.MarkupVideo
	}
	adm := str(st.arena[a:])
	if mtype == openrtb2.MarkupBanner && adm != "" {
		st.safeAdM = append(st.safeAdM, unsafe.StringData(adm)) // JSON-safe by AppendBanner's contract
	}

	a = len(st.arena)
	st.arena = append(st.arena, b.bidIDPrefix...)
	st.arena = strconv.AppendUint(st.arena, b.bidSeq.Add(1), 36)
	bidID := str(st.arena[a:])

	nurl := st.noticeURL(st.urls.win, exchTok, winMacros)
	burl := st.noticeURL(st.urls.bill, exchTok, winMacros)
	lurl := st.noticeURL(st.urls.loss, exchTok, lossMacros)
	seat := c.Seat
	if seat == "" {
		seat = b.opts.Seat
	}
	st.bids = append(st.bids, openrtb2.Bid{
		ID:      bidID,
		ImpID:   imp.ID,
		Price:   money.Float(cd.price),
		NURL:    nurl,
		BURL:    burl,
		LURL:    lurl,
		AdM:     adm,
		AdID:    c.ID,
		ADomain: c.ADomain,
		Bundle:  c.Bundle,
		CID:     c.ID,
		CrID:    crid,
		Cat:     c.Cat,
		Attr:    c.Creative.Attr,
		DealID:  cd.dealID,
		W:       cd.w,
		H:       cd.h,
		Exp:     b.exp,
		MType:   mtype,
	})
	dsaExt(st, &cd.dsa, &st.bids[len(st.bids)-1])
	st.seats = append(st.seats, seat)
	return bidMade
}

func creativeBanner(st *reqState, cd *candidate, products []*catalogpb.Product) creative.Banner {
	return creative.Banner{W: int(cd.w), H: int(cd.h), Products: products, Advertiser: cd.c.Advertiser, Links: st, Cells: st.b.cells}
}

// The query after a notice URL's token: the price macro (the impression
// tracker), with the minimum bid to win (nurl, burl: on a win, the price
// to tie, for bid shading), and for the lurl (see serveLoss) the loss
// reason and the price that would have won.
const (
	priceMacro = "&p=${AUCTION_PRICE}"
	winMacros  = "&p=${AUCTION_PRICE}&m=${AUCTION_MIN_TO_WIN}"
	lossMacros = "&r=${AUCTION_LOSS}&m=${AUCTION_MIN_TO_WIN}"
)

// noticeURL appends prefix + tok + macros to the arena and returns it.
func (st *reqState) noticeURL(prefix, tok, macros string) string {
	a := len(st.arena)
	st.arena = append(st.arena, prefix...)
	st.arena = append(st.arena, tok...)
	st.arena = append(st.arena, macros...)
	return str(st.arena[a:])
}

// AppendClickURL implements creative.Linker: the /click URL of product p
// of the bid being rendered: the bid's markup token, a dot, the
// product id (one of the ids the token signs). Nothing is appended when
// the product has no usable landing URL.
func (st *reqState) AppendClickURL(dst []byte, p *catalogpb.Product) []byte {
	if !st.linked(p) {
		return dst
	}
	dst = append(dst, st.urls.click...)
	dst = append(dst, st.link.tok...)
	dst = append(dst, clickSep)
	return strconv.AppendInt(dst, p.ProductId, 10)
}

// AppendClickBase implements creative.BaseLinker: PublicURL/click/TOKEN/
// (SecurePublicURL on a secure imp), the bid's markup token once per
// banner, unless Options.AbsoluteClicks.
func (st *reqState) AppendClickBase(dst []byte) []byte {
	if st.b.opts.AbsoluteClicks || st.link.c == nil || len(st.link.tok) == 0 {
		return dst
	}
	dst = append(dst, st.urls.clickBase...)
	dst = append(dst, st.link.tok...)
	return append(dst, '/')
}

// AppendClickRef implements creative.BaseLinker: product p's link relative
// to AppendClickBase, its id; nothing when it has no landing URL.
func (st *reqState) AppendClickRef(dst []byte, p *catalogpb.Product) []byte {
	if !st.linked(p) {
		return dst
	}
	return strconv.AppendInt(dst, p.ProductId, 10)
}

// linked reports whether product p of the bid being rendered gets a click
// link: the bid has a markup token and p is one of the ids it lists (those
// with a landing URL).
func (st *reqState) linked(p *catalogpb.Product) bool {
	return st.link.c != nil && len(st.link.tok) > 0 && slices.Contains(st.clickIDs, p.ProductId)
}

// clickSep separates the token and the product id in a click URL's t
// parameter: not a base64url character, and safe in a URL and in an HTML
// attribute unescaped.
const clickSep = '.'

// landingURL is p's landing URL if it is an absolute http(s) URL; else,
// when the campaign has a click base, the landing URL resolved against it
// (a path is appended to it; nothing usable gives the click base itself).
// c may be nil (a campaign since removed): then only an absolute URL.
func landingURL(c *campaign.Campaign, p *catalogpb.Product) string {
	if creative.IsHTTPURL(p.LandingUrl) {
		return p.LandingUrl
	}
	if c == nil || !creative.IsHTTPURL(c.Creative.ClickBase) {
		return ""
	}
	base := c.Creative.ClickBase
	l := p.LandingUrl
	if !relativeOK(l) {
		return base
	}
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	for len(l) > 0 && l[0] == '/' {
		l = l[1:]
	}
	return base + "/" + l
}

// hasLanding reports whether landingURL(c, p) is not empty, without
// building it (the bid path calls it for every product).
func hasLanding(c *campaign.Campaign, p *catalogpb.Product) bool {
	return creative.IsHTTPURL(p.LandingUrl) || c != nil && creative.IsHTTPURL(c.Creative.ClickBase)
}

// relativeOK reports whether l can be appended to a click base.
func relativeOK(l string) bool {
	if l == "" || len(l) > 2048 {
		return false
	}
	for i := 0; i < len(l); i++ {
		if ch := l[i]; ch <= ' ' || ch == 0x7f || ch == '"' || ch == '\'' || ch == '<' || ch == '>' || ch == '\\' {
			return false
		}
	}
	return true
}

// buildResponse fills st.resp from st.bids: one seatbid per seat.
func (b *Bidder) buildResponse(st *reqState) {
	st.resp.ID = st.req.ID
	same := true
	for _, s := range st.seats {
		if s != st.seats[0] {
			same = false
			break
		}
	}
	if same {
		st.seatbids = append(st.seatbids[:0], openrtb2.SeatBid{Bid: st.bids, Seat: st.seats[0]})
		st.resp.SeatBid = st.seatbids
		return
	}
	st.grouped = st.grouped[:0]
	st.seatbids = st.seatbids[:0]
	for i, s := range st.seats {
		seen := false
		for _, sb := range st.seatbids {
			if sb.Seat == s {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		start := len(st.grouped)
		for j := i; j < len(st.bids); j++ {
			if st.seats[j] == s {
				st.grouped = append(st.grouped, st.bids[j])
			}
		}
		st.seatbids = append(st.seatbids, openrtb2.SeatBid{Seat: s, Bid: st.grouped[start:len(st.grouped):len(st.grouped)]})
	}
	// st.grouped may have moved while growing: re-slice every seatbid.
	off := 0
	for k := range st.seatbids {
		n := len(st.seatbids[k].Bid)
		st.seatbids[k].Bid = st.grouped[off : off+n]
		off += n
	}
	st.resp.SeatBid = st.seatbids
}

// resizeFor is the image resize service for an imp: none on a secure imp
// when the service's URL is not https (its images would load over http).
func (b *Bidder) resizeFor(secure bool) *creative.ResizeURL {
	if secure && !creative.IsHTTPSURL(b.opts.ImageResizeURL) {
		return nil
	}
	return b.resize
}
