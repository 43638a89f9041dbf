package exchange

import (
	"errors"
	"net/url"
	"strings"
)

// ErrRedirect is what RedirectHosts.Check refuses (the answer is 400).
var ErrRedirect = errors.New("bidder: redirect target not allowed")

// maxRedirectBytes bounds a redirect URL.
const maxRedirectBytes = 4096

// Check returns nil when raw (a redirect= value, already
// percent-decoded once from the query) may be redirected to: an absolute
// https URL (or http for a host listed with http://) whose host[:port],
// after url.Parse, is exactly one of hosts. Refused: other schemes
// (javascript:, data:), scheme-relative (//host) and relative URLs,
// userinfo (user@host), backslashes, spaces, control and non-ASCII
// characters, percent-encoding or anything but host[:port] in the
// authority, and an empty host.
func (hosts RedirectHosts) Check(raw string) error {
	if raw == "" || len(raw) > maxRedirectBytes {
		return ErrRedirect
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return ErrRedirect
		}
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "https" && scheme != "http") {
		return ErrRedirect // other schemes, relative and scheme-relative URLs
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if authority == "" || strings.ContainsAny(authority, "@%") {
		return ErrRedirect
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != scheme || u.User != nil || u.Opaque != "" || u.Host != authority {
		return ErrRedirect
	}
	if !hosts[scheme+"://"+strings.ToLower(u.Host)] {
		return ErrRedirect
	}
	return nil
}
