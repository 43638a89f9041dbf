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
