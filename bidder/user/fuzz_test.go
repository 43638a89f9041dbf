package user

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
)

// FuzzDecodeProfile: no input panics; whatever decodes is a valid profile
// that re-encodes to something decoding to the same profile; truncations of
// a valid encoding are errors.
func FuzzDecodeProfile(f *testing.F) {
	f.Add(AppendProfile(nil, sampleProfile()))
	f.Add(AppendProfile(nil, &Profile{}))
	f.Add([]byte{1, 1, 3, 1, 0x80, 0x01, 0, 1, 1, 'a'})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := sampleProfile() // decoding into a used profile
		err := DecodeProfile(b, p)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			if len(p.Viewed)+len(p.Recommended)+len(p.Segments) != 0 {
				t.Fatal("profile not reset after an error")
			}
			return
		}
		for _, gs := range [][]GroupIDs{p.Viewed, p.Recommended} {
			for _, g := range gs {
				if g.Group <= 0 {
					t.Fatalf("decoded group %d", g.Group)
				}
				for _, id := range g.IDs {
					if id <= 0 {
						t.Fatalf("decoded id %d", id)
					}
				}
			}
		}
		for _, s := range p.Segments {
			if checkSegment(s) != nil {
				t.Fatalf("decoded bad segment %q", s)
			}
		}
		enc := AppendProfile(nil, p)
		var q Profile
		if err := DecodeProfile(enc, &q); err != nil {
			t.Fatalf("re-encoded profile does not decode: %v", err)
		}
		if !equalProfiles(p, &q) {
			t.Fatalf("re-encode changed the profile: %+v vs %+v", *p, q)
		}
		for i := 0; i < len(enc); i++ {
			if DecodeProfile(enc[:i], &q) == nil {
				t.Fatalf("truncation to %d of %d bytes decodes", i, len(enc))
			}
		}
	})
}

// FuzzParseEvent: no query panics; an accepted one has valid fields and
// parses the same when rebuilt.
func FuzzParseEvent(f *testing.F) {
	f.Add("uid=demo-user-1&pg=3&pid=103&ev=view")
	f.Add("uid=a%00&pg=1&pid=1&ev=view")
	f.Add("uid=a&pg=1&pid=9223372036854775808&ev=view")
	f.Add("uid=a&uid=b&pg=01&pid=&ev=click&&=&%zz")
	f.Fuzz(func(t *testing.T, q string) {
		var a fasthttp.Args
		a.Parse(q)
		uid, g, pid, ev, err := ParseEvent(&a)
		if err != nil {
			if !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("error %v does not wrap ErrInvalidEvent", err)
			}
			return
		}
		if CheckUID(uid) != nil || g <= 0 || pid <= 0 || ev != EventView {
			t.Fatalf("accepted invalid event %q %d %d %q", uid, g, pid, ev)
		}
		var b fasthttp.Args
		b.Set("uid", uid)
		b.Set("pg", strconv.FormatInt(g, 10))
		b.Set("pid", strconv.FormatInt(pid, 10))
		b.Set("ev", ev)
		var c fasthttp.Args
		c.ParseBytes(b.QueryString())
		uid2, g2, pid2, ev2, err := ParseEvent(&c)
		if err != nil || uid2 != uid || g2 != g || pid2 != pid || ev2 != ev {
			t.Fatalf("rebuilt query %q: %q %d %d %q %v", fmt.Sprint(b.String()), uid2, g2, pid2, ev2, err)
		}
	})
}
