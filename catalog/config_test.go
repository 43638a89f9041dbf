package catalog_test

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/configs"
)

func TestLocalOptionsFromConfig(t *testing.T) {
	c := configs.Catalog{BlockCacheMB: 3, HotCacheEntries: 500, MaxIDs: 77, WatchInterval: 2 * time.Second}
	o := catalog.LocalOptionsFromConfig(c, nil, nil)
	if o.BlockCacheBytes != 3<<20 || o.HotCacheEntries != 500 || o.MaxIDs != 77 || o.WatchInterval != 2*time.Second {
		t.Fatalf("options %+v from %+v", o, c)
	}
	// configs' 0 (no hot cache) is LocalOptions' negative; LocalOptions' 0
	// would be its default size.
	c.HotCacheEntries = 0
	if o := catalog.LocalOptionsFromConfig(c, nil, nil); o.HotCacheEntries >= 0 {
		t.Fatalf("hot_cache_entries 0 gave HotCacheEntries %d, want negative (off)", o.HotCacheEntries)
	}
}
