package bidder

import (
	"context"
	"errors"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/privacy"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
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
	st.a = round{set: set, ex: ex}
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
		ex.noServableImp()
		return rtb.NoBidUnsupportedImpType
	}
	st.fxOwn = b.rates()
	cur := b.responseCurrency(req, st.fxOwn)
	if cur == "" {
		ex.noCurrency(req.Cur)
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
			ex.fraud(nbr)
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
	td := time.Now() // the user stage's end, the decision's start
	m.stage[stageUser].Observe(td.Sub(t).Seconds())
	if err != nil {
		switch {
		case st.dctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			m.misses[missUser].Inc()
			m.userErrs[errDeadline].Inc()
			ex.userFailed(uid, "deadline: ", err)
			return rtb.NoBidDeadline
		case errors.Is(err, user.ErrInvalidUID):
			ex.userFailed(uid, "", err)
			return rtb.NoBidUnmatchedUser
		case errors.Is(err, user.ErrClosed):
			m.userErrs[errClosed].Inc()
		default:
			m.userErrs[errOther].Inc()
		}
		ex.userFailed(uid, "store error: ", err)
		return rtb.NoBidTechnicalError
	}
	if !found {
		ex.setUser(uid, false, "unknown user")
		return rtb.NoBidUnmatchedUser
	}
	ex.setUser(uid, true, "")
	ex.setProfile(&st.profile)
	if result, present := st.fxReq.read(&st.exts.Currency); present && !ex.dry() {
		b.fxm.requestRates[result].Inc()
	}

	if bg := b.opts.Budgets; bg != nil && !ex.dry() {
		bg.CountOpportunity(now) // the traffic curve of even pacing
	}
	st.a.cur, st.a.uid = cur, uid
	catalogTime := b.plan(st)
	reason := rtb.NoBidUnknownError
	for i := range req.Imp {
		nbr, ct := b.bidImp(st, i)
		catalogTime += ct
		if nbr == rtb.NoBidDeadline {
			return nbr
		}
		if nbr != bidMade {
			reason = worse(reason, nbr)
		}
	}
	st.decided = time.Now()
	m.stage[stageDecide].Observe((st.decided.Sub(td) - catalogTime).Seconds())
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

// bidImp runs the auction of imp i: at most one bid, the highest price
// among the matching campaigns that have products for the user. It returns
// bidMade or the reason, and the time spent in the catalog.
func (b *Bidder) bidImp(st *reqState, i int) (rtb.NoBidReason, time.Duration) {
	ex := st.a.ex
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
		r, ok, sec := b.selectCands(st, i, ie, budgetsNow)
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
				if nbr, _ := b.budgetOK(st, cs[k].c); nbr != bidMade {
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
	return b.tryCands(st, i, cs, reason, secure, ie)
}

// tryCands tries the candidates cs of imp i, highest price first, until
// one bids: at most maxTries, each one catalog lookup (from the request's lookups
// when plan fetched it).
func (b *Bidder) tryCands(st *reqState, i int, cs []candidate, reason rtb.NoBidReason, secure bool, ie *ImpExplain) (rtb.NoBidReason, time.Duration) {
	var catalogTime time.Duration
	for k := range cs {
		cd := &cs[k]
		if k >= maxTries {
			ie.notTried(cd)
			continue
		}
		products, nbr, d := b.fetch(st, cd.c)
		catalogTime += d
		if nbr == rtb.NoBidDeadline {
			ie.candidate(cd, "rejected", "deadline passed in the catalog lookup")
			return nbr, catalogTime
		}
		if nbr != bidMade {
			reason = worse(reason, nbr)
			ie.failed(cd, "catalog", nbr)
			continue
		}
		if secure {
			if products = st.httpsOnly(products); len(products) == 0 {
				reason = worse(reason, rtb.NoBidNoProducts)
				ie.candidate(cd, "rejected", "secure imp and no product with an https image")
				continue
			}
		}
		if nbr := b.addBid(st, i, cd, products, secure); nbr != bidMade {
			reason = worse(reason, nbr)
			ie.failed(cd, "creative", nbr)
			continue
		}
		if !st.a.ex.dry() { // a debug run's bid is not sent
			if bg := b.opts.Budgets; bg != nil && st.req.Test != 1 { // a test bid is never billed
				bg.Bid(cd.c.ID, cd.charge, st.now)
			}
			b.recordBid(st, i, cd, products)
			if st.req.Test != 1 {
				b.learnBid(cd, st.now)
			}
		}
		ie.bid(cd, len(products), cs[k+1:])
		return bidMade, catalogTime
	}
	ie.done(reason, "")
	return reason, catalogTime
}
