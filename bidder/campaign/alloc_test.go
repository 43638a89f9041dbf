//go:build !race

package campaign

import (
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// TestAllocations pins the hot path at zero allocations: Match with an out
// slice of capacity Len(), MatchDeal, BidMicros and BannerSize, on a set
// that exercises every index (domains lower-cased from an upper-case
// request, countries, regions, segments, dayparts in two zones, deals).
func TestAllocations(t *testing.T) {
	s := benchSet(t, 100)
	example, err := LoadFile("testdata/campaigns.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]*Campaign{}, s.All()...), example.All()...)
	s = mustSet(t, all...)
	req := benchRequest()
	req.Site.Domain = "WWW.News.Example.JP"
	req.Site.Publisher.ID = "8953"
	req.Imp[0].PMP = pmp(0, openrtb2.Deal{ID: "AB-Agency1-0001", BidFloor: 2, WSeat: []string{"Agency1"}})
	imp := &req.Imp[0]
	now := time.Date(2026, 7, 15, 3, 0, 0, 0, time.UTC) // Wednesday 12:00 in Tokyo
	out := make([]*Campaign, 0, s.Len())
	segs := []string{"x", "auto-intender"}
	var n int
	allocs := testing.AllocsPerRun(200, func() {
		out = s.Match(req, imp, segs, now, out[:0], nil)
		n = len(out)
	})
	if allocs != 0 {
		t.Errorf("Match: %v allocations, want 0", allocs)
	}
	if n < 10 {
		t.Fatalf("only %d campaigns matched; the test must exercise matches", n)
	}
	ex, _ := s.Get("summer-sale-jp")
	if got := s.Match(req, imp, segs, now, nil, nil); !containsCampaign(got, ex) {
		t.Fatal("the example campaign must match, to exercise its targeting")
	}
	allocs = testing.AllocsPerRun(200, func() {
		for _, c := range out {
			_ = c.BidMicros(req, now)
			_, _, _ = c.BannerSize(imp)
			_, _, _, _ = s.MatchDeal(c, imp)
		}
	})
	if allocs != 0 {
		t.Errorf("BidMicros, BannerSize, MatchDeal: %v allocations, want 0", allocs)
	}
	_ = adcom1.DeviceMobile
}

func containsCampaign(list []*Campaign, c *Campaign) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}
