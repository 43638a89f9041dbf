package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Builder writes a new index version beside the live one. Nothing reads it
// until Publish names it in CURRENT, so a crash at any point leaves the live
// version untouched; the half-built directory is removed by the next ingest.
// The caller must hold the data directory's lock (LockDir). Not safe for
// concurrent use.
type Builder struct {
	dir, name string
	db        *pebble.DB
	batch     *pebble.Batch
	marker    *fileLock
	key, val  []byte
	puts      int64
	dels      int64
	ssts      int
	log       *zap.Logger
}

// batchBytes is the size at which Put commits its batch.
const batchBytes = 4 << 20

// NewBuilder creates an empty version directory in dir.
func NewBuilder(dir string, log *zap.Logger) (*Builder, error) {
	if log == nil {
		log = zap.NewNop()
	}
	name := newVersionName(time.Now())
	path := VersionPath(dir, name)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	marker, err := tryLockExclusive(filepath.Join(path, buildingFile))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	o := pebbleOptions(log)
	o.DisableWAL = true // a crash discards the whole version anyway
	db, err := pebble.Open(path, o)
	if err != nil {
		marker.Close()
		os.RemoveAll(path)
		return nil, fmt.Errorf("catalog: creating %s: %w", path, err)
	}
	return &Builder{dir: dir, name: name, db: db, batch: db.NewBatch(), marker: marker, log: log}, nil
}

// Name is the version being built.
func (b *Builder) Name() string { return b.name }

// Path is the directory of the version being built.
func (b *Builder) Path() string { return VersionPath(b.dir, b.name) }

// DB is the version's Pebble DB, for bulk paths (DB().Ingest of SSTables
// written with NewSSTWriter). Valid until Finish or Abort.
func (b *Builder) DB() *pebble.DB { return b.db }

// Put writes p (last write of an id wins).
func (b *Builder) Put(p *catalogpb.Product) error {
	b.key = AppendKey(b.key[:0], p.ProductGroupId, p.ProductId)
	b.val = AppendValue(b.val[:0], p)
	if err := b.batch.Set(b.key, b.val, nil); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	b.puts++
	return b.maybeCommit()
}

// Delete removes a product.
func (b *Builder) Delete(group, id int64) error {
	b.key = AppendKey(b.key[:0], group, id)
	if err := b.batch.Delete(b.key, nil); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	b.dels++
	return b.maybeCommit()
}

func (b *Builder) maybeCommit() error {
	if b.batch.Len() < batchBytes {
		return nil
	}
	return b.commit()
}

func (b *Builder) commit() error {
	if b.batch.Empty() {
		return nil
	}
	if err := b.batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	b.batch.Reset()
	return nil
}

// Finish commits what is buffered, compacts the version into a read-optimal
// shape, syncs and closes it. The version is complete but not live: call
// Publish(dir, name) to switch to it.
func (b *Builder) Finish() (name string, err error) {
	if b.db == nil {
		return "", errors.New("catalog: builder already finished")
	}
	defer b.release()
	if err := b.closeVersion(true); err != nil {
		return "", err
	}
	os.Remove(filepath.Join(b.Path(), buildingFile))
	if err := syncDir(b.Path()); err != nil {
		return "", err
	}
	return b.name, nil
}

// closeVersion commits what is buffered, flushes, compacts the products
// into a read-optimal shape when compact and Put/Delete were used (ingested
// tables need no compaction) and closes the database.
func (b *Builder) closeVersion(compact bool) error {
	if err := b.commit(); err != nil {
		return err
	}
	b.batch.Close()
	b.batch = nil
	if err := b.db.Flush(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if compact && b.puts+b.dels > 0 {
		lo, hi := []byte{productKeyPrefix}, []byte{productKeyPrefix + 1}
		if err := b.db.Compact(context.Background(), lo, hi, true /* parallelize */); err != nil {
			return fmt.Errorf("catalog: compacting %s: %w", b.name, err)
		}
	}
	err := b.db.Close()
	b.db = nil
	if err != nil {
		return fmt.Errorf("catalog: closing %s: %w", b.name, err)
	}
	return nil
}

// Abort discards the version being built.
func (b *Builder) Abort() {
	if b.db != nil {
		b.db.Close()
		b.db = nil
	}
	b.release()
	os.RemoveAll(b.Path())
}

func (b *Builder) release() {
	if b.batch != nil {
		b.batch.Close()
		b.batch = nil
	}
	if b.db != nil {
		b.db.Close()
		b.db = nil
	}
	if b.marker != nil {
		b.marker.Close()
		b.marker = nil
	}
}

func contextBackground() context.Context { return context.Background() }

// Counts returns the puts and deletes written so far.
func (b *Builder) Counts() (puts, deletes int64) { return b.puts, b.dels }
