//go:build !race

package bidder

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/overload"
)

// bidAllocs warms h on rc (pools, caches, buffers), checks that rc is
// answered with a bid, and returns the allocations of one more run.
func bidAllocs(t *testing.T, h fasthttp.RequestHandler, rc *fasthttp.RequestCtx, what string) float64 {
	t.Helper()
	run := func() {
		rc.Response.Reset()
		h(rc)
	}
	for i := 0; i < 20; i++ {
		run()
	}
	if rc.Response.StatusCode() != 200 {
		t.Fatalf("%s: status %d: %.300s", what, rc.Response.StatusCode(), rc.Response.Body())
	}
	return testing.AllocsPerRun(200, run)
}

// TestBidAllocations pins the allocations of one bid with 15 products (the
// spec's simple banner request, a user with 15 products shown) through
// the in-process handler: local Pebble catalog (hot cache), Pebble user
// store, creative, signed URLs, encoding. Most of them are the OpenRTB
// decoder's (15 for this request, see rtb.TestAllocations).
func TestBidAllocations(t *testing.T) {
	f := newFixture(t, nil)
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	h := f.b.Handler()
	allocs := bidAllocs(t, h, bidCtx(body), "one bid")
	t.Logf("one bid with 15 products: %.0f allocations", allocs)
	// The plain bid's pin, which the other allocation tests compare with:
	// the decoder's allocations (see rtb.TestAllocations) with room.
	const pinned = 19
	if allocs > pinned {
		t.Errorf("%.0f allocations per bid, want <= %d", allocs, pinned)
	}
	// A no-bid for an unknown user costs the decoder's allocations, nothing
	// more; and the bid costs no more than that no-bid: the user store
	// (its value cache), the catalog lookup (answered into the request
	// state's response), the creative, the tokens and the encoding
	// allocate nothing.
	nb := bidCtx(withUser(t, body, "nobody"))
	noBid := testing.AllocsPerRun(200, func() { nb.Response.Reset(); h(nb) })
	t.Logf("no-bid for an unknown user: %.0f allocations", noBid)
	if noBid > 16 {
		t.Errorf("%.0f allocations per unknown-user no-bid, want <= 16", noBid)
	}
	if allocs > noBid {
		t.Errorf("%.0f allocations per bid, want no more than the unknown-user no-bid's %.0f (the decoder's)", allocs, noBid)
	}
}

// TestSimilarBidAllocations: a bid for a user with viewed products only,
// whose recommended products the catalog resolves from the similar lists
// of the viewed ones, costs no more allocations than the same bid for a
// user whose profile carries Recommended, and shows products of those
// lists.
func TestSimilarBidAllocations(t *testing.T) {
	f := newFixture(t, nil)
	body := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	h := f.b.Handler()
	rec := bidAllocs(t, h, bidCtx(withUser(t, body, userBulk)), "bid with Recommended")
	rc := bidCtx(withUser(t, body, userViewed))
	sim := bidAllocs(t, h, rc, "bid with similar lists")
	t.Logf("allocations per bid: %.0f with Recommended, %.0f from similar lists", rec, sim)
	if sim > rec || sim > 19 {
		t.Errorf("%.0f allocations per bid from similar lists, want <= %.0f (with Recommended) and <= 19", sim, rec)
	}
	if out := string(rc.Response.Body()); !strings.Contains(out, "img.example.com/1/31.jpg") {
		t.Errorf("the bid shows no product of the similar lists (image 1/31): %.300s", out)
	}
}

// TestExchangeBidAllocations: routing to a named exchange
// (/openrtb2/bid/{name}) and resolving user.id through the match table
// cost no allocation over the plain bid.
func TestExchangeBidAllocations(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Exchanges = []Exchange{{Name: "pbs"}} })
	if err := f.users.PutMatch(t.Context(), "pbs:x-bulk", userBulk); err != nil {
		t.Fatal(err)
	}
	body := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	h := f.b.Handler()
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"buyeruid", withUser(t, body, userBulk)},
		{"user.id through the match table", withUserID(t, body, "x-bulk")},
	} {
		rc := bidCtx(tc.body)
		rc.Request.SetRequestURI(PathBid + "/pbs")
		if allocs := bidAllocs(t, h, rc, tc.name); allocs > 19 {
			t.Errorf("%s: %.0f allocations per bid on /openrtb2/bid/pbs, want <= 19 (the plain bid's pin)", tc.name, allocs)
		}
	}
}

// TestAdmissionAllocations pins the admission control's per-request work
// (reading tmax from the raw body, judging the wait) at no allocation.
func TestAdmissionAllocations(t *testing.T) {
	a := overload.NewAdmission(overload.AdmissionOptions{})
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

// TestBillingTrackerAllocations: a banner with its /imp impression pixel,
// to an exchange whose tokens carry its name and billing mode, costs no
// allocation over the plain bid.
func TestBillingTrackerAllocations(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Exchanges = []Exchange{{Name: "render", Billing: token.BillingRender}}
		o.BannerImpPixel = true
	})
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	h := f.b.Handler()
	for _, path := range []string{PathBid, PathBid + "/render"} {
		rc := bidCtx(body)
		rc.Request.SetRequestURI(path)
		allocs := bidAllocs(t, h, rc, path)
		if !strings.Contains(string(rc.Response.Body()), PathImp+"?t=") {
			t.Fatalf("%s: no impression pixel in %.300s", path, rc.Response.Body())
		}
		if allocs > 19 {
			t.Errorf("%s: %.0f allocations per bid with an impression pixel, want <= 19 (the plain bid's pin)", path, allocs)
		}
	}
}
