//go:build !race

package bidder

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSecureBidAllocations: a bid on a secure imp, from the secure base,
// costs no allocation over the plain bid's pin (TestBidAllocations), also
// when products with http images are left out of the creative.
func TestSecureBidAllocations(t *testing.T) {
	banner := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		check string // in the adm: the bid is what is measured
	}{
		{"https public_url", nil, "https://bid.example.com/click/"},
		{"secure_public_url, http images left out", func(o *Options) {
			o.PublicURL, o.SecurePublicURL = plainBase, secureBase
			o.Products = newPlainImages(o.Products)
		}, secureBase + "/click/"},
	} {
		f := newFixture(t, tc.edit)
		rc := bidCtx(withSecure(t, banner, userBulk, 1))
		allocs := bidAllocs(t, f.b.Handler(), rc, tc.name)
		t.Logf("%s: %.0f allocations", tc.name, allocs)
		if body := string(rc.Response.Body()); !strings.Contains(body, tc.check) || strings.Contains(body, "http://") {
			t.Fatalf("%s: response lacks %q or has an http URL: %.300s", tc.name, tc.check, body)
		}
		if allocs > 19 {
			t.Errorf("%s: %.0f allocations per secure bid, want <= 19 (the plain bid's pin)", tc.name, allocs)
		}
	}
}
