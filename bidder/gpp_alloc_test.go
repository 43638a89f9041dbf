//go:build !race

package bidder

import (
	"path/filepath"
	"testing"

	"github.com/rtbd/rtbd/bidder/privacy/privacytest"
)

// TestPrivacyGPPAllocations: a whole bid with a US national GPP section
// costs the section's parse (pinned in package privacy) and the
// decoder's regs and gpp_sid array over the same bid without regs.
func TestPrivacyGPPAllocations(t *testing.T) {
	fx := privacytest.GPPFixtures(t)
	f := newFixture(t, nil)
	h := f.b.Handler()
	plain := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	body := withUser(t, plain, userBulk, "regs", map[string]any{"gpp": fx["usnat-clean"].GPP, "gpp_sid": []int{7}})
	base := bidAllocs(t, h, bidCtx(plain), "bid without GPP")
	allocs := bidAllocs(t, h, bidCtx(body), "bid with GPP")
	t.Logf("one bid with a US national GPP section: %.0f allocations, %.0f without", allocs, base)
	if allocs > base+12 {
		t.Errorf("%.0f allocations per GPP bid, %.0f without: want at most 12 more", allocs, base)
	}
}
