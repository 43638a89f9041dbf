package exchange

import (
	"github.com/prometheus/client_golang/prometheus"
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
// (the bidder's SourceFilterListener): a flood from elsewhere costs an accept and a
// close.

// Routes of rtbd_bidder_source_refused_total.
const (
	RouteBid = iota
	RouteNotice
	NumRoutes
)

var routeNames = [NumRoutes]string{"bid", "notice"}

// Guard holds the refusal counters, per exchange (index of the Set) and
// route; On is false when no exchange has ranges.
type Guard struct {
	On      bool
	Refused [][NumRoutes]prometheus.Counter
}

// NewGuard registers the refusal counters of xs on reg (none when nil).
func NewGuard(xs Set, reg prometheus.Registerer) (*Guard, error) {
	g := &Guard{Refused: make([][NumRoutes]prometheus.Counter, len(xs.List))}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_source_refused_total",
		Help: "Bid requests (route bid) and server-to-server notices (route notice) refused 403 because their source is outside the exchange's exchanges.NAME.allow_cidrs."},
		[]string{"exchange", "route"})
	for i, x := range xs.List {
		if len(x.AllowCIDRs) > 0 {
			g.On = true
		}
		for r, rn := range routeNames {
			g.Refused[i][r] = vec.WithLabelValues(x.Name, rn)
		}
	}
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			return nil, err
		}
	}
	return g, nil
}
