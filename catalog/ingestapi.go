package catalog

// Functions the ingest job (package ingest) needs beyond NewBuilder and
// Finish: delta versions built from a copy of the live one, tables written
// from already-encoded records (and tombstones), and sealing a version so
// that nothing can remove it between Finish and Publish.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
)

// NewDeltaBuilder starts a new version of the index in dir as a copy of the
// published version base, to which a delta (upserts and deletes) is then
// applied with Put/Delete or with tables (NewSST, IngestSSTs).
//
// The copy is cheap and leaves base untouched: base's table files
// (*.sst, *.blob), which Pebble never modifies, are hard-linked into the new
// directory; every other file (MANIFEST, OPTIONS, markers, the WAL) is
// copied, so the writable open of the copy never appends to a file base
// shares. (Pebble v2 starts a new MANIFEST on its first edit after an open
// and writes a new OPTIONS file; it removes its obsolete copies, which only
// unlinks names in the new directory.) base is never opened writable.
// The caller must hold the data directory's lock (LockDir).
//
// Pebble's own DB.Checkpoint makes the same kind of copy, but needs base
// open, and base may only be opened read-only (its readers share it), which
// Checkpoint does not support: a read-only open writes no OPTIONS file, and
// Checkpoint fails on the missing OPTIONS-000000 (pebble v2.1.7). The copy
// is therefore made from the files.
func NewDeltaBuilder(dir, base string, log *zap.Logger) (*Builder, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if !validVersionName(base) {
		return nil, fmt.Errorf("catalog: bad version name %q", base)
	}
	src := VersionPath(dir, base)
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("catalog: delta base: %w", err)
	}
	name := newVersionName(time.Now())
	if name <= base { // clock went back: keep names increasing
		name = base + "d"
	}
	path := VersionPath(dir, name)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	marker, err := tryLockExclusive(filepath.Join(path, buildingFile))
	if err != nil {
		os.RemoveAll(path)
		return nil, fmt.Errorf("catalog: %w", err)
	}
	fail := func(err error) (*Builder, error) {
		marker.Close()
		os.RemoveAll(path)
		return nil, err
	}
	for _, e := range ents {
		n := e.Name()
		switch {
		case !e.Type().IsRegular():
			continue
		case n == readersFile, n == buildingFile, n == "LOCK", strings.HasPrefix(n, "staging-"), strings.HasPrefix(n, deltaSSTPrefix):
			continue // locks of base's readers, builder and Pebble; leftover NewSST files
		case n == metaFile, n == changesFile:
			continue // base's identity: the delta writes its own
		case strings.HasSuffix(n, ".sst"), strings.HasSuffix(n, ".blob"):
			if err := os.Link(filepath.Join(src, n), filepath.Join(path, n)); err != nil {
				return fail(fmt.Errorf("catalog: delta base: %w", err))
			}
		default:
			if err := copyFile(filepath.Join(src, n), filepath.Join(path, n)); err != nil {
				return fail(fmt.Errorf("catalog: delta base: %w", err))
			}
		}
	}
	if err := syncDir(path); err != nil {
		return fail(err)
	}
	o := pebbleOptions(log)
	o.DisableWAL = true // a crash discards the whole version anyway
	o.ErrorIfNotExists = true
	// No background compaction: it could rewrite the whole catalog and make
	// a delta as slow as a rebuild. A delta's tables stack on top of the
	// version (L0 or the lowest free level); a full ingest flattens them.
	o.DisableAutomaticCompactions = true
	db, err := pebble.Open(path, o)
	if err != nil {
		return fail(fmt.Errorf("catalog: opening the copy of %s: %w", base, err))
	}
	return &Builder{dir: dir, name: name, db: db, batch: db.NewBatch(), marker: marker, log: log,
		base: base, snap: db.NewSnapshot()}, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Set adds a product already encoded: key from AppendKey, value from
// AppendValue. Keys must ascend across Set and Delete calls.
func (s *SST) Set(key, value []byte) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	if err := s.w.Set(key, value); err != nil {
		return fmt.Errorf("catalog: sst: %w", err)
	}
	s.last = append(s.last[:0], key...)
	s.n++
	s.touch(key)
	return nil
}

// NewDeltaSST is NewSST for a delta's tables, which may hold tombstones
// (Delete) and are ingested above the version's data. NewSST's tables are
// written for the lowest level, where Pebble marks a tombstone obsolete and
// readers skip it: a delete would silently not apply.
func (b *Builder) NewDeltaSST() (*SST, error) { return b.newSST(deltaSSTPrefix, 0) }

const deltaSSTPrefix = "delta-"

// Delete adds a tombstone for key (a delta removing a product from the
// version it is applied to); only in a table from NewDeltaSST. Keys must
// ascend across Set and Delete calls.
func (s *SST) Delete(key []byte) error {
	if !strings.HasPrefix(filepath.Base(s.path), deltaSSTPrefix) {
		return errors.New("catalog: sst: Delete needs a table from NewDeltaSST")
	}
	if err := s.checkKey(key); err != nil {
		return err
	}
	if err := s.w.Delete(key); err != nil {
		return fmt.Errorf("catalog: sst: %w", err)
	}
	s.last = append(s.last[:0], key...)
	s.n++
	s.touch(key)
	return nil
}

// touch records a delta table's key for the builder (Builder.touch), a
// few thousand at a time: tables are written concurrently.
func (s *SST) touch(key []byte) {
	if s.b == nil || s.b.base == "" {
		return
	}
	g, id, _ := ParseKey(key)
	s.touched = append(s.touched, ProductKey{g, id})
	if len(s.touched) >= 4096 {
		s.b.touch(s.touched)
		s.touched = s.touched[:0]
	}
}

var errNotProductKey = errors.New("catalog: sst: not a product key")

func (s *SST) checkKey(key []byte) error {
	if _, _, ok := ParseKey(key); !ok {
		return fmt.Errorf("%w: %x", errNotProductKey, key)
	}
	if s.n > 0 && bytes.Compare(key, s.last) <= 0 {
		g, id, _ := ParseKey(key)
		return fmt.Errorf("catalog: sst: product %d/%d out of order", g, id)
	}
	return nil
}

// EstimatedSize is the table's size so far, in bytes, were it finished now
// (for rolling to a new table at a size).
func (s *SST) EstimatedSize() uint64 { return s.w.Raw().EstimatedSize() }

// Seal completes the version like Finish (commit, flush, compact if compact
// and Put/Delete were used, sync, close) but keeps it marked as being built,
// so that no RemoveUnusedVersions (run by Publish and by every serving
// process after it switches versions) can delete it before it is published.
// Follow with PublishSealed, or Abort to discard it.
func (b *Builder) Seal(compact bool) (name string, err error) {
	if b.db == nil {
		return "", errors.New("catalog: builder already finished")
	}
	if err := b.closeVersion(compact); err != nil {
		return "", err
	}
	if err := syncDir(b.Path()); err != nil {
		return "", err
	}
	return b.name, nil
}

// PublishSealed makes the sealed version live (Publish) and then drops its
// BUILDING mark. A crash in between leaves a harmless marker file in a
// published version.
func (b *Builder) PublishSealed() error {
	if b.db != nil || b.marker == nil {
		return errors.New("catalog: PublishSealed needs a sealed builder")
	}
	if err := Publish(b.dir, b.name); err != nil {
		return err
	}
	os.Remove(filepath.Join(b.Path(), buildingFile))
	b.release()
	return syncDir(b.Path())
}

// CountProducts returns how many products version name in dir holds, from
// its tables' properties (no scan, milliseconds). The count is exact when
// every table sits in one level (non-overlapping, as a bulk-built or fully
// compacted version's tables do): each key is then in one table, and a
// tombstone there hides nothing. Otherwise (a version layered by deltas)
// it is an estimate that takes every upper-level entry for a new product
// and every upper-level tombstone for a removed one, and exact is false.
// Safe while other processes read the version.
func CountProducts(dir, name string) (n int64, exact bool, err error) {
	db, err := openReadOnly(VersionPath(dir, name), nil, zap.NewNop())
	if err != nil {
		return 0, false, err
	}
	defer db.Close()
	levels, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		return 0, false, fmt.Errorf("catalog: %w", err)
	}
	// Tables of similar lists (written apart from the products') are not
	// products.
	for l, tables := range levels {
		levels[l] = slices.DeleteFunc(tables, func(t pebble.SSTableInfo) bool { return similarTable(t.Smallest.UserKey) })
	}
	used, bottom := 0, -1
	for l, tables := range levels {
		if len(tables) > 0 {
			used, bottom = used+1, l
			if l == 0 && len(tables) > 1 {
				used++ // L0 tables may overlap
			}
		}
	}
	for l, tables := range levels {
		for _, t := range tables {
			if t.Properties == nil {
				return 0, false, fmt.Errorf("%w: %s: table %s has no properties", ErrCorrupt, name, t.FileNum)
			}
			e, d := int64(t.Properties.NumEntries), int64(t.Properties.NumDeletions)
			if l == bottom {
				n += e - d
			} else {
				n += e - 2*d
			}
		}
	}
	return max(n, 0), used <= 1, nil
}
