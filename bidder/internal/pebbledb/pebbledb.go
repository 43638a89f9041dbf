// Package pebbledb opens the bidder's Pebble stores (user profiles, spend,
// the notice journal) with one set of options, their log lines routed to
// zap.
package pebbledb

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// Options are what the stores set differently.
type Options struct {
	FS     vfs.FS
	Logger *zap.Logger
	// CacheBytes is the block cache; 0: Pebble's default.
	CacheBytes int64
	// Bloom puts a bloom filter on every level: lookups of absent keys
	// skip most blocks.
	Bloom bool
	// BlockSize is the data block size on every level; 0: Pebble's default.
	BlockSize int
}

// Open opens (creating dir if needed) the Pebble database in dir, in the
// newest format.
func Open(dir string, o Options) (*pebble.DB, error) {
	if err := o.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	po := &pebble.Options{FS: o.FS, FormatMajorVersion: pebble.FormatNewest, Logger: NewLogger(o.Logger)}
	if o.CacheBytes > 0 {
		po.Cache = pebble.NewCache(o.CacheBytes)
		defer po.Cache.Unref() // the DB holds its own reference
	}
	for i := range po.Levels {
		if o.Bloom {
			po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		}
		if o.BlockSize > 0 {
			po.Levels[i].BlockSize = o.BlockSize
		}
	}
	return pebble.Open(dir, po)
}
