package campaign

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeSpec: one campaign as JSON decodes into the Spec the file's
// YAML gives, and Compile takes it; unknown keys and wrong kinds are
// problems naming the key inside the campaign.
func TestDecodeSpec(t *testing.T) {
	s, err := DecodeSpec([]byte(`{"id": "c1", "adomain": ["shop.example"], "product_group_id": 7,
		"status": "active", "bid_cpm": 1.25, "creative": {"template": "light", "sizes": ["300x250"]}}`), "row c1")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Compile("rows", []Spec{s})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := set.Get("c1"); !ok || set.Len() != 1 || c.BidCPMMicros != 1_250_000 {
		t.Fatalf("Compile: %d campaigns, c1 %+v", set.Len(), c)
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"id": "c1", "bid_cmp": 1}`, `bid_cmp: unknown key (did you mean "bid_cpm"?)`},
		{`{"adomain": "x.com"}`, "adomain: must be a list"},
		{`{"creative": {"sizes": {"a": 1}}}`, "creative.sizes: must be a list"},
		{`{"id": "a", "id": "b"}`, "id:"},
		{`[1, 2]`, "must be a mapping"},
		{`null`, "empty campaign"},
		{`{"id": `, "yaml:"},
	} {
		_, err := DecodeSpec([]byte(tc.doc), "row")
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(strings.Join(ve.Problems, "\n"), tc.want) {
			t.Errorf("DecodeSpec(%s) = %v, want a problem %q", tc.doc, err, tc.want)
		}
	}
}
