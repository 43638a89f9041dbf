package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/configs"
)

// A node serves GetProducts and GetChanges under its limits (catalog.max_ids)
// and puts its version on every answer.
func TestNodeServesRecordsAndVersions(t *testing.T) {
	n, cl := startFixtureNode(t, func(c *configs.Catalog) { c.MaxIDs = 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iv := n.Local().IndexVersion()
	if iv.Generation != 1 || iv.ContentHash == 0 {
		t.Fatalf("node's version %+v", iv)
	}
	resp, err := cl.GetProducts(ctx, &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{
		{ProductGroupId: catalogtest.TalkGroup, ProductIds: []int64{catalogtest.OutOfStockID, catalogtest.MissingID}},
		{ProductGroupId: catalogtest.OtherGroup, ProductIds: []int64{catalogtest.OtherGroupID}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Records) != 3 || len(resp.Records[0].Value) == 0 || len(resp.Records[1].Value) != 0 || len(resp.Records[2].Value) == 0 ||
		resp.Version.GetContentHash() != iv.ContentHash || resp.Version.GetGeneration() != 1 {
		t.Errorf("GetProducts answer %v", resp)
	}
	_, err = cl.GetProducts(ctx, &catalogpb.ProductsRequest{Groups: []*catalogpb.ProductKeys{{ProductGroupId: 1, ProductIds: []int64{1, 2, 3, 4, 5}}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "maximum 4") {
		t.Errorf("5 ids over catalog.max_ids 4: %v", err)
	}
	ch, err := cl.GetChanges(ctx, &catalogpb.ChangesRequest{Since: &catalogpb.IndexVersion{Generation: 1, ContentHash: iv.ContentHash}})
	if err != nil || ch.Full || len(ch.Changed) != 0 || ch.Version.GetContentHash() != iv.ContentHash {
		t.Errorf("GetChanges since the node's version: %v, %v", ch, err)
	}
	pm, err := cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup,
		Product1QuantityAtMost: 3, Product1Ids: []int64{101}})
	if err != nil || pm.Version.GetContentHash() != iv.ContentHash || pm.Version.GetGeneration() != 1 {
		t.Errorf("GetProductMasters answer %v, %v: want the version", pm, err)
	}
}
