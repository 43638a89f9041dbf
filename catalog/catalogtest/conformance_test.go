package catalogtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

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
			w := &cached{c: c}
			t.Run("cached", func(t *testing.T) { catalogtest.Run(t, w) })
			if size == 64<<20 && w.answered.Load() == 0 {
				t.Error("GetProductMastersCached answered no lookup with the whole fixture cached")
			}
		})
	}
}

// cached answers each lookup as the bidder does with the near cache on:
// from GetProductMastersCached when it can, else through the batch call;
// and then, the products now cached, from GetProductMastersCached again,
// whose answer must be the same.
type cached struct {
	c        *remote.Client
	answered atomic.Int64 // lookups GetProductMastersCached answered
}

func (w *cached) GetProductMasters(ctx context.Context, r *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", catalog.ErrDeadline, err)
	}
	resp := new(catalogpb.ProductMastersResponse)
	if w.c.GetProductMastersCached(r, resp) {
		w.answered.Add(1)
		return resp, nil
	}
	got, err := batch{w.c}.GetProductMasters(ctx, r)
	if err != nil {
		return nil, err
	}
	if w.c.GetProductMastersCached(r, resp) {
		w.answered.Add(1)
		if !sameProducts(resp.Product1S, got.Product1S) || !sameProducts(resp.Product2S, got.Product2S) {
			return nil, fmt.Errorf("cached answer %v %v differs from the batch's %v %v",
				productIDs(resp.Product1S), productIDs(resp.Product2S), productIDs(got.Product1S), productIDs(got.Product2S))
		}
	}
	return got, nil
}

func productIDs(ps []*catalogpb.Product) []int64 {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ProductId
	}
	return ids
}

func sameProducts(a, b []*catalogpb.Product) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
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
