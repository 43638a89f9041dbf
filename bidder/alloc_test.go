//go:build !race

package bidder

import (
	"path/filepath"
	"testing"
	"time"
)

// TestBidAllocations pins the allocations of one bid with 15 products (the
// spec's simple banner request, a user with 15 products shown) through
// the in-process handler: local Pebble catalog (hot cache), Pebble user
// store, creative, signed URLs, encoding. Most of them are the OpenRTB
// decoder's (15 for this request, see rtb.TestAllocations).
func TestBidAllocations(t *testing.T) {
	f := newFixture(t, nil)
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	rc := bidCtx(body)
	h := f.b.Handler()
	run := func() {
		rc.Response.Reset()
		h(rc)
	}
	for i := 0; i < 20; i++ { // warm the pools, caches and buffers
		run()
	}
	if rc.Response.StatusCode() != 200 {
		t.Fatalf("status %d: %s", rc.Response.StatusCode(), rc.Response.Body())
	}
	allocs := testing.AllocsPerRun(200, run)
	t.Logf("one bid with 15 products: %.0f allocations", allocs)
	// Pinned at what it is (18: 15-16 in the decoder, 2 in the local
	// catalog's response, none in the bidder itself) plus one for Pebble,
	// which allocates on a read from a disk table. Issue 4's target is 30.
	const pinned = 19
	if allocs > pinned {
		t.Errorf("%.0f allocations per bid, want <= %d", allocs, pinned)
	}
	// A no-bid for an unknown user costs the decoder's allocations and the
	// lookup's, nothing more.
	nb := bidCtx(withUser(t, body, "nobody"))
	noBid := testing.AllocsPerRun(200, func() { nb.Response.Reset(); h(nb) })
	t.Logf("no-bid for an unknown user: %.0f allocations", noBid)
	if noBid > 16 {
		t.Errorf("%.0f allocations per unknown-user no-bid, want <= 16", noBid)
	}
}

// TestAdmissionAllocations pins the admission control's per-request work
// (reading tmax from the raw body, judging the wait) at no allocation.
func TestAdmissionAllocations(t *testing.T) {
	a := NewAdmission(AdmissionOptions{})
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 120)
	rc := bidCtx(body)
	now := time.Unix(1_700_000_000, 0)
	var tmax int64
	allocs := testing.AllocsPerRun(200, func() {
		tmax = peekTMax(rc)
		a.Shed(20*time.Millisecond, time.Duration(tmax)*time.Millisecond, now)
		now = now.Add(time.Millisecond)
	})
	if tmax != 120 {
		t.Fatalf("peekTMax = %d, want 120", tmax)
	}
	if allocs != 0 {
		t.Fatalf("%.1f allocations per admission decision, want 0", allocs)
	}
}
