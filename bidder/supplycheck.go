package bidder

import (
	"fmt"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/dsa"
	"github.com/rtbd/rtbd/bidder/explain"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/rtb"
)

// pathState is a request's supply-path verdict (computed once, when the
// first campaign with a supply setting asks) and the DSA notice label of
// the bid being rendered.
type pathState struct {
	done    bool
	verdict supply.Verdict
	req     supply.Request
	scratch supply.Scratch
}

func (ps *pathState) reset() {
	ps.done = false
	ps.req = supply.Request{}
}

// supplyVerdict returns the request's verdict, computing it the first
// time: the chain of source.schain, else source.ext.schain; the site's or
// app's domains; the exchange's domain.
func (b *Bidder) supplyVerdict(st *reqState) *supply.Verdict {
	ps := &st.path
	if ps.done {
		return &ps.verdict
	}
	req := &st.req
	r := &ps.req
	*r = supply.Request{ExchangeDomain: b.exchanges.List[st.exchange].Domain}
	if s := req.Source; s != nil && s.SChain != nil {
		r.Chain = s.SChain
	} else if len(st.exts.SChain25.Nodes) > 0 {
		r.Chain = &st.exts.SChain25
	}
	if a := req.App; a != nil {
		r.App, r.AppDomain = true, a.Domain
		if a.Publisher != nil {
			r.PublisherDomain = a.Publisher.Domain
		}
	} else if s := req.Site; s != nil {
		r.SiteDomain, r.SitePage = s.Domain, s.Page
	}
	ps.verdict = b.opts.Supply.Index().Check(r, &ps.scratch)
	ps.done = true
	return &ps.verdict
}

// supplyNBR is the OpenRTB no-bid reason of a supply refusal: 16
// (incomplete supply chain), 11 (ads.txt authorization unavailable), 12
// (ads.txt authorization violation) or 17 (blocked supply chain node).
func supplyNBR(r supply.Reason) rtb.NoBidReason {
	switch r {
	case supply.NoChain, supply.Incomplete, supply.BadNode:
		return rtb.NoBidIncompleteSupplyChain
	case supply.NoPublisherDomain, supply.NoAdsTxt:
		return rtb.NoBidAdsTxtUnavailable
	case supply.NotInAdsTxt, supply.AdsTxtRelationship:
		return rtb.NoBidAdsTxtViolation
	}
	return rtb.NoBidBlockedSupplyChainNode
}

// pathCheck applies campaign c's supply setting and the request's DSA
// requirement to c serving kind on imp: bidMade and the DSA decision, or
// the no-bid reason (counted; explained in ie).
func (b *Bidder) pathCheck(st *reqState, c *campaign.Campaign, kind media, ie *explain.ImpExplain) (dsa.Decision, rtb.NoBidReason) {
	if c.Supply.Active() {
		v := b.supplyVerdict(st)
		if why := c.Supply.Refuse(v); why != supply.OK {
			st.m.supplyRefusals[why].Inc()
			if ie != nil {
				ie.Campaign(c.ID, "rejected", "supply: "+v.Explain(&st.path.req, why), 0, 0, "")
			}
			return dsa.Decision{}, supplyNBR(why)
		}
	}
	// Every product of a bid is one of the user's viewed or recommended
	// products: the profile chose them (dsaparams 1).
	d := dsa.Decide(&st.exts.DSA, c.DSA, kind != mediaVideo, b.opts.DSADomain, true /* profiled */)
	if d.Reason != dsa.OK {
		st.m.dsaRefusals[d.Reason].Inc()
		if ie != nil {
			ie.Campaign(c.ID, "rejected", d.Reason.Explain(), 0, 0, "")
		}
		return d, rtb.NoBidDSA
	}
	return d, bidMade
}

// dsaLabel returns the DSA notice the creative of candidate cd renders
// (appended to the arena), "" when it renders none. For native, a request
// without a sponsored data asset that holds it gets the decision again
// for a format that cannot render it: a bid without the notice, or the
// no-bid reason.
func (b *Bidder) dsaLabel(st *reqState, cd *candidate) (string, rtb.NoBidReason) {
	d := &cd.dsa
	if !d.Render {
		return "", bidMade
	}
	a := len(st.arena)
	st.arena = creative.AppendDSALabel(st.arena, d.Ext.Behalf, d.Ext.Paid)
	label := str(st.arena[a:])
	if cd.kind == mediaNative && !st.native.CanShowLabel(label) {
		st.arena = st.arena[:a]
		*d = dsa.Decide(&st.exts.DSA, cd.c.DSA, false, b.opts.DSADomain, true)
		if d.Reason != dsa.OK {
			st.m.dsaRefusals[d.Reason].Inc()
			return "", rtb.NoBidDSA
		}
		return "", bidMade
	}
	return label, bidMade
}

// dsaExt sets bid.ext to the bid's ext.dsa (in the arena) when the
// decision writes one.
func dsaExt(st *reqState, d *dsa.Decision, bid *openrtb2.Bid) {
	if !d.Write {
		return
	}
	a := len(st.arena)
	st.arena = rtb.AppendBidExtDSA(st.arena, &d.Ext)
	bid.Ext = st.arena[a:len(st.arena):len(st.arena)]
}

// explainPath is the debug endpoint's account of the request's supply
// path and DSA signals.
func (b *Bidder) explainPath(st *reqState, ex *explain.Explain) {
	if ex == nil {
		return
	}
	v := b.supplyVerdict(st)
	ex.Supply = v.Explain(&st.path.req, v.Reason)
	if v.Reason == supply.OK {
		ex.Supply = "authorized"
	}
	if d := &st.exts.DSA; d.Present {
		ex.DSA = dsaSummary(d)
	} else {
		ex.DSA = "no regs.ext.dsa"
	}
}

func dsaSummary(d *rtb.DSA) string {
	return fmt.Sprintf("regs.ext.dsa: dsarequired %d, pubrender %d, datatopub %d", d.Required, d.PubRender, d.DataToPub)
}
