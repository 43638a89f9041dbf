// Package usersync is rtbd's own user id in browsers: the uid cookie, the
// uid a request of /event or /match carries (Handler.RequestUID), the
// exchange-initiated user sync (GET /usersync) and the match table writes
// (GET /match) that let a bid request of an exchange resolve rtbd's uid
// from the exchange's own user id.
package usersync

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/internal/deadline"
	"github.com/rtbd/rtbd/bidder/internal/pixel"
	"github.com/rtbd/rtbd/bidder/privacy"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
)

// Options configure rtbd's own user id: its cookie, where /event and
// /match may take it from, and where /usersync and /match may redirect.
type Options struct {
	// CookieName is the uid cookie's name. Default "rtbd_uid".
	CookieName string
	// CookieDomain is its Domain attribute; "": the host that set it.
	CookieDomain string
	// CookieMaxAge is its Max-Age. Default 8760h.
	CookieMaxAge time.Duration
	// TrustQueryUID accepts an unsigned uid= in the query of /event and
	// /match; otherwise only a uid signed with Keys (token.Keys.AppendUID)
	// is taken from the query.
	TrustQueryUID bool
	// SyncRedirectHosts are the hosts /usersync and /match redirect to:
	// "host[:port]" (https) or "http://host[:port]" (http or https). None:
	// every redirect is refused (400).
	SyncRedirectHosts []string
}

// EnsureDefaults gives each zero field of o its default and returns what
// is invalid (a redirect host), every problem at once.
func (o *Options) EnsureDefaults() error {
	if o.CookieName == "" {
		o.CookieName = "rtbd_uid"
	}
	if o.CookieMaxAge <= 0 {
		o.CookieMaxAge = 8760 * time.Hour
	}
	_, errs := exchange.NewRedirectHosts(o.SyncRedirectHosts)
	return errors.Join(errs...)
}

// Matches is the match table /match writes (the bidder's MatchStore).
type Matches interface {
	// PutMatch stores key (user.MatchKey) -> uid.
	PutMatch(ctx context.Context, key, uid string) error
}

// Deps are what a Handler takes from the bidder around it.
type Deps struct {
	// Keys verify signed uids (token.Keys.AppendUID).
	Keys *token.Keys
	// Now is the clock of the signed uids' expiry.
	Now func() time.Time
	// GDPRVendorID is rtbd's TCF vendor id (privacy.Signals.Decide).
	GDPRVendorID uint16
	// Exchanges are the exchanges x= names.
	Exchanges exchange.Set
	// Matches is the match table; nil: /match answers 503.
	Matches Matches
	// Timeout bounds a match table write.
	Timeout time.Duration
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Handler serves /usersync and /match and resolves the uid of /event. It
// is safe for concurrent use.
type Handler struct {
	o         Options
	d         Deps
	redirects exchange.RedirectHosts
	small     sync.Pool // *state (/match)

	syncs, matches  [numResults]prometheus.Counter
	queryUIDRefused prometheus.Counter
}

// state is the pooled state of one /match.
type state struct {
	dctx deadline.Ctx
	buf  []byte
}

// Results of /usersync and /match.
const (
	resOK      = iota
	resPrivacy // the privacy decision said no: no cookie, no uid, nothing stored
	resInvalid // 400
	resError   // 503 (/match)
	numResults
)

var resultNames = [numResults]string{"ok", "privacy", "invalid", "error"}

// New returns a Handler for o (defaulted: Options.EnsureDefaults);
// errors come from metric registration.
func New(o Options, d Deps) (*Handler, error) {
	h := &Handler{o: o, d: d}
	h.redirects, _ = exchange.NewRedirectHosts(o.SyncRedirectHosts) // checked by EnsureDefaults
	h.small.New = func() any { return &state{buf: make([]byte, 0, 1024)} }
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_usersyncs_total",
		Help: "User syncs (/usersync) by result: ok, privacy (no personalisation: no cookie, empty uid), invalid (400)."}, []string{"result"})
	matches := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_bidder_matches_total",
		Help: "Match table writes (/match) by result: ok, privacy (nothing stored), invalid (400), error (store failed: 503)."}, []string{"result"})
	for i, n := range resultNames {
		if i != resError {
			h.syncs[i] = syncs.WithLabelValues(n)
		}
		h.matches[i] = matches.WithLabelValues(n)
	}
	refused := prometheus.NewCounter(prometheus.CounterOpts{Name: "rtbd_bidder_query_uid_refused_total",
		Help: "uid= query parameters of /event and /match ignored: not signed with the token keys (nor user.trust_query_uid), forged or expired; the cookie's uid is used."})
	h.queryUIDRefused = refused
	if reg := d.Registerer; reg != nil {
		for _, c := range []prometheus.Collector{syncs, matches, refused} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

// validCookieUID reports whether v, the value of rtbd's uid cookie, is a
// uid rtbd could have set: 1 to user.MaxUIDLen URL-safe characters
// (letters, digits, '-', '_', '.').
func validCookieUID(v []byte) bool {
	if len(v) == 0 || len(v) > user.MaxUIDLen {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// newUID returns a random uid: 128 bits from crypto/rand, URL-safe base64
// (22 characters).
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand's contract)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// cookieUID returns the uid of rtbd's cookie on the request, "" when it is
// absent or not a valid uid.
func (h *Handler) cookieUID(rc *fasthttp.RequestCtx) string {
	v := rc.Request.Header.Cookie(h.o.CookieName)
	if !validCookieUID(v) {
		return ""
	}
	return string(v)
}

// SetCookie sets rtbd's uid cookie to uid on the response:
// SameSite=None; Secure; HttpOnly; Path=/, with the configured Domain and
// Max-Age.
func (h *Handler) SetCookie(rc *fasthttp.RequestCtx, uid string) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	o := &h.o
	c.SetKey(o.CookieName)
	c.SetValue(uid)
	c.SetPath("/")
	if o.CookieDomain != "" {
		c.SetDomain(o.CookieDomain)
	}
	c.SetMaxAge(int(o.CookieMaxAge / time.Second))
	c.SetSecure(true)
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteNoneMode)
	rc.Response.Header.SetCookie(c)
}

// Source says where RequestUID found the uid.
type Source int

// Sources of a uid.
const (
	FromQuery  Source = iota // a signed (or trusted) uid= of the query
	FromCookie               // rtbd's cookie
	Minted                   // none: a new one, set in this response
)

// RequestUID returns the uid of a /event or /match request, q being its
// uid=: the query's uid= when it is signed with Keys
// (token.Keys.AppendUID) and live, or when Options.TrustQueryUID and it
// passes user.CheckUID; else the cookie's; else a new random uid
// (Minted, which the caller sets as the cookie only when the privacy
// decision allows). A uid= that is neither is ignored (counted). buf is
// scratch, returned grown.
func (h *Handler) RequestUID(rc *fasthttp.RequestCtx, q []byte, buf []byte) (string, Source, []byte) {
	if len(q) > 0 {
		uid, nb, err := h.d.Keys.ParseUID(q, h.d.Now(), buf[:0])
		buf = nb
		switch {
		case err == nil && user.CheckUID(uid) == nil:
			return strings.Clone(uid), FromQuery, buf
		case h.o.TrustQueryUID && !errors.Is(err, token.ErrExpired) && user.CheckUID(q) == nil:
			return string(q), FromQuery, buf
		}
		h.queryUIDRefused.Inc()
	}
	if uid := h.cookieUID(rc); uid != "" {
		return uid, FromCookie, buf
	}
	return newUID(), Minted, buf
}

// ServeUserSync is GET /usersync?redirect=URL&gdpr=&gdpr_consent=&gpp=&gpp_sid=&us_privacy=,
// an exchange-initiated user sync (Prebid Server's userSync.redirect): 302
// to URL with the exchange's uid macro (x= names the exchange, default
// exchange.Default's: "$UID") replaced by rtbd's uid, URL-escaped. The uid
// is the cookie's, or a new one set as the cookie. When the privacy
// decision says no personalisation, no cookie is set and the macro is
// replaced by "" (Prebid Server's /setuid then forgets rtbd's id). 400
// for a missing or refused redirect (see exchange.RedirectHosts.Check) or an unknown x.
func (h *Handler) ServeUserSync(rc *fasthttp.RequestCtx) {
	if !pixel.AllowGet(rc) {
		return
	}
	args := rc.QueryArgs()
	x, ok := h.exchangeArg(args)
	if !ok {
		h.syncs[resInvalid].Inc()
		refuse(rc, RefusedExchange)
		return
	}
	allowed := h.QueryAllowed(args)
	uid := ""
	if allowed {
		if uid = h.cookieUID(rc); uid == "" {
			uid = newUID()
		}
	}
	dest := strings.ReplaceAll(string(args.Peek("redirect")), x.UIDMacro, url.QueryEscape(uid))
	if err := h.redirects.Check(dest); err != nil {
		h.syncs[resInvalid].Inc()
		refuse(rc, RefusedRedirect)
		return
	}
	if allowed {
		h.SetCookie(rc, uid)
		h.syncs[resOK].Inc()
	} else {
		h.syncs[resPrivacy].Inc()
	}
	pixel.Redirect(rc, dest)
}

// exchangeArg returns the exchange named by x= (exchange.Default's when
// absent) and whether it exists.
func (h *Handler) exchangeArg(args *fasthttp.Args) (exchange.Exchange, bool) {
	xs := &h.d.Exchanges
	v := args.Peek("x")
	if len(v) == 0 {
		return xs.List[0], true
	}
	i, ok := xs.Index[string(v)]
	if !ok {
		return exchange.Exchange{}, false
	}
	return xs.List[i], true
}

// maxXUIDBytes bounds an exchange's user id in /match (its match key must
// fit user.MaxUIDLen).
const maxXUIDBytes = user.MaxUIDLen - 34

// ServeMatch is GET /match?x={exchange}&xuid={id}[&redirect=URL]: it
// stores {exchange}:{xuid} -> rtbd's uid (the query's signed uid=, else
// the cookie's, else a new one set as the cookie) with user.match_ttl, so
// that a bid request of that exchange without user.buyeruid resolves
// user.id through it; then it answers a 1x1 GIF, or 302 to redirect
// (allowlisted like /usersync's). When the privacy decision says no
// personalisation nothing is stored and no cookie set. 400 for an unknown
// exchange, a missing or invalid xuid, a refused redirect; 503 when the
// store failed or keeps no match table.
func (h *Handler) ServeMatch(rc *fasthttp.RequestCtx) {
	if !pixel.AllowGet(rc) {
		return
	}
	args := rc.QueryArgs()
	x, ok := h.exchangeArg(args)
	xuid := args.Peek("xuid")
	dest := string(args.Peek("redirect"))
	refused := ""
	switch {
	case !ok || len(args.Peek("x")) == 0:
		refused = RefusedExchange
	case len(xuid) == 0 || len(xuid) > maxXUIDBytes || user.CheckUID(xuid) != nil:
		refused = RefusedXUID
	case dest != "" && h.redirects.Check(dest) != nil:
		refused = RefusedRedirect
	}
	if refused != "" {
		h.matches[resInvalid].Inc()
		refuse(rc, refused)
		return
	}
	if !h.QueryAllowed(args) {
		h.matches[resPrivacy].Inc()
		pixel.OrRedirect(rc, dest)
		return
	}
	if h.d.Matches == nil {
		h.matches[resError].Inc()
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	ss := h.small.Get().(*state)
	defer h.small.Put(ss)
	uid, src, buf := h.RequestUID(rc, args.Peek("uid"), ss.buf)
	ss.buf = buf
	key := string(user.MatchKey(nil, x.Name, xuid))
	ss.dctx.Reset(time.Now().Add(h.d.Timeout))
	err := h.d.Matches.PutMatch(&ss.dctx, key, uid)
	ss.dctx.Reset(time.Time{})
	if err != nil {
		h.matches[resError].Inc()
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	if src != FromQuery {
		h.SetCookie(rc, uid) // renewed, or set when new
	}
	h.matches[resOK].Inc()
	pixel.OrRedirect(rc, dest)
}

// Why /usersync or /match refused a request (the 400's body): constant
// texts that name the rule, never the request's own values.
const (
	RefusedExchange = "x: not an exchange of the exchanges: section\n"
	RefusedXUID     = "xuid: missing, too long, or not UTF-8 text without control characters\n"
	RefusedRedirect = "redirect: not allowed: an absolute https URL (http only for a host listed as http://host) to a host[:port] of user.sync_redirect_hosts\n"
)

// refuse answers 400 with why as a plain-text body.
func refuse(rc *fasthttp.RequestCtx, why string) {
	rc.SetStatusCode(fasthttp.StatusBadRequest)
	rc.SetContentType("text/plain; charset=utf-8")
	rc.Response.Header.Set("X-Content-Type-Options", "nosniff")
	rc.Response.SetBodyString(why)
}

// QueryAllowed reports whether the privacy signals of a query
// (privacy.FromQuery) let /event, /usersync or /match personalise.
func (h *Handler) QueryAllowed(args *fasthttp.Args) bool {
	sig := privacy.FromQuery(args)
	return sig.Decide(h.d.GDPRVendorID).Allowed()
}
