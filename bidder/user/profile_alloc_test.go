//go:build !race

package user

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestAllocs pins the allocations of encoding, decoding and event parsing
// (the race detector allocates, hence the build tag). The stores' own pins
// are in their packages.
func TestAllocs(t *testing.T) {
	want := sampleProfile()
	enc := AppendProfile(nil, want)
	var q Profile
	buf := make([]byte, 0, 256)
	var a fasthttp.Args
	a.Parse("uid=demo-user-1&pg=3&pid=103&ev=view")
	cases := []struct {
		name string
		max  float64
		f    func()
	}{
		{"DecodeProfile, reused Profile", 0, func() {
			if err := DecodeProfile(enc, &q); err != nil {
				t.Fatal(err)
			}
		}},
		// Without an interner and with a fresh Profile, one allocation per
		// slice plus one per segment.
		{"DecodeProfile, new Profile", float64(2 + len(want.Viewed) + len(want.Recommended) + 1 + len(want.Segments)), func() {
			var r Profile
			if err := DecodeProfile(enc, &r); err != nil {
				t.Fatal(err)
			}
		}},
		{"AppendProfile", 0, func() { buf = AppendProfile(buf[:0], want) }},
		{"ParseEvent", 1, func() {
			if _, _, _, _, err := ParseEvent(&a); err != nil {
				t.Fatal(err)
			}
		}},
		{"ParseEventQuery", 0, func() {
			if uid, _, _, err := ParseEventQuery(&a); err != nil || string(uid) != "demo-user-1" {
				t.Fatalf("ParseEventQuery: %q %v", uid, err)
			}
		}},
	}
	for _, c := range cases {
		c.f() // warm up
		if n := testing.AllocsPerRun(200, c.f); n > c.max {
			t.Errorf("%s: %.1f allocs/op, want <= %v", c.name, n, c.max)
		} else {
			t.Logf("%s: %.1f allocs/op", c.name, n)
		}
	}
}
