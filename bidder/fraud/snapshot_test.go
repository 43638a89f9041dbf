package fraud

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/rtb"
)

func testSnapshot(t testing.TB) *Snapshot {
	b := newBuilder()
	for l, entries := range map[List][]string{
		ListDomains:     {"Example.COM", "*.ads.bad.net", ".evil.org.", "bad domain", "a..b", ""},
		ListBundles:     {"com.Fraud.App", "  123456789  "},
		ListIPs:         {"192.0.2.7", "198.51.100.0/24", "10.1.2.3/8", "2001:db8::1", "2001:db8:bad::/48", "::ffff:203.0.113.9", "not-an-ip", "1.2.3.4/33", "fe80::1%eth0"},
		ListDataCenters: {"203.0.113.0/25", "2600:1f00::/24"},
		ListIFAs:        {"AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE"},
		ListUIDs:        {"bot-user", "bad\x01uid"},
	} {
		for _, e := range entries {
			b.add(l, e)
		}
	}
	s := b.finish(3, time.Now())
	want := [numLists]int{3, 2, 6, 2, 1, 1}
	if s.Sizes != want {
		t.Fatalf("sizes %v, want %v (rejected %v)", s.Sizes, want, b.rejected)
	}
	if b.rejected != [numLists]int{3, 0, 3, 0, 0, 1} {
		t.Fatalf("rejected %v", b.rejected)
	}
	return s
}

func TestSnapshotCheck(t *testing.T) {
	s := testSnapshot(t)
	cases := []struct {
		site, bundle, ip, ifa, uid string
		want                       bool
		list                       List
	}{
		{site: "example.com", want: true, list: ListDomains},
		{site: "WWW.Example.com.", want: true, list: ListDomains},
		{site: "a.b.c.example.com", want: true, list: ListDomains},
		{site: "notexample.com"},
		{site: "example.com.au"},
		{site: "x.ads.bad.net", want: true, list: ListDomains},
		{site: "bad.net"},
		{site: "evil.org", want: true, list: ListDomains},
		{site: "com"},
		{bundle: "COM.FRAUD.APP", want: true, list: ListBundles},
		{bundle: "123456789", want: true, list: ListBundles},
		{bundle: "com.fraud"},
		{ip: "192.0.2.7", want: true, list: ListIPs},
		{ip: "192.0.2.8"},
		{ip: "198.51.100.255", want: true, list: ListIPs},
		{ip: "10.200.0.1", want: true, list: ListIPs},
		{ip: "::ffff:192.0.2.7", want: true, list: ListIPs},
		{ip: "203.0.113.9", want: true, list: ListIPs},
		{ip: "2001:db8::1", want: true, list: ListIPs},
		{ip: "2001:DB8:BAD:1::5", want: true, list: ListIPs},
		{ip: "2001:db8:bae::1"},
		{ip: "203.0.113.100", want: true, list: ListDataCenters},
		{ip: "203.0.113.200"},
		{ip: "2600:1f18::1", want: true, list: ListDataCenters},
		{ip: "garbage"},
		{ifa: "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", want: true, list: ListIFAs},
		{uid: "bot-user", want: true, list: ListUIDs},
		{uid: "BOT-USER"},
		{site: "fine.com", bundle: "ok", ip: "8.8.8.8", ifa: "x", uid: "u"},
		{},
	}
	for _, c := range cases {
		got, list := s.Check(c.site, c.bundle, c.ip, c.ifa, c.uid)
		if got != c.want || (got && list != c.list) {
			t.Errorf("Check(%q,%q,%q,%q,%q) = %v %v, want %v %v", c.site, c.bundle, c.ip, c.ifa, c.uid, got, list, c.want, c.list)
		}
	}
}

func TestNBR(t *testing.T) {
	for l, want := range map[List]rtb.NoBidReason{
		ListDomains: 7, ListBundles: 7, ListIPs: 4, ListIFAs: 4, ListUIDs: 4, ListDataCenters: 5,
	} {
		if l.NBR() != want {
			t.Errorf("%v.NBR() = %d, want %d", l, l.NBR(), want)
		}
	}
}

func TestParseIPOrPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"10.1.2.3/8":          "10.0.0.0/8",
		" 192.0.2.1 ":         "192.0.2.1/32",
		"::ffff:1.2.3.4":      "1.2.3.4/32",
		"::ffff:1.2.3.0/120":  "1.2.3.0/24",
		"2001:db8::/32":       "2001:db8::/32",
		"1.2.3.4/33":          "",
		"::ffff:1.2.3.0/90":   "",
		"fe80::1%eth0":        "",
		"1.2.3":               "",
		"":                    "",
		"0.0.0.0/0":           "0.0.0.0/0",
		"2001:db8::1/128":     "2001:db8::1/128",
		"2001:db8::1/129":     "",
		"1.2.3.4/-1":          "",
		"999.1.1.1":           "",
		"1.2.3.4/24/1":        "",
		"::/0":                "::/0",
		"  10.0.0.0/8  extra": "",
	} {
		p, ok := parseIPOrPrefix(in)
		got := ""
		if ok {
			got = p.String()
		}
		if got != want {
			t.Errorf("parseIPOrPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}
