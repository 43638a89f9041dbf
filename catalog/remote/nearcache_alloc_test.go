//go:build !race

package remote

import (
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// A batch the near cache answers whole allocates nothing (responses reused
// by the caller); GetProductMasters allocates only the response it hands
// over (one allocation for up to 16 products).
func TestNearCacheAllHitsAllocs(t *testing.T) {
	n := startProductNode(t, catalogtest.Products(), ver(1, 0xA))
	c := nearClient(t, 1<<20, nil, n)
	ctx := bgCtx(t)
	reqs := []*catalogpb.ProductMastersRequest{
		{ProductGroupId: catalogtest.TalkGroup, Product1QuantityAtMost: 3, Product1Ids: []int64{103, 999, 101},
			Product2QuantityAtMost: 4, Product2Ids: []int64{106, 105, 998, 104}},
		bulkReq(1, 15),
		bulkReq(1, 60), // a long list: the map de-duplication
	}
	resps := make([]*catalogpb.ProductMastersResponse, len(reqs))
	if err := c.GetProductMastersBatch(ctx, reqs, resps); err != nil {
		t.Fatal(err)
	}
	calls := n.calls()
	batch := testing.AllocsPerRun(500, func() {
		if err := c.GetProductMastersBatch(ctx, reqs, resps); err != nil {
			t.Fatal(err)
		}
	})
	single := testing.AllocsPerRun(500, func() {
		if _, err := c.GetProductMasters(ctx, reqs[0]); err != nil {
			t.Fatal(err)
		}
	})
	if n.calls() != calls {
		t.Fatalf("%d GetProducts calls during all-hit requests", n.calls()-calls)
	}
	t.Logf("allocs: all-hit batch of 3 %.1f, all-hit GetProductMasters %.1f", batch, single)
	if batch != 0 {
		t.Errorf("all-hit batch allocates %.1f per call, want 0", batch)
	}
	if single > 1 {
		t.Errorf("all-hit GetProductMasters allocates %.1f per call, want 1 (its response)", single)
	}
	if len(resps[2].Product1S) != 54 { // 60 ids, every 10th out of stock
		t.Fatalf("long list answer has %d products", len(resps[2].Product1S))
	}
}
