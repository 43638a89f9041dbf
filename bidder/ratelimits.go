package bidder

import (
	"bytes"
	"net"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/ratelimit"
	"github.com/rtbd/rtbd/configs"
)

// RateLimitOptions bound the endpoints that write the user store per
// source (bidder.rate_limits): a source over its endpoint's limit is
// answered 429 Too Many Requests, with nothing written.
type RateLimitOptions struct {
	// Event, UserSync and Match are the limits of /event, /usersync and
	// /match; a Rate of 0 is no limit.
	Event, UserSync, Match ratelimit.Limit
	// Sources is how many sources each limit remembers (see
	// ratelimit.New). Default 65,536.
	Sources int
	// TrustedProxies are the peers whose X-Forwarded-For names the source
	// (its rightmost address that is not a trusted proxy). Empty: the
	// source is always the peer's address.
	TrustedProxies []netip.Prefix
}

// The rate-limited endpoints, the label of rtbd_bidder_rate_limited_total.
const (
	limitEvent = iota
	limitUserSync
	limitMatch
	numLimits
)

var limitNames = [numLimits]string{"event", "usersync", "match"}

type rateLimits struct {
	lim     [numLimits]*ratelimit.Limiter // nil: no limit
	limited [numLimits]prometheus.Counter
	trusted []netip.Prefix
}

func newRateLimits(o RateLimitOptions, reg prometheus.Registerer) (rateLimits, error) {
	sources := o.Sources
	if sources <= 0 {
		sources = 65536
	}
	var r rateLimits
	for i, l := range [numLimits]ratelimit.Limit{o.Event, o.UserSync, o.Match} {
		r.lim[i] = ratelimit.New(l, sources)
	}
	r.trusted = o.TrustedProxies
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_rate_limited_total",
		Help: "Requests answered 429 because their source was over bidder.rate_limits, by endpoint (event, usersync, match)."}, []string{"endpoint"})
	for i, n := range limitNames {
		r.limited[i] = vec.WithLabelValues(n)
	}
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			return r, err
		}
	}
	return r, nil
}

// allowed takes one request from rc's source's bucket for endpoint; over
// the limit it answers 429 (with Retry-After: 1), counts it and returns
// false.
func (b *Bidder) allowed(rc *fasthttp.RequestCtx, endpoint int) bool {
	l := b.limits.lim[endpoint]
	if l == nil || l.Allow(b.limits.source(rc), b.opts.Now().UnixNano()) {
		return true
	}
	b.limits.limited[endpoint].Inc()
	rc.Error("rate limited", fasthttp.StatusTooManyRequests) // resets the headers
	rc.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	return false
}

// source is rc's client: the peer's address, or, when the peer is a
// trusted proxy, the rightmost address of X-Forwarded-For that is not one
// (an entry that is not an address ends the walk at the hop before it).
func (r *rateLimits) source(rc *fasthttp.RequestCtx) ratelimit.Key {
	return ratelimit.KeyOf(r.clientAddr(rc))
}

// clientAddr is source's address.
func (r *rateLimits) clientAddr(rc *fasthttp.RequestCtx) netip.Addr {
	var peer netip.Addr
	if a, ok := rc.RemoteAddr().(*net.TCPAddr); ok {
		peer, _ = netip.AddrFromSlice(a.IP)
	}
	peer = peer.Unmap()
	if !r.trustedAddr(peer) {
		return peer
	}
	xff := rc.Request.Header.Peek(fasthttp.HeaderXForwardedFor)
	for len(xff) > 0 {
		i := bytes.LastIndexByte(xff, ',')
		part := bytes.TrimSpace(xff[i+1:])
		if i < 0 {
			xff = nil
		} else {
			xff = xff[:i]
		}
		a, err := netip.ParseAddr(string(part))
		if err != nil {
			break
		}
		peer = a.Unmap()
		if !r.trustedAddr(peer) {
			break
		}
	}
	return peer
}

func (r *rateLimits) trustedAddr(a netip.Addr) bool {
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// rateLimitsFromConfig maps bidder.rate_limits (validated: every trusted
// proxy parses as a prefix or an address).
func rateLimitsFromConfig(c configs.RateLimits) RateLimitOptions {
	o := RateLimitOptions{Sources: c.Sources,
		Event:    ratelimit.Limit{Rate: c.Event.Rate, Burst: c.Event.Burst},
		UserSync: ratelimit.Limit{Rate: c.UserSync.Rate, Burst: c.UserSync.Burst},
		Match:    ratelimit.Limit{Rate: c.Match.Rate, Burst: c.Match.Burst}}
	for _, s := range c.TrustedProxies {
		if p, err := netip.ParsePrefix(s); err == nil {
			o.TrustedProxies = append(o.TrustedProxies, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			o.TrustedProxies = append(o.TrustedProxies, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return o
}
