//go:build !race

package bidder

import (
	"path/filepath"
	"testing"
)

// TestBidAllocationsWithRequestRates: a request carrying its exchange's
// rates (ext.prebid.currency), lower-case codes and a floor converted
// with them costs no allocation over the plain bid.
func TestBidAllocationsWithRequestRates(t *testing.T) {
	f := newFixture(t, nil)
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk,
		"cur", []string{"usd"},
		"imp", []any{map[string]any{"id": "1", "bidfloor": 0.5, "bidfloorcur": "eur", "banner": map[string]any{"w": 300, "h": 250}}},
		"ext", currencyExt(map[string]map[string]any{"GBP": {"USD": 1.25, "EUR": 1.2, "JPY": 190}, "usd": {"sek": 10.5}}, nil))
	allocs := bidAllocs(t, f.b.Handler(), bidCtx(body), "one bid with request rates")
	t.Logf("one bid with request rates: %.0f allocations", allocs)
	if allocs > 19 {
		t.Errorf("%.0f allocations per bid, want <= 19 (the plain bid's pin)", allocs)
	}
}
