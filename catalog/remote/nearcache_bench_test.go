package remote

import (
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// The near cache's request paths against one in-process fake node on
// loopback: all-hit (no call) GetProductMasters and batch of 15 ids, and an
// all-miss request of 15 ids (one GetProducts call; the cache is too small
// to keep anything). Compare ns/op within one run; the machine may be
// shared and noisy.
func BenchmarkNearCache(b *testing.B) {
	n := startProductNode(b, catalogtest.Products(), ver(1, 0xA))
	r := bulkReq(1, 15)
	b.Run("hit/GetProductMasters", func(b *testing.B) {
		c := nearClient(b, 1<<20, nil, n)
		ctx := bgCtx(b)
		if _, err := c.GetProductMasters(ctx, r); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.GetProductMasters(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(c.NearCacheStats().HitRatio(), "hit-ratio")
	})
	b.Run("hit/batch", func(b *testing.B) {
		c := nearClient(b, 1<<20, nil, n)
		ctx := bgCtx(b)
		reqs, resps := []*catalogpb.ProductMastersRequest{r}, make([]*catalogpb.ProductMastersResponse, 1)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.GetProductMastersBatch(ctx, reqs, resps); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("miss/GetProductMasters", func(b *testing.B) {
		c := nearClient(b, 100, nil, n) // room for nothing
		ctx := bgCtx(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.GetProductMasters(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
