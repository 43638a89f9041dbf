//go:build !race

package bidder

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/shading"
)

// TestShadedBidAllocations pins a first-price bid priced by a trained
// Shader (shaded, its segment counted, its tokens carrying segment and
// bucket) at the allocations of an unshaded one: shading adds none.
func TestShadedBidAllocations(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Shading = &shading.Options{} })
	trainShader(t, f.b.Shader(), time.Now())
	h := f.b.Handler()
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "at", 1)
	shaded := bidAllocs(t, h, bidCtx(body), "a shaded bid")
	plain := newFixture(t, nil)
	unshaded := bidAllocs(t, plain.b.Handler(), bidCtx(body), "an unshaded bid")
	t.Logf("first-price bid: %.0f allocations shaded, %.0f without shading", shaded, unshaded)
	if shaded > unshaded {
		t.Errorf("%.0f allocations per shaded bid, want at most the %.0f of an unshaded one", shaded, unshaded)
	}
	if got := f.counter("rtbd_shading_bids_total", "how", "shaded") + f.counter("rtbd_shading_bids_total", "how", "explored"); got == 0 {
		t.Error("no bid was shaded")
	}
}

// TestPacedBidAllocations: even pacing's multiplier (its Pacer moving
// every minute of the fixture's clock) adds no allocation to a bid with
// budgets: the pin of TestBidAllocationsWithBudgets.
func TestPacedBidAllocations(t *testing.T) {
	set := moneyCampaigns(t, "    daily_budget: 1000\n")
	for _, c := range set.All() {
		c.Pacing = campaign.PacingEven
	}
	f := newMoneyFixture(t, set)
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	h, rc := f.b.Handler(), bidCtx(body)
	for range 20 {
		rc.Response.Reset()
		h(rc)
	}
	allocs := testing.AllocsPerRun(200, func() {
		f.clock.Add(time.Minute)
		rc.Response.Reset()
		h(rc)
	})
	if rc.Response.StatusCode() != 200 {
		t.Fatalf("status %d: %.300s", rc.Response.StatusCode(), rc.Response.Body())
	}
	t.Logf("one paced bid: %.0f allocations", allocs)
	if allocs > 20 {
		t.Errorf("%.0f allocations per paced bid, want <= 20 (as without pacing)", allocs)
	}
}
