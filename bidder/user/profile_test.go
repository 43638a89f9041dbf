package user

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func sampleProfile() *Profile {
	return &Profile{
		Viewed: []GroupIDs{
			{Group: 3, IDs: []int64{103, 999, 101}},
			{Group: 1122, IDs: []int64{1 << 40, 7}},
		},
		Recommended: []GroupIDs{
			{Group: 3, IDs: []int64{106, 105, 998, 104}},
		},
		Segments: []string{"sports", "high-value", "日本"},
	}
}

// equalProfiles compares content, treating nil and empty slices alike.
func equalProfiles(a, b *Profile) bool {
	norm := func(p *Profile) Profile {
		var q Profile
		for _, g := range p.Viewed {
			q.Viewed = append(q.Viewed, GroupIDs{g.Group, append([]int64{}, g.IDs...)})
		}
		for _, g := range p.Recommended {
			q.Recommended = append(q.Recommended, GroupIDs{g.Group, append([]int64{}, g.IDs...)})
		}
		q.Segments = append(q.Segments, p.Segments...)
		return q
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func TestRoundTrip(t *testing.T) {
	for name, p := range map[string]*Profile{
		"empty":   {},
		"sample":  sampleProfile(),
		"nosegs":  {Viewed: []GroupIDs{{Group: 1, IDs: []int64{1}}}},
		"emptyid": {Viewed: []GroupIDs{{Group: 1}}, Recommended: []GroupIDs{{Group: 2, IDs: []int64{1<<63 - 1}}}},
	} {
		t.Run(name, func(t *testing.T) {
			b := AppendProfile([]byte("prefix"), p)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatal("AppendProfile dropped dst")
			}
			var q Profile
			if err := DecodeProfile(b[len("prefix"):], &q); err != nil {
				t.Fatal(err)
			}
			if !equalProfiles(p, &q) {
				t.Fatalf("round trip: got %+v, want %+v", q, *p)
			}
		})
	}
}

func TestDecodeReusesAndReplaces(t *testing.T) {
	big := sampleProfile()
	small := &Profile{Viewed: []GroupIDs{{Group: 9, IDs: []int64{5}}}, Segments: []string{"high-value"}}
	var p Profile
	if err := DecodeProfile(AppendProfile(nil, big), &p); err != nil {
		t.Fatal(err)
	}
	first := &p.Viewed[0].IDs[0]
	if err := DecodeProfile(AppendProfile(nil, small), &p); err != nil {
		t.Fatal(err)
	}
	if !equalProfiles(&p, small) {
		t.Fatalf("second decode: got %+v, want %+v", p, *small)
	}
	if &p.Viewed[0].IDs[0] != first {
		t.Error("DecodeProfile did not reuse the IDs backing array")
	}
	if p.RecommendedIn(3) != nil || p.HasSegment("sports") {
		t.Error("content of the first profile leaked into the second")
	}
}

func TestAccessors(t *testing.T) {
	p := sampleProfile()
	if got := p.ViewedIn(1122); !reflect.DeepEqual(got, []int64{1 << 40, 7}) {
		t.Errorf("ViewedIn(1122) = %v", got)
	}
	if got := p.ViewedIn(4); got != nil {
		t.Errorf("ViewedIn(4) = %v, want nil", got)
	}
	if got := p.RecommendedIn(3); !reflect.DeepEqual(got, []int64{106, 105, 998, 104}) {
		t.Errorf("RecommendedIn(3) = %v", got)
	}
	if got := p.RecommendedIn(1122); got != nil {
		t.Errorf("RecommendedIn(1122) = %v, want nil", got)
	}
	if !p.HasSegment("high-value") || p.HasSegment("high") {
		t.Error("HasSegment wrong")
	}
	c := cap(p.Viewed)
	p.Reset()
	if len(p.Viewed)+len(p.Recommended)+len(p.Segments) != 0 || cap(p.Viewed) != c {
		t.Errorf("Reset: %+v cap %d want %d", *p, cap(p.Viewed), c)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := AppendProfile(nil, sampleProfile())
	cases := map[string][]byte{
		"empty":            {},
		"unknown format":   {2, 0, 0, 0},
		"zero group":       {1, 1, 0, 1, 5, 0, 0},
		"zero id":          {1, 1, 3, 1, 0, 0, 0},
		"count past end":   {1, 1, 3, 5, 1, 0, 0},
		"group count huge": {1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0},
		"id overflows":     append([]byte{1, 1, 3, 1}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0),
		"trailing":         append(append([]byte{}, valid...), 0),
		"segment empty":    {1, 0, 0, 1, 0},
		"segment control":  {1, 0, 0, 1, 2, 'a', '\n'},
		"segment bad utf8": {1, 0, 0, 1, 2, 'a', 0xff},
		"segment too long": append([]byte{1, 0, 0, 1, MaxSegmentLen + 1, 1}, strings.Repeat("a", MaxSegmentLen+1)...),
		"bad varint":       {1, 0x80},
	}
	for i := 1; i < len(valid); i++ {
		cases[fmt.Sprintf("truncated at %d", i)] = valid[:i]
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			p := sampleProfile()
			err := DecodeProfile(b, p)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if len(p.Viewed)+len(p.Recommended)+len(p.Segments) != 0 {
				t.Errorf("profile not reset after error: %+v", *p)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	lim := Limits{MaxGroups: 2, MaxViewed: 3, MaxRecommended: 4}
	ok := []*Profile{
		{},
		{Viewed: []GroupIDs{{1, []int64{1, 2, 3}}, {2, nil}}, Recommended: []GroupIDs{{1, []int64{4, 5, 6, 7}}}, Segments: []string{"a"}},
	}
	for i, p := range ok {
		if err := p.Validate(lim); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
	}
	bad := map[string]*Profile{
		"group 0":           {Viewed: []GroupIDs{{0, []int64{1}}}},
		"group negative":    {Recommended: []GroupIDs{{-1, []int64{1}}}},
		"id 0":              {Viewed: []GroupIDs{{1, []int64{0}}}},
		"duplicate group":   {Viewed: []GroupIDs{{1, nil}, {1, nil}}},
		"duplicate id":      {Viewed: []GroupIDs{{1, []int64{5, 5}}}},
		"too many groups":   {Viewed: []GroupIDs{{1, nil}, {2, nil}, {3, nil}}},
		"too many viewed":   {Viewed: []GroupIDs{{1, []int64{1, 2, 3, 4}}}},
		"too many rec":      {Recommended: []GroupIDs{{1, []int64{1, 2, 3, 4, 5}}}},
		"empty segment":     {Segments: []string{""}},
		"duplicate segment": {Segments: []string{"a", "a"}},
		"control segment":   {Segments: []string{"a\x00"}},
		"too many segments": {Segments: strings.Split(strings.Repeat("x,", MaxSegments)+"y", ",")},
	}
	for name, p := range bad {
		if name == "too many segments" {
			for i := range p.Segments {
				p.Segments[i] += strings.Repeat("z", i) // distinct
			}
		}
		if err := p.Validate(lim); !errors.Is(err, ErrInvalidProfile) {
			t.Errorf("%s: err = %v, want ErrInvalidProfile", name, err)
		}
	}
}

func TestCheckUID(t *testing.T) {
	for _, uid := range []string{"a", "demo-user-1", strings.Repeat("x", MaxUIDLen), "ユーザー", "55816b39711f9b5acf3b90e313ed29e51665623f"} {
		if err := CheckUID(uid); err != nil || !ValidUID(uid) {
			t.Errorf("CheckUID(%q) = %v", uid, err)
		}
	}
	for _, uid := range []string{"", strings.Repeat("x", MaxUIDLen+1), "a\tb", "a\x7f", "\xff\xfe", "a\nb"} {
		if err := CheckUID(uid); !errors.Is(err, ErrInvalidUID) || ValidUID(uid) {
			t.Errorf("CheckUID(%q) = %v, want ErrInvalidUID", uid, err)
		}
	}
}
