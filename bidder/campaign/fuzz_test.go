package campaign

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse checks Parse never panics, fails only with a
// *ValidationError, and that what it accepts survives Marshal and Parse
// unchanged.
func FuzzParse(f *testing.F) {
	f.Add(docExample(f))
	if base, err := Marshal([]*Campaign{baseCampaign()}); err == nil {
		f.Add(base)
	}
	f.Add([]byte(valid))
	f.Add([]byte("campaigns: []\n"))
	f.Add([]byte("campaigns: [{id: a, bid_cpm: -1, creative: {sizes: [1x1, 300y250]}}]\n"))
	f.Add([]byte("a: &a [*a]\ncampaigns: *a\n"))
	if data, err := os.ReadFile("testdata/campaigns.yaml"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz")
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		out, err := Marshal(s.All())
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		s2, err := Parse(out, "again")
		if err != nil {
			t.Fatalf("Marshal output does not parse: %v\n%s", err, out)
		}
		if d := diffCampaigns(s2.All(), s.All()); d != "" {
			t.Fatalf("round trip: %s\n%s", d, out)
		}
	})
}
