package bidder

import (
	"net/netip"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/token"
)

// The per-exchange source check (exchanges.NAME.allow_cidrs); its rules
// and counters are in package exchange.

// sourceRefused answers 403 and counts it when rc's source is outside the
// ranges of exchange i.
func (b *Bidder) sourceRefused(rc *fasthttp.RequestCtx, i, route int) bool {
	x := &b.exchanges.List[i]
	if len(x.AllowCIDRs) == 0 {
		return false
	}
	a := b.limits.clientAddr(rc)
	for _, p := range x.AllowCIDRs {
		if p.Contains(a) {
			return false
		}
	}
	b.src.Refused[i][route].Inc()
	rc.Error("source not allowed for this exchange", fasthttp.StatusForbidden)
	return true
}

// bidSourceRefused is sourceRefused for a bid request to exchange i.
func (b *Bidder) bidSourceRefused(rc *fasthttp.RequestCtx, i int) bool {
	return b.src.On && b.sourceRefused(rc, i, exchange.RouteBid)
}

// noticeSourceRefused is sourceRefused for a notice of kind whose token
// verifies, for the token's exchange. A token that does not verify is left
// to the notice handler.
func (b *Bidder) noticeSourceRefused(rc *fasthttp.RequestCtx, kind token.Kind) bool {
	if !b.src.On || b.opts.Keys == nil {
		return false
	}
	t := rc.QueryArgs().Peek("t")
	if len(t) == 0 {
		return false
	}
	i, ok := b.notices.ExchangeOf(t, kind)
	if !ok {
		return false
	}
	return b.sourceRefused(rc, i, exchange.RouteNotice)
}

// SourceFilter returns the ranges of every exchange (and the trusted
// proxies) when every exchange has AllowCIDRs, else nil: a source outside
// them can reach nothing on the exchange listener.
func (b *Bidder) SourceFilter() []netip.Prefix {
	var all []netip.Prefix
	for _, x := range b.exchanges.List {
		if len(x.AllowCIDRs) == 0 {
			return nil
		}
		all = append(all, x.AllowCIDRs...)
	}
	return append(all, b.limits.trusted...)
}
