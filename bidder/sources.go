package bidder

import (
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/token"
)

// # Per-exchange sources
//
// An exchange with AllowCIDRs (config exchanges.NAME.allow_cidrs) is
// reached only from those ranges: a bid request on its path, and a
// server-to-server notice (/win, /bill, /loss) of a token issued for one
// of its bids, from any other source is answered 403 before any work (the
// request is not decoded, the notice not charged) and counted in
// rtbd_bidder_source_refused_total{exchange, route}. The source is the
// peer's address, or, from a trusted proxy (bidder.rate_limits.
// trusted_proxies), the rightmost address of X-Forwarded-For that is not
// one. A notice whose token does not verify is refused by the notice
// handler as forged, whatever its source.
//
// When browsers are served apart (bidder.public_listen) and every exchange
// has ranges, the exchange listener closes a connection from outside all
// of them (and the trusted proxies) as it accepts it
// (SourceFilterListener): a flood from elsewhere costs an accept and a
// close.

// Routes of rtbd_bidder_source_refused_total.
const (
	srcBid = iota
	srcNotice
	numSrcRoutes
)

var srcRouteNames = [numSrcRoutes]string{"bid", "notice"}

// sourceGuard holds the refusal counters, per exchange (index of the
// exchangeSet) and route; on is false when no exchange has ranges.
type sourceGuard struct {
	on      bool
	refused [][numSrcRoutes]prometheus.Counter
}

func newSourceGuard(xs exchangeSet, reg prometheus.Registerer) (*sourceGuard, error) {
	g := &sourceGuard{refused: make([][numSrcRoutes]prometheus.Counter, len(xs.list))}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_source_refused_total",
		Help: "Bid requests (route bid) and server-to-server notices (route notice) refused 403 because their source is outside the exchange's exchanges.NAME.allow_cidrs."},
		[]string{"exchange", "route"})
	for i, x := range xs.list {
		if len(x.AllowCIDRs) > 0 {
			g.on = true
		}
		for r, rn := range srcRouteNames {
			g.refused[i][r] = vec.WithLabelValues(x.Name, rn)
		}
	}
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// sourceRefused answers 403 and counts it when rc's source is outside the
// ranges of exchange i.
func (b *Bidder) sourceRefused(rc *fasthttp.RequestCtx, i, route int) bool {
	x := &b.exchanges.list[i]
	if len(x.AllowCIDRs) == 0 {
		return false
	}
	a := b.limits.clientAddr(rc)
	for _, p := range x.AllowCIDRs {
		if p.Contains(a) {
			return false
		}
	}
	b.src.refused[i][route].Inc()
	rc.Error("source not allowed for this exchange", fasthttp.StatusForbidden)
	return true
}

// bidSourceRefused is sourceRefused for a bid request to exchange i.
func (b *Bidder) bidSourceRefused(rc *fasthttp.RequestCtx, i int) bool {
	return b.src.on && b.sourceRefused(rc, i, srcBid)
}

// noticeSourceRefused is sourceRefused for a notice of kind whose token
// verifies, for the token's exchange. A token that does not verify is left
// to the notice handler.
func (b *Bidder) noticeSourceRefused(rc *fasthttp.RequestCtx, kind token.Kind) bool {
	if !b.src.on || b.opts.Keys == nil {
		return false
	}
	t := rc.QueryArgs().Peek("t")
	if len(t) == 0 {
		return false
	}
	ns := b.notices.Get().(*noticeState)
	defer b.notices.Put(ns)
	var err error
	if ns.buf, err = b.opts.Keys.Parse(&ns.tok, t, kind, b.opts.Now(), ns.buf[:0]); err != nil {
		return false
	}
	name := ns.tok.Exchange
	if name == "" {
		name = DefaultExchange
	}
	i, ok := b.exchanges.index[name]
	if !ok {
		return false
	}
	return b.sourceRefused(rc, i, srcNotice)
}

// SourceFilter returns the ranges of every exchange (and the trusted
// proxies) when every exchange has AllowCIDRs, else nil: a source outside
// them can reach nothing on the exchange listener.
func (b *Bidder) SourceFilter() []netip.Prefix {
	var all []netip.Prefix
	for _, x := range b.exchanges.list {
		if len(x.AllowCIDRs) == 0 {
			return nil
		}
		all = append(all, x.AllowCIDRs...)
	}
	return append(all, b.limits.trusted...)
}
