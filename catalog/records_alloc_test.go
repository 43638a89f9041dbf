package catalog_test

import (
	"context"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// AppendProducts, a node's GetProducts, allocates nothing once warm: its
// scratch is pooled and the values are copied from Pebble into dst.
func TestAppendProductsAllocs(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	ids := make([]int64, 0, 40)
	for id := int64(200); id > 160; id-- { // descending: the reads are sorted
		ids = append(ids, id)
	}
	req := &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{
		{ProductGroupId: catalogtest.BulkGroup, ProductIds: ids},
		{ProductGroupId: catalogtest.TalkGroup, ProductIds: []int64{110, 101, catalogtest.MissingID, 105}},
	}}
	ctx := context.Background()
	dst := make([]byte, 0, 64<<10)
	var n, found int
	var err error
	f := func() { dst, n, found, err = l.AppendProducts(ctx, req, dst[:0]) }
	f()
	if err != nil || n != 44 || found != 43 {
		t.Fatalf("%d records, %d found, %v; want 44, 43", n, found, err)
	}
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	if a := testing.AllocsPerRun(200, f); a != 0 {
		t.Errorf("AppendProducts: %.1f allocations per call, want 0", a)
	}
	c := catalog.Changes{Version: l.IndexVersion(), Keys: []catalog.ProductKey{{Group: 1, ID: 2}, {Group: 1, ID: 5}, {Group: 3, ID: 1}}}
	if a := testing.AllocsPerRun(200, func() { dst = catalog.AppendChanges(dst[:0], c) }); a != 0 {
		t.Errorf("AppendChanges: %.1f allocations per call, want 0", a)
	}
}

// GetProductMastersInto, the bid path's lookup through catalog.Fetcher,
// allocates nothing once warm on hot-cache hits: it answers into the
// caller's response, reusing its lists; its answer is GetProductMasters'.
func TestGetProductMastersIntoAllocs(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	viewed := make([]int64, 0, 10)
	for id := int64(1); id <= 10; id++ {
		viewed = append(viewed, id)
	}
	rec := make([]int64, 0, 20)
	for id := int64(11); id <= 30; id++ {
		rec = append(rec, id)
	}
	req := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup,
		Product1Ids: viewed, Product1QuantityAtMost: 10, Product2Ids: rec, Product2QuantityAtMost: 20}
	ctx := context.Background()
	want, err := l.GetProductMasters(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var resp catalogpb.ProductMastersResponse
	f := func() { err = l.GetProductMastersInto(ctx, req, &resp) }
	f()
	if err != nil || len(resp.Product1S) != len(want.Product1S) || len(resp.Product2S) != len(want.Product2S) || len(resp.Product2S) == 0 {
		t.Fatalf("Into: %d + %d products, %v; GetProductMasters: %d + %d", len(resp.Product1S), len(resp.Product2S), err, len(want.Product1S), len(want.Product2S))
	}
	for i, p := range want.Product2S {
		if resp.Product2S[i] != p {
			t.Fatalf("Into's product %d differs from GetProductMasters'", i)
		}
	}
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	if a := testing.AllocsPerRun(200, f); a != 0 {
		t.Errorf("GetProductMastersInto: %.1f allocations per call, want 0", a)
	}
}
