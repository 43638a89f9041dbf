package catalog

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// IndexVersion identifies the index a store serves (catalogpb.IndexVersion):
// ContentHash depends on the products alone (see HashRecord), so two
// processes that ingested the same feed agree on it; Generation is the data
// directory's publish count (DIR/CURRENT), rollbacks included.
type IndexVersion struct {
	Generation  uint64
	ContentHash uint64
}

// Proto returns v as its protobuf message.
func (v IndexVersion) Proto() *catalogpb.IndexVersion {
	return &catalogpb.IndexVersion{Generation: v.Generation, ContentHash: v.ContentHash}
}

// ProductKey names one product of one group.
type ProductKey struct{ Group, ID int64 }

// Changes is the answer to "what changed since version X" (Local.Changes).
type Changes struct {
	// Version is the store's current version.
	Version IndexVersion
	// Full: the store cannot list the changes since X (a full snapshot or a
	// rollback since, a version it never had, a chain of deltas that does
	// not reach back that far); every product may have changed.
	Full bool
	// Keys are the products whose stored value differs between X and
	// Version (upserted with other bytes, inserted, deleted), in key order
	// (group, then id). Empty when Full or when X is Version's content.
	Keys []ProductKey
}

// HashRecord is one record's share of a version's content hash: the
// 64-bit xxHash of the key (AppendKey) followed by the value (AppendValue).
// A version's content hash is the sum, modulo 2^64, of HashRecord over all
// its records: independent of the order or the way they were written, and
// a delta updates it without a scan (minus the old records' shares, plus
// the new ones').
func HashRecord(key, value []byte) uint64 {
	var d xxhash.Digest
	d.Reset()
	d.Write(key)
	d.Write(value)
	return d.Sum64()
}

// Files a version directory holds besides Pebble's, written before the
// version is published.
const (
	// metaFile holds the version's content hash: "content_hash %016x\n".
	metaFile = "META"
	// changesFile holds the version's chain of deltas (changeStep), binary:
	//
	//	"rtbdchg1"
	//	uint32 steps
	//	per step: uint64 from, uint64 to, uint32 keys, keys x (int64 group, int64 id)
	//	uint64 xxhash64 of everything before
	//
	// all little-endian, steps oldest first.
	changesFile  = "CHANGES"
	changesMagic = "rtbdchg1"
)

// maxChainKeys bounds the keys a version's chain of deltas holds in all;
// the oldest steps beyond it are dropped. A variable so tests can lower it.
var maxChainKeys = 1_000_000

// changeStep is one delta: the keys whose values differ between the
// content with hash from (its base) and the one with hash to.
type changeStep struct {
	from, to uint64
	keys     []ProductKey // ascending
}

func keyCmp(a, b ProductKey) int {
	if a.Group != b.Group {
		return cmp.Compare(uint64(a.Group), uint64(b.Group))
	}
	return cmp.Compare(uint64(a.ID), uint64(b.ID))
}

// scanHash computes the content hash of every record r holds: products
// and similar lists.
func scanHash(r pebble.Reader) (uint64, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{productKeyPrefix}, UpperBound: []byte{similarKeyPrefix + 1}})
	if err != nil {
		return 0, fmt.Errorf("catalog: hashing: %w", err)
	}
	var sum uint64
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return 0, fmt.Errorf("catalog: hashing: %w", err)
		}
		sum += HashRecord(it.Key(), v)
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("catalog: hashing: %w", err)
	}
	return sum, nil
}

// readContentHash reads the META file of the version in path; ok is false
// when the version has none (built before versions carried one).
func readContentHash(path string) (hash uint64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(path, metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("catalog: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "content_hash "); found {
			h, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				break
			}
			return h, true, nil
		}
	}
	return 0, false, fmt.Errorf("%w: %s: no content_hash line", ErrCorrupt, filepath.Join(path, metaFile))
}

// writeVersionMeta writes the META and CHANGES files of the version in
// path, each fsynced (the caller syncs the directory).
func writeVersionMeta(path string, hash uint64, chain []changeStep) error {
	if err := writeSynced(filepath.Join(path, metaFile), []byte(fmt.Sprintf("content_hash %016x\n", hash))); err != nil {
		return err
	}
	return writeSynced(filepath.Join(path, changesFile), encodeChain(chain))
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("catalog: writing %s: %w", path, err)
	}
	return nil
}

func encodeChain(chain []changeStep) []byte {
	n := len(changesMagic) + 4 + 8
	for _, s := range chain {
		n += 20 + 16*len(s.keys)
	}
	b := make([]byte, 0, n)
	b = append(b, changesMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(chain)))
	for _, s := range chain {
		b = binary.LittleEndian.AppendUint64(b, s.from)
		b = binary.LittleEndian.AppendUint64(b, s.to)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.keys)))
		for _, k := range s.keys {
			b = binary.LittleEndian.AppendUint64(b, uint64(k.Group))
			b = binary.LittleEndian.AppendUint64(b, uint64(k.ID))
		}
	}
	return binary.LittleEndian.AppendUint64(b, xxhash.Sum64(b))
}

var errBadChain = errors.New("catalog: corrupt CHANGES file")

func decodeChain(b []byte) ([]changeStep, error) {
	if len(b) < len(changesMagic)+12 || !bytes.HasPrefix(b, []byte(changesMagic)) {
		return nil, errBadChain
	}
	body := b[:len(b)-8]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(b[len(b)-8:]) {
		return nil, errBadChain
	}
	p := body[len(changesMagic):]
	steps := binary.LittleEndian.Uint32(p)
	p = p[4:]
	chain := make([]changeStep, 0, min(int(steps), 1024))
	for range steps {
		if len(p) < 20 {
			return nil, errBadChain
		}
		s := changeStep{from: binary.LittleEndian.Uint64(p), to: binary.LittleEndian.Uint64(p[8:])}
		n := int(binary.LittleEndian.Uint32(p[16:]))
		p = p[20:]
		if len(p) < 16*n {
			return nil, errBadChain
		}
		s.keys = make([]ProductKey, n)
		for i := range s.keys {
			s.keys[i] = ProductKey{int64(binary.LittleEndian.Uint64(p)), int64(binary.LittleEndian.Uint64(p[8:]))}
			p = p[16:]
		}
		chain = append(chain, s)
	}
	if len(p) != 0 {
		return nil, errBadChain
	}
	return chain, nil
}

// readChain reads the CHANGES file of the version in path whose content
// hash is hash. No file is an empty chain; a chain that does not end at
// hash or does not link up is an error.
func readChain(path string, hash uint64) ([]changeStep, error) {
	b, err := os.ReadFile(filepath.Join(path, changesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	chain, err := decodeChain(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, filepath.Join(path, changesFile))
	}
	for i, s := range chain {
		next := hash
		if i+1 < len(chain) {
			next = chain[i+1].from
		}
		if s.to != next {
			return nil, fmt.Errorf("%w: %s: steps do not link up", errBadChain, filepath.Join(path, changesFile))
		}
	}
	return chain, nil
}

// boundChain drops the oldest steps until the chain holds at most max
// keys in all.
func boundChain(chain []changeStep, max int) []changeStep {
	total := 0
	for i := len(chain) - 1; i >= 0; i-- {
		if total += len(chain[i].keys); total > max {
			return chain[i+1:]
		}
	}
	return chain
}

// changesSince answers Changes for a version of content hash cur with
// chain, for a client at content hash since.
func changesSince(chain []changeStep, cur, since uint64) (keys []ProductKey, full bool) {
	if since == cur {
		return nil, false
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i].from != since {
			continue
		}
		if i == len(chain)-1 {
			return chain[i].keys, false
		}
		n := 0
		for _, s := range chain[i:] {
			n += len(s.keys)
		}
		keys = make([]ProductKey, 0, n)
		for _, s := range chain[i:] {
			keys = append(keys, s.keys...)
		}
		slices.SortFunc(keys, keyCmp)
		return slices.Compact(keys), false
	}
	return nil, true
}
