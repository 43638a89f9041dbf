package fraud

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseIPOrPrefix: never panics; an accepted entry is masked, not
// zoned, and matches its own first address.
func FuzzParseIPOrPrefix(f *testing.F) {
	for _, s := range []string{"10.1.2.3/8", "::ffff:1.2.3.0/120", "2001:db8::/32", "fe80::1%eth0", "1.2.3.4/33", "::/0", " 1.1.1.1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := parseIPOrPrefix(s)
		if !ok {
			return
		}
		if p != p.Masked() || p.Addr().Zone() != "" || p.Addr().Is4In6() {
			t.Fatalf("%q -> %v: not canonical", s, p)
		}
		var set ipSet
		set.add(p)
		if !set.contains(p.Addr()) {
			t.Fatalf("%q -> %v does not contain its own address", s, p)
		}
	})
}

// FuzzNormalizeDomain: never panics; normalising is idempotent, and a kept
// domain blocks itself and its subdomains, case-insensitively.
func FuzzNormalizeDomain(f *testing.F) {
	for _, s := range []string{"Example.COM", "*.ads.bad.net", ".evil.org.", "a..b", "", "x", strings.Repeat("a.", 130)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := normalizeDomain(s)
		if !ok {
			return
		}
		if d2, ok2 := normalizeDomain(d); !ok2 || d2 != d {
			t.Fatalf("not idempotent: %q -> %q -> %q %v", s, d, d2, ok2)
		}
		b := newBuilder()
		b.add(ListDomains, s)
		snap := b.finish(0, b.s.LoadedAt)
		if ok, _ := snap.Check(strings.ToUpper(d), "", "", "", ""); !ok {
			t.Fatalf("%q does not block itself", d)
		}
		if len(d) < MaxEntryLen-4 {
			if ok, _ := snap.Check("www."+d, "", "", "", ""); !ok {
				t.Fatalf("%q does not block www.%s", d, d)
			}
		}
	})
}

// FuzzCheck: Check never panics on any request values.
func FuzzCheck(f *testing.F) {
	s := testSnapshot(f)
	f.Add("www.example.com", "com.fraud.app", "2001:db8::1", "ifa", "uid")
	f.Add("", "", "::ffff:1.2.3.4%x", "", "")
	f.Fuzz(func(t *testing.T, site, bundle, ip, ifa, uid string) {
		ok, l := s.Check(site, bundle, ip, ifa, uid)
		if ok && (l < 0 || l >= numLists) {
			t.Fatalf("bad list %d", l)
		}
		if a, err := netip.ParseAddr(ip); err == nil && a.Zone() == "" && site == "" && bundle == "" && ifa == "" && uid == "" && ok {
			if l != ListIPs && l != ListDataCenters {
				t.Fatalf("ip-only request blocked by %v", l)
			}
		}
	})
}
