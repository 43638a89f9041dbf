package campaign

import (
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

func TestDemoCampaignsRoundTrip(t *testing.T) {
	for _, cur := range []string{"USD", "JPY", ""} {
		cs := DemoCampaigns([]int64{3, 1, 2, 3}, cur)
		data, err := Marshal(cs)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(data, "demo")
		if err != nil {
			t.Fatalf("%s: %v\n%s", cur, err, data)
		}
		if d := diffCampaigns(s.All(), cs); d != "" {
			t.Fatalf("%s: %s\n%s", cur, d, data)
		}
		if len(cs) != 3*3+1 {
			t.Fatalf("%d campaigns for 3 distinct groups", len(cs))
		}
		again, _ := Marshal(DemoCampaigns([]int64{3, 1, 2, 3}, cur))
		if string(again) != string(data) {
			t.Fatal("DemoCampaigns is not deterministic")
		}
	}
	if got := DemoCampaigns(nil, "USD"); len(got) != 0 {
		t.Fatalf("no groups: %d campaigns", len(got))
	}
}

// TestDemoCoverage checks the demo promise: for every group, every common
// size and native get a bid, on site and app, in any country and device.
func TestDemoCoverage(t *testing.T) {
	groups := []int64{10, 20}
	s := mustSet(t, DemoCampaigns(groups, "JPY")...)
	templates := map[string]bool{}
	for _, c := range s.All() {
		templates[c.Creative.Template] = true
		if c.Currency != "JPY" || c.BidCPMMicros < 100_000_000 || c.Status != StatusActive ||
			len(c.Targeting.Dayparts) != 0 || c.ADomain[0] != "shop-example.com" || c.Cat[0] != "IAB22" {
			t.Errorf("%s: %+v", c.ID, c)
		}
	}
	if len(templates) != 3 {
		t.Errorf("templates %v, want light, medium and heavy", templates)
	}
	sizes := [][2]int64{{300, 250}, {336, 280}, {728, 90}, {160, 600}, {320, 50}, {300, 50}}
	for _, g := range groups {
		for _, app := range []bool{false, true} {
			imps := []openrtb2.Imp{{ID: "n", Native: &openrtb2.Native{Request: "{}"}}}
			for _, sz := range sizes {
				imps = append(imps, openrtb2.Imp{ID: "b", Banner: &openrtb2.Banner{Format: []openrtb2.Format{{W: sz[0], H: sz[1]}}}})
			}
			for _, imp := range imps {
				req := baseRequest()
				req.Device.Geo.Country = "BRA"
				if app {
					toApp(req)
				}
				found := false
				for _, c := range s.Match(req, &imp, nil, wed, nil, nil) {
					found = found || c.ProductGroupID == g
				}
				if !found {
					t.Errorf("group %d app=%v: no campaign for imp %+v", g, app, imp.Banner)
				}
			}
		}
	}
}
