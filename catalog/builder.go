package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
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

	// A delta's base version and a snapshot of it (the builder's DB as
	// opened), from which the delta's changes and content hash are
	// computed at Seal/Finish.
	base string
	snap *pebble.Snapshot
	// touched: keys a delta wrote (Put, Delete, its tables), unsorted,
	// until there are too many to keep (overflow: the content hash is then
	// computed by a scan and the chain of changes starts afresh).
	tmu      sync.Mutex
	touched  []ProductKey
	overflow bool
	// The version's identity, once sealed.
	hash    uint64
	changed int
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
	if b.base != "" {
		b.touch([]ProductKey{{p.ProductGroupId, p.ProductId}})
	}
	return b.maybeCommit()
}

// Delete removes a product.
func (b *Builder) Delete(group, id int64) error {
	b.key = AppendKey(b.key[:0], group, id)
	if err := b.batch.Delete(b.key, nil); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	b.dels++
	if b.base != "" {
		b.touch([]ProductKey{{group, id}})
	}
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
	if err := b.writeMeta(); err != nil {
		return err
	}
	if b.snap != nil {
		b.snap.Close()
		b.snap = nil
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
	if b.snap != nil {
		b.snap.Close()
		b.snap = nil
	}
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

// ContentHash is the sealed version's content hash (see HashRecord);
// valid after Seal or Finish.
func (b *Builder) ContentHash() uint64 { return b.hash }

// ChangedKeys is how many products a sealed delta changed against its base
// (values that differ, inserts, removals); 0 for a full snapshot, -1 for a
// delta that wrote too many keys to list (its chain of changes starts
// afresh, as a full snapshot's does). Valid after Seal or Finish.
func (b *Builder) ChangedKeys() int { return b.changed }

// touch records keys a delta wrote. The list is compacted when it grows
// past twice the chain bound and dropped (overflow) if still over it.
func (b *Builder) touch(keys []ProductKey) {
	b.tmu.Lock()
	defer b.tmu.Unlock()
	if b.overflow {
		return
	}
	b.touched = append(b.touched, keys...)
	if len(b.touched) > 2*maxChainKeys {
		slices.SortFunc(b.touched, keyCmp)
		b.touched = slices.Compact(b.touched)
		if len(b.touched) > maxChainKeys {
			b.touched, b.overflow = nil, true
		}
	}
}

// writeMeta computes the version's content hash and chain of changes and
// writes them into its directory (META, CHANGES). A full snapshot's hash
// is one scan of what was written; a delta's is its base's, minus the
// shares of the base's records it replaced or removed, plus its own
// records' (only the keys it wrote are read, in both versions).
func (b *Builder) writeMeta() error {
	if b.base == "" {
		h, err := scanHash(b.db)
		if err != nil {
			return err
		}
		b.hash, b.changed = h, 0
		return writeVersionMeta(b.Path(), h, nil)
	}
	basePath := VersionPath(b.dir, b.base)
	baseHash, ok, err := readContentHash(basePath)
	if err != nil || !ok {
		if err != nil {
			b.log.Warn("delta base has an unreadable META; hashing it", zap.String("base", b.base), zap.Error(err))
		}
		if baseHash, err = scanHash(b.snap); err != nil {
			return err
		}
	}
	if b.overflow {
		h, err := scanHash(b.db)
		if err != nil {
			return err
		}
		b.hash, b.changed = h, -1
		return writeVersionMeta(b.Path(), h, nil)
	}
	slices.SortFunc(b.touched, keyCmp)
	keys := slices.Compact(b.touched)
	b.touched = nil
	oldIt, err := b.snap.NewIter(nil)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer oldIt.Close()
	newIt, err := b.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer newIt.Close()
	var key [KeyLen]byte
	get := func(it *pebble.Iterator) ([]byte, bool, error) {
		if it.SeekGE(key[:]) && bytes.Equal(it.Key(), key[:]) {
			v, err := it.ValueAndErr()
			return v, err == nil, err
		}
		return nil, false, it.Error()
	}
	hash := baseHash
	changed := keys[:0] // keys is ours: filter in place
	for _, k := range keys {
		putKey(&key, k.Group, k.ID)
		ov, oldOK, err := get(oldIt)
		if err != nil {
			return fmt.Errorf("catalog: reading the base of %s: %w", b.name, err)
		}
		nv, newOK, err := get(newIt)
		if err != nil {
			return fmt.Errorf("catalog: reading %s: %w", b.name, err)
		}
		if oldOK == newOK && bytes.Equal(ov, nv) {
			continue
		}
		if oldOK {
			hash -= HashRecord(key[:], ov)
		}
		if newOK {
			hash += HashRecord(key[:], nv)
		}
		changed = append(changed, k)
	}
	chain, err := readChain(basePath, baseHash)
	if err != nil {
		b.log.Warn("delta base's chain of changes unreadable; starting a new one", zap.String("base", b.base), zap.Error(err))
		chain = nil
	}
	if len(changed) > 0 {
		chain = append(chain, changeStep{from: baseHash, to: hash, keys: slices.Clip(changed)})
	}
	b.hash, b.changed = hash, len(changed)
	return writeVersionMeta(b.Path(), hash, boundChain(chain, maxChainKeys))
}
