package exchange

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzCheckRedirect: a redirect target RedirectHosts.Check accepts is an
// absolute http(s) URL to an allowlisted host, without userinfo,
// backslashes or control characters, whatever the input.
func FuzzCheckRedirect(f *testing.F) {
	hosts, _ := NewRedirectHosts([]string{"pbs.example", "http://plain.example:8000"})
	for _, s := range []string{"https://pbs.example/setuid?uid=$UID", "//evil.example", `/\evil.example`, "https://user@pbs.example/",
		"javascript:alert(1)", "https://pbs%2eexample/", "http://plain.example:8000/x", "https://pbs.example\\@evil/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if hosts.Check(s) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", s, err)
		}
		host := strings.ToLower(u.Host)
		okHost := (u.Scheme == "https" && (host == "pbs.example" || host == "plain.example:8000")) ||
			(u.Scheme == "http" && host == "plain.example:8000")
		if !okHost || u.User != nil || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' }) {
			t.Fatalf("accepted %q: scheme %q host %q user %v", s, u.Scheme, u.Host, u.User)
		}
	})
}
