package demo_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/gen/demo"
)

// wed is a Wednesday, 03:00 UTC.
var wed = time.Date(2026, 5, 13, 3, 0, 0, 0, time.UTC)

func demoSet(t *testing.T, groups []int64, currency string) *campaign.Set {
	t.Helper()
	s, err := campaign.NewSet(demo.Campaigns(groups, currency))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCampaignsRoundTrip(t *testing.T) {
	for _, cur := range []string{"USD", "JPY", ""} {
		cs := demo.Campaigns([]int64{3, 1, 2, 3}, cur)
		data, err := campaign.Marshal(cs)
		if err != nil {
			t.Fatal(err)
		}
		s, err := campaign.Parse(data, "demo")
		if err != nil {
			t.Fatalf("%s: %v\n%s", cur, err, data)
		}
		back, err := campaign.Marshal(s.All())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("%s: parsed campaigns marshal differently:\n%s\nwant\n%s", cur, back, data)
		}
		if len(cs) != 3*3+1 {
			t.Fatalf("%d campaigns for 3 distinct groups", len(cs))
		}
		again, _ := campaign.Marshal(demo.Campaigns([]int64{3, 1, 2, 3}, cur))
		if string(again) != string(data) {
			t.Fatal("Campaigns is not deterministic")
		}
	}
	if got := demo.Campaigns(nil, "USD"); len(got) != 0 {
		t.Fatalf("no groups: %d campaigns", len(got))
	}
}

// TestCampaignsCoverage checks the demo promise: for every group, every
// common size and native get a bid, on site and app, in any country and
// device.
func TestCampaignsCoverage(t *testing.T) {
	groups := []int64{10, 20}
	s := demoSet(t, groups, "JPY")
	templates := map[string]bool{}
	for _, c := range s.All() {
		templates[c.Creative.Template] = true
		if c.Currency != "JPY" || c.BidCPMMicros < 100_000_000 || c.Status != campaign.StatusActive ||
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
				req := loadRequest(t, "request-1-simple-banner.json") // a site
				req.Device = &openrtb2.Device{DeviceType: adcom1.DevicePhone, OS: "iOS", Geo: &openrtb2.Geo{Country: "BRA"}}
				if app {
					req.Site = nil
					req.App = &openrtb2.App{Bundle: "com.Example.App", Publisher: &openrtb2.Publisher{ID: "pub1"}}
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

// loadRequest reads one of the OpenRTB 2.6 spec's example requests.
func loadRequest(tb testing.TB, name string) *openrtb2.BidRequest {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "rtb", "testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	var r openrtb2.BidRequest
	if err := json.Unmarshal(data, &r); err != nil {
		tb.Fatal(err)
	}
	return &r
}

// TestSpecExamplesWithCampaigns runs the demo campaigns against the spec's
// example requests: each gets a campaign but the video one.
func TestSpecExamplesWithCampaigns(t *testing.T) {
	s := demoSet(t, []int64{5}, "USD")
	cases := []struct {
		file string
		want []string
	}{
		{"request-1-simple-banner.json", []string{"demo-5-medium", "demo-5-heavy"}},
		{"request-2-expandable-creative.json", []string{"demo-5-medium", "demo-5-heavy"}},
		{"request-3-mobile.json", []string{"demo-5-light"}},
		{"request-4-video.json", nil},
		{"request-5-pmp-with-direct-deal.json", []string{"demo-deal"}},
	}
	for _, tc := range cases {
		req := loadRequest(t, tc.file)
		var why campaign.Rejections
		var ids []string
		for _, c := range s.Match(req, &req.Imp[0], nil, wed, nil, &why) {
			ids = append(ids, c.ID)
		}
		if !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("%s: matched %v, want %v (rejections %v)", tc.file, ids, tc.want, why.ByCampaign)
		}
	}
	req := loadRequest(t, "request-4-video.json")
	var why campaign.Rejections
	s.Match(req, &req.Imp[0], nil, wed, nil, &why)
	if why.ByCampaign["demo-5-medium"] != campaign.ReasonVideo {
		t.Errorf("video: reason %q", why.ByCampaign["demo-5-medium"])
	}
	req = loadRequest(t, "request-5-pmp-with-direct-deal.json")
	c, _ := s.Get("demo-deal")
	if id, floor, cur, ok := s.MatchDeal(c, &req.Imp[0]); !ok || id != demo.DealID || floor != 2_500_000 || cur != "USD" {
		t.Errorf("request 5 deal: %q %d %q %v", id, floor, cur, ok)
	}
}
