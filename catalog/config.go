package catalog

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/configs"
)

// LocalOptionsFromConfig maps the catalog section of the config to the
// local index's options (configs says 0 disables the hot cache;
// LocalOptions says negative). A bidder's embedded index and a catalog node
// open their index with it.
func LocalOptionsFromConfig(c configs.Catalog, log *zap.Logger, reg prometheus.Registerer) LocalOptions {
	hot := c.HotCacheEntries
	if hot == 0 {
		hot = -1
	}
	return LocalOptions{
		BlockCacheBytes: int64(c.BlockCacheMB) << 20,
		HotCacheEntries: hot,
		MaxIDs:          c.MaxIDs,
		WatchInterval:   c.WatchInterval,
		Logger:          log,
		Registerer:      reg,
	}
}
