//go:build !race

package bidder

import (
	"path/filepath"
	"testing"
)

// TestBatchAllocations: the 3-imp request of TestBatchOneCall through a
// catalog.BatchGetter (one call for its four lookups) allocates no more than
// through a plain ProductStore (four calls) over the same local catalog:
// the batch's requests and answers are reused slices of the request state.
func TestBatchAllocations(t *testing.T) {
	body := batchRequest(t, 200)
	fb := batchFixture(t, func(p ProductStore) ProductStore { return &batchProducts{ProductStore: p} })
	fp := batchFixture(t, func(p ProductStore) ProductStore { return &countingProducts{ProductStore: p} })
	batch := bidAllocs(t, fb.b.Handler(), bidCtx(body), "batch store")
	plain := bidAllocs(t, fp.b.Handler(), bidCtx(body), "plain store")
	t.Logf("3 imps, 4 lookups: %.0f allocations with one batch call, %.0f with a call per lookup", batch, plain)
	if batch > plain {
		t.Errorf("%.0f allocations per bid with the batch store, want <= %.0f (the plain store's)", batch, plain)
	}
}

// TestRemoteNearAllocations: a 15-product bid through the real remote
// client whose near cache holds the products (no catalog call) allocates
// no more than the same bid on the local index: the batch's answers and
// their lists are kept in the request state from bid to bid.
func TestRemoteNearAllocations(t *testing.T) {
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	local, near := nearHandlers(t, body)
	l := bidAllocs(t, local, bidCtx(body), "local index")
	n := bidAllocs(t, near, bidCtx(body), "near cache")
	t.Logf("one bid with 15 products: %.0f allocations on the local index, %.0f through the near cache", l, n)
	if n > l {
		t.Errorf("%.0f allocations per bid through the near cache, want <= %.0f (the local index's)", n, l)
	}
}
