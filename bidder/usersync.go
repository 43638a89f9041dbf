package bidder

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/privacy"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
)

// Paths of rtbd's user id endpoints.
const (
	PathUserSync = "/usersync"
	PathMatch    = "/match"
)

// errRedirect is what checkRedirect refuses (the answer is 400).
var errRedirect = errors.New("bidder: redirect target not allowed")

// maxRedirectBytes bounds a redirect URL.
const maxRedirectBytes = 4096

// checkRedirect returns nil when raw (a redirect= value, already
// percent-decoded once from the query) may be redirected to: an absolute
// https URL (or http for a host listed with http://) whose host[:port],
// after url.Parse, is exactly one of hosts. Refused: other schemes
// (javascript:, data:), scheme-relative (//host) and relative URLs,
// userinfo (user@host), backslashes, spaces, control and non-ASCII
// characters, percent-encoding or anything but host[:port] in the
// authority, and an empty host.
func checkRedirect(raw string, hosts redirectHosts) error {
	if raw == "" || len(raw) > maxRedirectBytes {
		return errRedirect
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return errRedirect
		}
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "https" && scheme != "http") {
		return errRedirect // other schemes, relative and scheme-relative URLs
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if authority == "" || strings.ContainsAny(authority, "@%") {
		return errRedirect
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != scheme || u.User != nil || u.Opaque != "" || u.Host != authority {
		return errRedirect
	}
	if !hosts[scheme+"://"+strings.ToLower(u.Host)] {
		return errRedirect
	}
	return nil
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
func (b *Bidder) cookieUID(rc *fasthttp.RequestCtx) string {
	v := rc.Request.Header.Cookie(b.opts.UserID.CookieName)
	if !validCookieUID(v) {
		return ""
	}
	return string(v)
}

// setUIDCookie sets rtbd's uid cookie to uid on the response:
// SameSite=None; Secure; HttpOnly; Path=/, with the configured Domain and
// Max-Age.
func (b *Bidder) setUIDCookie(rc *fasthttp.RequestCtx, uid string) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	o := &b.opts.UserID
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

// uidSource says where requestUID found the uid.
type uidSource int

const (
	uidQuery  uidSource = iota // a signed (or trusted) uid= of the query
	uidCookie                  // rtbd's cookie
	uidMinted                  // none: a new one, set in this response
)

// requestUID returns the uid of a /event or /match request: the query's
// uid= when it is signed with Keys (token.Keys.AppendUID) and live, or
// when UserIDOptions.TrustQueryUID and it passes user.CheckUID; else the
// cookie's; else a new random uid (uidMinted, which the caller sets as
// the cookie only when the privacy decision allows). A uid= that is
// neither is ignored.
func (b *Bidder) requestUID(rc *fasthttp.RequestCtx, q []byte, buf []byte) (string, uidSource, []byte) {
	if len(q) > 0 {
		uid, nb, err := b.opts.Keys.ParseUID(q, b.opts.Now(), buf[:0])
		buf = nb
		switch {
		case err == nil && user.CheckUID(uid) == nil:
			return strings.Clone(uid), uidQuery, buf
		case b.opts.UserID.TrustQueryUID && !errors.Is(err, token.ErrExpired) && user.CheckUID(q) == nil:
			return string(q), uidQuery, buf
		}
		b.m.queryUIDRefused.Inc()
	}
	if uid := b.cookieUID(rc); uid != "" {
		return uid, uidCookie, buf
	}
	return newUID(), uidMinted, buf
}

// serveUserSync is GET /usersync?redirect=URL&gdpr=&gdpr_consent=&gpp=&gpp_sid=&us_privacy=,
// an exchange-initiated user sync (Prebid Server's userSync.redirect): 302
// to URL with the exchange's uid macro (x= names the exchange, default
// DefaultExchange's: "$UID") replaced by rtbd's uid, URL-escaped. The uid
// is the cookie's, or a new one set as the cookie. When the privacy
// decision says no personalisation, no cookie is set and the macro is
// replaced by "" (Prebid Server's /setuid then forgets rtbd's id). 400
// for a missing or refused redirect (see checkRedirect) or an unknown x.
func (b *Bidder) serveUserSync(rc *fasthttp.RequestCtx) {
	if !allowGet(rc) {
		return
	}
	args := rc.QueryArgs()
	x, ok := b.exchangeArg(args)
	if !ok {
		b.m.syncs[syncInvalid].Inc()
		syncRefused(rc, refusedExchange)
		return
	}
	allowed := b.queryAllowed(args)
	uid := ""
	if allowed {
		if uid = b.cookieUID(rc); uid == "" {
			uid = newUID()
		}
	}
	dest := strings.ReplaceAll(string(args.Peek("redirect")), x.UIDMacro, url.QueryEscape(uid))
	if err := checkRedirect(dest, b.redirects); err != nil {
		b.m.syncs[syncInvalid].Inc()
		syncRefused(rc, refusedRedirect)
		return
	}
	if allowed {
		b.setUIDCookie(rc, uid)
		b.m.syncs[syncOK].Inc()
	} else {
		b.m.syncs[syncPrivacy].Inc()
	}
	b.redirect(rc, dest)
}

// exchangeArg returns the exchange named by x= (DefaultExchange's when
// absent) and whether it exists.
func (b *Bidder) exchangeArg(args *fasthttp.Args) (Exchange, bool) {
	v := args.Peek("x")
	if len(v) == 0 {
		return b.exchanges.list[0], true
	}
	i, ok := b.exchanges.index[string(v)]
	if !ok {
		return Exchange{}, false
	}
	return b.exchanges.list[i], true
}

// maxXUIDBytes bounds an exchange's user id in /match (its match key must
// fit user.MaxUIDLen).
const maxXUIDBytes = user.MaxUIDLen - 34

// serveMatch is GET /match?x={exchange}&xuid={id}[&redirect=URL]: it
// stores {exchange}:{xuid} -> rtbd's uid (the query's signed uid=, else
// the cookie's, else a new one set as the cookie) with user.match_ttl, so
// that a bid request of that exchange without user.buyeruid resolves
// user.id through it; then it answers a 1x1 GIF, or 302 to redirect
// (allowlisted like /usersync's). When the privacy decision says no
// personalisation nothing is stored and no cookie set. 400 for an unknown
// exchange, a missing or invalid xuid, a refused redirect; 503 when the
// store failed or keeps no match table.
func (b *Bidder) serveMatch(rc *fasthttp.RequestCtx) {
	if !allowGet(rc) {
		return
	}
	args := rc.QueryArgs()
	x, ok := b.exchangeArg(args)
	xuid := args.Peek("xuid")
	dest := string(args.Peek("redirect"))
	refused := ""
	switch {
	case !ok || len(args.Peek("x")) == 0:
		refused = refusedExchange
	case len(xuid) == 0 || len(xuid) > maxXUIDBytes || user.CheckUID(xuid) != nil:
		refused = refusedXUID
	case dest != "" && checkRedirect(dest, b.redirects) != nil:
		refused = refusedRedirect
	}
	if refused != "" {
		b.m.matches[syncInvalid].Inc()
		syncRefused(rc, refused)
		return
	}
	if !b.queryAllowed(args) {
		b.m.matches[syncPrivacy].Inc()
		b.pixelOrRedirect(rc, dest)
		return
	}
	if b.matchStore == nil {
		b.m.matches[syncError].Inc()
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	ss := b.small.Get().(*smallState)
	defer b.small.Put(ss)
	uid, src, buf := b.requestUID(rc, args.Peek("uid"), ss.buf)
	ss.buf = buf
	key := string(user.MatchKey(nil, x.Name, xuid))
	ss.dctx.reset(time.Now().Add(b.opts.EventTimeout))
	err := b.matchStore.PutMatch(&ss.dctx, key, uid)
	ss.dctx.reset(time.Time{})
	if err != nil {
		b.m.matches[syncError].Inc()
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	if src != uidQuery {
		b.setUIDCookie(rc, uid) // renewed, or set when new
	}
	b.m.matches[syncOK].Inc()
	b.pixelOrRedirect(rc, dest)
}

// Why /usersync or /match refused a request (the 400's body): constant
// texts that name the rule, never the request's own values.
const (
	refusedExchange = "x: not an exchange of the exchanges: section\n"
	refusedXUID     = "xuid: missing, too long, or not UTF-8 text without control characters\n"
	refusedRedirect = "redirect: not allowed: an absolute https URL (http only for a host listed as http://host) to a host[:port] of user.sync_redirect_hosts\n"
)

// syncRefused answers 400 with why as a plain-text body.
func syncRefused(rc *fasthttp.RequestCtx, why string) {
	rc.SetStatusCode(fasthttp.StatusBadRequest)
	rc.SetContentType("text/plain; charset=utf-8")
	rc.Response.Header.Set("X-Content-Type-Options", "nosniff")
	rc.Response.SetBodyString(why)
}

// pixelOrRedirect answers 302 to dest, or the 1x1 GIF when dest is "".
func (b *Bidder) pixelOrRedirect(rc *fasthttp.RequestCtx, dest string) {
	if dest != "" {
		b.redirect(rc, dest)
		return
	}
	rc.SetContentType("image/gif")
	rc.SetStatusCode(fasthttp.StatusOK)
	rc.Response.SetBody(pixelGIF)
}

// queryAllowed reports whether the privacy signals of a query
// (privacy.FromQuery) let /event, /usersync or /match personalise.
func (b *Bidder) queryAllowed(args *fasthttp.Args) bool {
	sig := privacy.FromQuery(args)
	return sig.Decide(b.opts.GDPRVendorID).Allowed()
}
