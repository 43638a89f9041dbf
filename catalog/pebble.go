package catalog

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// pebbleOptions are the options every index version is written and read
// with: bloom filters for point lookups, 4 KiB blocks, Snappy.
func pebbleOptions(log *zap.Logger) *pebble.Options {
	o := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{log.Sugar()},
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].BlockSize = 4 << 10
	}
	o.EnsureDefaults()
	return o
}

// pebbleLogger routes Pebble's own log lines to zap. Fatalf logs and panics
// (Pebble's contract for Fatalf is that it does not return).
type pebbleLogger struct{ s *zap.SugaredLogger }

func (l pebbleLogger) Infof(format string, args ...any)  { l.s.Debugf("pebble: "+format, args...) }
func (l pebbleLogger) Errorf(format string, args ...any) { l.s.Errorf("pebble: "+format, args...) }
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.s.Errorf("pebble: "+format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// sharedReadFS lets several processes (a bidder and a catalog node on one
// host) and several opens in one process read the same published version:
// Pebble takes an exclusive lock on a DB directory even in read-only mode,
// but a published version is immutable, so readers need no mutual
// exclusion. Readers announce themselves with a shared flock on READERS
// instead, which keeps the version from being deleted under them.
type sharedReadFS struct{ vfs.FS }

func (sharedReadFS) Lock(string) (io.Closer, error) { return io.NopCloser(nil), nil }

// openReadOnly opens a published version for reading.
func openReadOnly(path string, cache *pebble.Cache, log *zap.Logger) (*pebble.DB, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("catalog: index version %s: %w", path, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("catalog: index version %s: not a directory", path)
	}
	o := pebbleOptions(log)
	o.ReadOnly = true
	o.ErrorIfNotExists = true
	o.Cache = cache
	o.FS = sharedReadFS{vfs.Default}
	o.MaxOpenFiles = 4096
	db, err := pebble.Open(path, o)
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %w", ErrCorrupt, path, err)
	}
	return db, nil
}

func readersLockPath(dir, name string) string {
	return filepath.Join(VersionPath(dir, name), readersFile)
}
