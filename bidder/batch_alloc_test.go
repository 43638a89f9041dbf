//go:build !race

package bidder

import "testing"

// TestBatchAllocations: the 3-imp request of TestBatchOneCall through a
// BatchProductStore (one call for its four lookups) allocates no more than
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
