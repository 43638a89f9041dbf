package catalogtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/remote"
)

// TestRemoteConformance runs the suite through the remote client against
// three real catalog nodes on loopback, each serving its own Local over the
// same fixture: local and remote must answer identically.
func TestRemoteConformance(t *testing.T) {
	dir := t.TempDir()
	catalogtest.WriteFixture(t, dir)
	var addrs []string
	for i := 0; i < 3; i++ {
		addrs = append(addrs, catalogtest.ServeLocal(t, dir, catalog.LocalOptions{WatchInterval: -1, MaxIDs: catalogtest.MaxIDs}))
	}
	// Near cache off (GetProductMasters on the nodes), then on at sizes
	// from a few entries to all of the fixture (GetProducts, the
	// semantics applied by the client).
	for _, size := range []int64{0, 300, 4 << 10, 64 << 20} {
		t.Run(fmt.Sprintf("near_cache_bytes=%d", size), func(t *testing.T) {
			c, err := remote.New(remote.Options{
				Target:         "static:///" + strings.Join(addrs, ","),
				CallTimeout:    10 * time.Second,
				NearCacheBytes: size,
				MaxIDs:         catalogtest.MaxIDs,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			t.Run("GetProductMasters", func(t *testing.T) { catalogtest.Run(t, c) })
			t.Run("batch", func(t *testing.T) { catalogtest.Run(t, batch{c}) })
		})
	}
}

// batch answers each lookup through GetProductMastersBatch, one request a
// batch.
type batch struct{ c *remote.Client }

func (b batch) GetProductMasters(ctx context.Context, r *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	resps := make([]*catalogpb.ProductMastersResponse, 1)
	if err := b.c.GetProductMastersBatch(ctx, []*catalogpb.ProductMastersRequest{r}, resps); err != nil {
		return nil, err
	}
	return resps[0], nil
}
