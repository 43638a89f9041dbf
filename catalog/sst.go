package catalog

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// SST writes one sorted table of products for a Builder's bulk path
// (Builder.IngestSSTs). Products must be added in ascending (group, id)
// order, each key once. Not safe for concurrent use; one SST per goroutine.
type SST struct {
	path     string
	w        *sstable.Writer
	key, val []byte
	last     []byte
	n        int64
	b        *Builder
	touched  []ProductKey // a delta's keys not yet handed to b
}

// NewSST creates the next table file in the builder's staging area.
func (b *Builder) NewSST() (*SST, error) { return b.newSST("staging-", 6) }

// newSST creates the builder's next table file, named prefix and a serial
// number, written with the options of LSM level.
func (b *Builder) newSST(prefix string, level int) (*SST, error) {
	b.ssts++
	path := filepath.Join(b.Path(), prefix+strconv.Itoa(b.ssts)+".sst")
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	o := pebbleOptions(b.log)
	wo := o.MakeWriterOptions(level, b.db.TableFormat())
	return &SST{path: path, w: sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo), b: b}, nil
}

// Add appends p; its (group, id) must sort after the previous product's.
func (s *SST) Add(p *catalogpb.Product) error {
	s.key = AppendKey(s.key[:0], p.ProductGroupId, p.ProductId)
	if s.n > 0 && bytes.Compare(s.key, s.last) <= 0 {
		return fmt.Errorf("catalog: sst: product %d/%d out of order", p.ProductGroupId, p.ProductId)
	}
	s.val = AppendValue(s.val[:0], p)
	if err := s.w.Set(s.key, s.val); err != nil {
		return fmt.Errorf("catalog: sst: %w", err)
	}
	s.last = append(s.last[:0], s.key...)
	s.n++
	s.touch(s.key)
	return nil
}

// Len is the number of products added.
func (s *SST) Len() int64 { return s.n }

// Finish closes the table and returns its path (empty if it holds nothing,
// in which case the file is removed).
func (s *SST) Finish() (string, error) {
	if len(s.touched) > 0 {
		s.b.touch(s.touched)
		s.touched = nil
	}
	if err := s.w.Close(); err != nil {
		return "", fmt.Errorf("catalog: sst: %w", err)
	}
	if s.n == 0 {
		vfs.Default.Remove(s.path)
		return "", nil
	}
	return s.path, nil
}

// IngestSSTs moves finished tables into the version (Pebble's ingest path:
// no rewrite; non-overlapping tables go straight to the bottom level).
func (b *Builder) IngestSSTs(paths []string) error {
	var ps []string
	for _, p := range paths {
		if p != "" {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	if err := b.commit(); err != nil {
		return err
	}
	if err := b.db.Ingest(contextBackground(), ps); err != nil {
		return fmt.Errorf("catalog: ingesting %d tables: %w", len(ps), err)
	}
	return nil
}
