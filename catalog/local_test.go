package catalog_test

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
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
