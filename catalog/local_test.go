package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

func openFixture(t *testing.T, opts catalog.LocalOptions) (*catalog.Local, string) {
	t.Helper()
	dir := t.TempDir()
	catalogtest.WriteFixture(t, dir)
	if opts.WatchInterval == 0 {
		opts.WatchInterval = -1
	}
	l, err := catalog.OpenLocal(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, dir
}

func TestLocalConformance(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	catalogtest.Run(t, l)
}

func TestLocalConformanceNoHotCache(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{HotCacheEntries: -1})
	catalogtest.Run(t, l)
}

func TestLocalConformanceTinyHotCache(t *testing.T) {
	// A cache far smaller than the catalog keeps evicting: answers must not change.
	l, _ := openFixture(t, catalog.LocalOptions{HotCacheEntries: 8})
	catalogtest.Run(t, l)
	if s := l.Stats(); s.HotEntries > 64 || s.HotHits == 0 {
		t.Fatalf("hot cache stats %+v: want bounded entries and some hits", s)
	}
}

// TestLocalHotCacheCounts: each id a lookup takes from the hot cache or
// not is counted once (the counters are added per lookup).
func TestLocalHotCacheCounts(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{})
	req := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup, Product1Ids: []int64{1, 2, 3}, Product1QuantityAtMost: 3,
		Product2Ids: []int64{11, 12}, Product2QuantityAtMost: 2}
	for i, want := range []struct{ hits, misses int64 }{{0, 5}, {5, 5}, {10, 5}} {
		if _, err := l.GetProductMasters(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.HotHits != want.hits || s.HotMisses != want.misses {
			t.Errorf("after lookup %d: %d hits, %d misses, want %d and %d", i+1, s.HotHits, s.HotMisses, want.hits, want.misses)
		}
	}
}

// TestLocalConformanceWireCache: a catalog node's cache (products kept as
// their encoding, decoded strings aliasing it) answers the same, also
// while evicting.
func TestLocalConformanceWireCache(t *testing.T) {
	for _, hot := range []int{0, 8} {
		l, _ := openFixture(t, catalog.LocalOptions{HotCacheEntries: hot, WireCache: true})
		catalogtest.Run(t, l)
	}
}

var _ = time.Second
