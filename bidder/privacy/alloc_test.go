//go:build !race

package privacy

import (
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/privacy/privacytest"
)

// TestPrivacyGPPAllocations: the privacy decision allocates nothing
// without GPP, nor for a GPP string no listed section applies to; a
// listed GPP section costs go-gpp's parse (9 allocations for a US
// national section, 8 for a TCF one with go-gdpr's, 2 for a US Privacy
// one), pinned with a little room.
func TestPrivacyGPPAllocations(t *testing.T) {
	fx := privacytest.GPPFixtures(t)
	for _, tc := range []struct {
		name string
		regs *openrtb2.Regs
		max  float64
	}{
		{"no regs", nil, 0},
		{"us_privacy", &openrtb2.Regs{USPrivacy: "1YNN"}, 0},
		{"gpp, nothing listed", &openrtb2.Regs{GPP: fx["usnat-clean"].GPP, GPPSID: []int8{}}, 0},
		{"gpp, no gpp_sid", &openrtb2.Regs{GPP: fx["usnat-clean"].GPP}, 0},
		{"usnat", &openrtb2.Regs{GPP: fx["usnat-clean"].GPP, GPPSID: []int8{7}}, 11},
		{"tcf", &openrtb2.Regs{GPP: fx["tcf-consent"].GPP, GPPSID: []int8{2}}, 10},
		{"us privacy section", &openrtb2.Regs{GPP: fx["tcf-usp"].GPP, GPPSID: []int8{6}}, 3},
	} {
		req := &openrtb2.BidRequest{Regs: tc.regs}
		exts := extsOf(t, req)
		allocs := testing.AllocsPerRun(200, func() {
			s := FromRequest(req, exts)
			s.Decide(32)
		})
		t.Logf("%s: %.0f allocations", tc.name, allocs)
		if allocs > tc.max {
			t.Errorf("%s: %.0f allocations per privacy decision, want <= %.0f", tc.name, allocs, tc.max)
		}
	}
}
