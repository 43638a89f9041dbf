package recommended

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/bidder/user"
)

var testLimits = user.Limits{MaxGroups: 3, MaxViewed: 50, MaxRecommended: 4}

func TestParseLine(t *testing.T) {
	var l Line
	good := `{"uid": "u-1", "recommended": [{"group": 7, "ids": [9, 3]}, {"group": 2, "ids": [5]}]}`
	if err := ParseLine([]byte(good), testLimits, &l); err != nil {
		t.Fatal(err)
	}
	want := Line{UID: "u-1", Recommended: []user.GroupIDs{{Group: 7, IDs: []int64{9, 3}}, {Group: 2, IDs: []int64{5}}}}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("%+v, want %+v", l, want)
	}
	if err := ParseLine([]byte(`{"recommended": [], "uid": "u-2"}`), testLimits, &l); err != nil || l.UID != "u-2" || len(l.Recommended) != 0 {
		t.Fatalf("an empty list: %+v %v", l, err)
	}
	for _, tc := range []struct {
		line, want string
		is         error
	}{
		{``, "not a JSON object", nil},
		{`garbage`, "not valid JSON", nil},
		{`{"uid": "u", "recommended": []`, "not a JSON object", nil},
		{`[1]`, "want a JSON object", nil},
		{`{"uid": "u"}`, `no "recommended"`, nil},
		{`{"recommended": []}`, `no "uid"`, nil},
		{`{"uid": "u", "recommended": [], "extra": 1}`, `unknown field "extra"`, nil},
		{`{"uid": "u", "recommended": []} {}`, "more than one JSON value", nil},
		{`{"uid": 5, "recommended": []}`, `"uid": want a string`, nil},
		{`{"uid": "u", "recommended": {}}`, `"recommended": want an array`, nil},
		{`{"uid": "u", "recommended": [{"ids": [1]}]}`, `recommended[0]: no "group"`, nil},
		{`{"uid": "u", "recommended": [{"group": 1.5, "ids": [1]}]}`, "want an integer", nil},
		{`{"uid": "u", "recommended": [{"group": 1, "ids": [99999999999999999999]}]}`, "want an integer", nil},
		{`{"uid": "u", "recommended": [{"group": 1, "ids": ["1"]}]}`, "want an integer", nil},
		{`{"uid": "", "recommended": []}`, "empty", user.ErrInvalidUID},
		{`{"uid": "a\u0000b", "recommended": []}`, "control character", user.ErrInvalidUID},
		{`{"uid": "` + strings.Repeat("x", user.MaxUIDLen+1) + `", "recommended": []}`, "longer than", user.ErrInvalidUID},
		{`{"uid": "u", "recommended": [{"group": 0, "ids": [1]}]}`, "group id 0", user.ErrInvalidProfile},
		{`{"uid": "u", "recommended": [{"group": 1, "ids": [-4]}]}`, "product id -4", user.ErrInvalidProfile},
		{`{"uid": "u", "recommended": [{"group": 1, "ids": [4, 4]}]}`, "listed twice", user.ErrInvalidProfile},
		{`{"uid": "u", "recommended": [{"group": 1, "ids": [4]}, {"group": 1, "ids": [5]}]}`, "group 1 listed twice", user.ErrInvalidProfile},
		{`{"uid": "u", "recommended": [{"group": 1}, {"group": 2}, {"group": 3}, {"group": 4}]}`, "4 groups, more than 3", user.ErrInvalidProfile},
		{`{"uid": "u", "recommended": [{"group": 1, "ids": [1, 2, 3, 4, 5]}]}`, "5 products, more than 4", user.ErrInvalidProfile},
	} {
		err := ParseLine([]byte(tc.line), testLimits, &l)
		if !errors.Is(err, ErrBadLine) || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v, want ErrBadLine saying %q (and %v)", tc.line, err, tc.want, tc.is)
		}
	}
}

// FuzzParseLine: no line makes ParseLine panic, and a line it accepts is
// one every store accepts.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"uid": "u-1", "recommended": [{"group": 7, "ids": [9, 3]}, {"group": 2, "ids": [5]}]}`,
		`{"uid": "u", "recommended": []}`,
		`{"uid": "u", "recommended": [{"group": 1, "ids": [4, 4]}]}`,
		`{"uid": "u", "recommended": [{"group": 1}]}`,
		`{"uid": "\u00e9", "recommended": null}`,
		`[]`, `"x"`, `{}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var l Line
		if err := ParseLine(b, testLimits, &l); err != nil {
			if !errors.Is(err, ErrBadLine) {
				t.Fatalf("%q: %v does not wrap ErrBadLine", b, err)
			}
			return
		}
		if err := user.CheckRecommended(l.UID, l.Recommended, testLimits); err != nil {
			t.Fatalf("%q accepted, but the stores refuse it: %v", b, err)
		}
		p := user.Profile{Recommended: l.Recommended}
		if err := p.Validate(testLimits); err != nil {
			t.Fatalf("%q accepted, but its profile is invalid: %v", b, err)
		}
	})
}
