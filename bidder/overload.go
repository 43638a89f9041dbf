package bidder

import (
	"net"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/overload"
)

// RateLimitOptions bound the endpoints that write the user store per
// source (bidder.rate_limits): a source over its endpoint's limit is
// answered 429 Too Many Requests, with nothing written.
type RateLimitOptions struct {
	// Event, UserSync and Match are the limits of /event, /usersync and
	// /match; a Rate of 0 is no limit.
	Event, UserSync, Match overload.Limit
	// Sources is how many sources each limit remembers (see
	// overload.NewLimiter). Default 65,536.
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
	lim     [numLimits]*overload.Limiter // nil: no limit
	limited [numLimits]prometheus.Counter
	trusted []netip.Prefix
}

func newRateLimits(o RateLimitOptions, reg prometheus.Registerer) (rateLimits, error) {
	sources := o.Sources
	if sources <= 0 {
		sources = 65536
	}
	var r rateLimits
	for i, l := range [numLimits]overload.Limit{o.Event, o.UserSync, o.Match} {
		r.lim[i] = overload.NewLimiter(l, sources)
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
// trusted proxy, X-Forwarded-For's (see overload.ClientAddr).
func (r *rateLimits) source(rc *fasthttp.RequestCtx) overload.Key {
	return overload.KeyOf(r.clientAddr(rc))
}

// clientAddr is source's address.
func (r *rateLimits) clientAddr(rc *fasthttp.RequestCtx) netip.Addr {
	var peer netip.Addr
	if a, ok := rc.RemoteAddr().(*net.TCPAddr); ok {
		peer, _ = netip.AddrFromSlice(a.IP)
	}
	return overload.ClientAddr(peer, rc.Request.Header.Peek(fasthttp.HeaderXForwardedFor), r.trusted)
}

// drainOnClose marks rc's connection (when it came from Listen) to be
// drained when fasthttp closes it after the response (overload.Drain).
func (b *Bidder) drainOnClose(rc *fasthttp.RequestCtx) {
	overload.DrainOnClose(rc.Conn(), int64(b.opts.MaxDrainBytes), b.opts.DrainTimeout)
}

// expect is the server's ExpectHandler: a request with Expect:
// 100-continue that declares a body over MaxBodyBytes gets 413 and no
// 100 Continue (fasthttp then closes the connection, drained in case the
// client sends its body anyway).
func (b *Bidder) expect(rc *fasthttp.RequestCtx) int {
	if rc.Request.Header.ContentLength() > b.opts.MaxBodyBytes {
		b.m.rejected[rejTooLarge].Inc()
		b.drainOnClose(rc)
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}
