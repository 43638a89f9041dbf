package catalog

// Similar-product lists: per product, the products most like it within its
// group, computed by the ingest job from views (ingest/similar) and stored
// in the index version beside the products, so that a rollback rolls them
// back and every store serves them alike.
//
// Key: 's' | product_group_id (8 bytes big-endian) | product_id (8 bytes
// big-endian). Value: uvarint count, then per entry varint product id and
// uvarint score (millionths; higher is more similar), best first. The
// lists are records of the version like the products: they count in the
// content hash (scanHash covers both prefixes) and a delta carries its
// base's lists unchanged.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

const similarKeyPrefix = 's'

// MaxSimilar is the longest similar list a version stores: longer lists
// are cut by AppendSimilarValue, and DecodeSimilar refuses them.
const MaxSimilar = 100

// MaxSimilarViewed is how many of a request's viewed products (the first
// ones of product1_ids, the most recent first in a profile) a store reads
// the similar lists of when it resolves similar_to_viewed.
const MaxSimilarViewed = 10

// Similar is one entry of a product's similar list.
type Similar struct {
	ID int64
	// Score is the similarity in millionths (1,000,000: the same users
	// viewed both); lists are ordered by it, best first, ties by id.
	Score uint32
}

// AppendSimilarKey appends the index key of the similar list of product id
// in group to dst.
func AppendSimilarKey(dst []byte, group, id int64) []byte {
	dst = append(dst, similarKeyPrefix)
	dst = binary.BigEndian.AppendUint64(dst, uint64(group))
	return binary.BigEndian.AppendUint64(dst, uint64(id))
}

func putSimilarKey(k *[KeyLen]byte, group, id int64) {
	k[0] = similarKeyPrefix
	binary.BigEndian.PutUint64(k[1:9], uint64(group))
	binary.BigEndian.PutUint64(k[9:17], uint64(id))
}

// ParseSimilarKey returns the group and product id of a similar list's key.
func ParseSimilarKey(k []byte) (group, id int64, ok bool) {
	if len(k) != KeyLen || k[0] != similarKeyPrefix {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(k[1:9])), int64(binary.BigEndian.Uint64(k[9:17])), true
}

// AppendSimilarValue appends the encoding of list (at most MaxSimilar
// entries are kept) to dst.
func AppendSimilarValue(dst []byte, list []Similar) []byte {
	list = list[:min(len(list), MaxSimilar)]
	dst = binary.AppendUvarint(dst, uint64(len(list)))
	for _, s := range list {
		dst = binary.AppendVarint(dst, s.ID)
		dst = binary.AppendUvarint(dst, uint64(s.Score))
	}
	return dst
}

var errBadSimilar = fmt.Errorf("%w: bad similar list", ErrCorrupt)

// DecodeSimilar appends the entries of an encoded list to dst. It
// allocates only when dst has no room.
func DecodeSimilar(v []byte, dst []Similar) ([]Similar, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > MaxSimilar {
		return dst, errBadSimilar
	}
	v = v[k:]
	for i := uint64(0); i < n; i++ {
		id, k := binary.Varint(v)
		if k <= 0 {
			return dst, errBadSimilar
		}
		v = v[k:]
		sc, k := binary.Uvarint(v)
		if k <= 0 || sc > 1<<32-1 {
			return dst, errBadSimilar
		}
		v = v[k:]
		dst = append(dst, Similar{ID: id, Score: uint32(sc)})
	}
	return dst, nil
}

// SimilarWriter writes the similar lists of a version being built, in
// ascending (group, id) order, into one table that Finish adds to the
// version. Not safe for concurrent use.
type SimilarWriter struct {
	b        *Builder
	sst      *SST
	key, val []byte
	last     []byte
	n        int64
}

// NewSimilarWriter starts the lists of b's version. Call it at most once
// per builder, after the products are written (the table is added beside
// them), and only for a version that holds no lists yet (a full build).
func (b *Builder) NewSimilarWriter() (*SimilarWriter, error) {
	s, err := b.newSST("similar-", 6)
	if err != nil {
		return nil, err
	}
	s.b = nil // not product keys: nothing for a delta's chain
	return &SimilarWriter{b: b, sst: s}, nil
}

// Add writes the list of product id in group; (group, id) must sort after
// the previous Add's. An empty list is not written.
func (w *SimilarWriter) Add(group, id int64, list []Similar) error {
	if len(list) == 0 {
		return nil
	}
	w.key = AppendSimilarKey(w.key[:0], group, id)
	if w.n > 0 && bytes.Compare(w.key, w.last) <= 0 {
		return fmt.Errorf("catalog: similar list %d/%d out of order", group, id)
	}
	w.val = AppendSimilarValue(w.val[:0], list)
	return w.set(w.key, w.val)
}

func (w *SimilarWriter) set(key, val []byte) error {
	if err := w.sst.w.Set(key, val); err != nil {
		return fmt.Errorf("catalog: similar lists: %w", err)
	}
	w.last = append(w.last[:0], key...)
	w.n++
	w.sst.n++ // SST.Finish keeps a table only when it holds something
	return nil
}

// Len is the number of lists written.
func (w *SimilarWriter) Len() int64 { return w.n }

// Finish completes the table and adds it to the version.
func (w *SimilarWriter) Finish() error {
	path, err := w.sst.Finish()
	if err != nil {
		return err
	}
	if path == "" {
		return nil
	}
	if w.b.db == nil {
		return errNoBuilder
	}
	return w.b.IngestSSTs([]string{path})
}

// Abort discards what was written.
func (w *SimilarWriter) Abort() {
	if path, err := w.sst.Finish(); err == nil && path != "" {
		_ = os.Remove(path)
	}
}

// CopySimilar writes the similar lists of version from (in the same data
// directory) into b's version through w, unchanged: a build without views
// keeps the lists it had. It returns how many lists were copied (0 when
// from holds none).
func (b *Builder) CopySimilar(from string, w *SimilarWriter) (int64, error) {
	if !validVersionName(from) {
		return 0, fmt.Errorf("catalog: bad version name %q", from)
	}
	db, err := openReadOnly(VersionPath(b.dir, from), nil, b.log)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = EachSimilar(db, func(key, val []byte) error {
		n++
		return w.set(key, val)
	})
	return n, err
}

// EachSimilar calls fn with the key and encoded value of every similar
// list r holds, in key order (valid during the call).
func EachSimilar(r pebble.Reader, fn func(key, val []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{similarKeyPrefix}, UpperBound: []byte{similarKeyPrefix + 1}})
	if err != nil {
		return fmt.Errorf("catalog: similar lists: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), v)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("catalog: similar lists: %w", err)
	}
	return nil
}

// ReadSimilar calls fn with the group, product id and list of every similar
// list of version name in dir (the list is reused after fn returns). For
// tools and tests: it opens the version read-only.
func ReadSimilar(dir, name string, fn func(group, id int64, list []Similar) error) error {
	db, err := openReadOnly(VersionPath(dir, name), nil, zap.NewNop())
	if err != nil {
		return err
	}
	defer db.Close()
	var list []Similar
	return EachSimilar(db, func(key, val []byte) error {
		g, id, ok := ParseSimilarKey(key)
		if !ok {
			return fmt.Errorf("%w: similar key %x", ErrCorrupt, key)
		}
		var err error
		if list, err = DecodeSimilar(val, list[:0]); err != nil {
			return fmt.Errorf("similar list %d/%d: %w", g, id, err)
		}
		return fn(g, id, list)
	})
}

// similarTable reports whether a table of the version holds similar lists
// only (its smallest key has the lists' prefix; products sort before them,
// and their tables are written apart).
func similarTable(smallest []byte) bool {
	return len(smallest) > 0 && smallest[0] >= similarKeyPrefix
}

// simCand is a candidate of a similar_to_viewed answer.
type simCand struct {
	id    int64
	score uint64
}

// maxSimCands bounds the candidates one request gathers.
const maxSimCands = 256

// simScratch is a request's room for resolving similar_to_viewed.
type simScratch struct {
	table  [2 * maxSimCands]int32
	merged [maxSimCands]simCand
	top    [maxSimCands]simCand
	list   [MaxSimilar]Similar
	cands  [maxSimCands]simCand
	ids    [maxSimCands]int64
}

// simCache caches decoded similar lists of one version, two-way set
// associative by key hash: a hit reads at most two atomic pointers and
// allocates nothing; a miss reads Pebble and stores the list in its pair
// of slots (which keeps the two latest keys). Lists of a version never
// change, so entries need no invalidation (the cache goes with its
// version). A nil *simCache caches nothing.
type simCache struct {
	slots []atomic.Pointer[simEntry]
	mask  uint64
}

type simEntry struct {
	g, id int64
	list  []Similar // nil: the product has no list
}

// newSimCache returns a cache of at least n slots (a power of two), or
// nil for n <= 0.
func newSimCache(n int) *simCache {
	if n <= 0 {
		return nil
	}
	size := 2
	for size < n {
		size <<= 1
	}
	return &simCache{slots: make([]atomic.Pointer[simEntry], size), mask: uint64(size - 1)}
}

// pair returns the two slots (g, id) may live in (neighbours).
func (c *simCache) pair(g, id int64) (*atomic.Pointer[simEntry], *atomic.Pointer[simEntry]) {
	h := (uint64(g)*0x9e3779b97f4a7c15 ^ uint64(id)) * 0xbf58476d1ce4e5b9
	i := (h >> 32) & c.mask
	return &c.slots[i], &c.slots[i^1]
}

func (c *simCache) get(g, id int64) ([]Similar, bool) {
	if c == nil {
		return nil, false
	}
	a, b := c.pair(g, id)
	if e := a.Load(); e != nil && e.g == g && e.id == id {
		return e.list, true
	}
	if e := b.Load(); e != nil && e.g == g && e.id == id {
		return e.list, true
	}
	return nil, false
}

// put stores the list of (g, id); the pair keeps the two latest keys.
func (c *simCache) put(g, id int64, list []Similar) {
	if c == nil {
		return
	}
	a, b := c.pair(g, id)
	if old := a.Load(); old != nil && (old.g != g || old.id != id) {
		b.Store(old)
	}
	a.Store(&simEntry{g: g, id: id, list: list})
}

// similarIDs returns the ids a similar_to_viewed request asks for: the
// similar lists of the first MaxSimilarViewed viewed products (from cache,
// else read from db) merged by the sum of their scores, best first, ties
// by id, without the viewed products, each id once. The result is backed
// by sc.
//
// With wire not nil, each viewed product's list is appended to *wire as a
// ProductMastersResponse.similar_lists field (a node's answer).
func similarIDs(db pebble.Reader, cache *simCache, memo *MergeMemo, g int64, viewed []int64, atMost int32, sc *simScratch, wire *[]byte) ([]int64, error) {
	limit := similarLimit(atMost)
	memoed, hit := memo.Get(g, viewed, limit, 0, 0, sc.ids[:0])
	if hit && wire == nil {
		return memoed, nil
	}
	var key *[KeyLen]byte // Pebble keeps the sought key: allocated on a cache miss only
	var it *pebble.Iterator
	defer func() {
		if it != nil {
			it.Close()
		}
	}()
	cands := sc.cands[:0]
	for _, v := range viewed[:min(len(viewed), MaxSimilarViewed)] {
		if v <= 0 {
			continue
		}
		list, ok := cache.get(g, v)
		if !ok {
			if it == nil {
				key = new([KeyLen]byte)
				var err error
				if it, err = db.NewIter(nil); err != nil {
					return nil, fmt.Errorf("catalog: reading similar lists of group %d: %w", g, err)
				}
			}
			putSimilarKey(key, g, v)
			if it.SeekGE(key[:]) && string(it.Key()) == string(key[:]) {
				val, err := it.ValueAndErr()
				if err != nil {
					return nil, fmt.Errorf("catalog: reading similar list %d/%d: %w", g, v, err)
				}
				if cache != nil {
					kept, err := DecodeSimilar(val, nil)
					if err != nil {
						return nil, fmt.Errorf("similar list %d/%d: %w", g, v, err)
					}
					cache.put(g, v, kept)
					list = kept
				} else if list, err = DecodeSimilar(val, sc.list[:0]); err != nil {
					return nil, fmt.Errorf("similar list %d/%d: %w", g, v, err)
				}
			} else if err := it.Error(); err != nil {
				return nil, fmt.Errorf("catalog: reading similar list %d/%d: %w", g, v, err)
			} else {
				cache.put(g, v, nil)
			}
		}
		if wire != nil {
			*wire = appendSimilarList(*wire, g, v, AppendSimilarValue(nil, list))
		}
		if hit {
			continue // the lists are for wire only
		}
		for _, s := range list {
			if len(cands) == len(sc.cands) {
				break
			}
			cands = append(cands, simCand{s.ID, uint64(s.Score)})
		}
	}
	if hit {
		return memoed, nil
	}
	return mergeMemoed(memo, g, cands, viewed, limit, 0, 0, sc), nil
}

// mergeMemoed is mergeSimilar into sc.ids for limit, storing the best
// MemoIDs in memo (when not nil) for the next request of the same merge.
func mergeMemoed(memo *MergeMemo, g int64, cands []simCand, viewed []int64, limit int, epoch uint32, expires int64, sc *simScratch) []int64 {
	if memo == nil {
		return mergeSimilar(cands, viewed, sc.ids[:0], limit, sc)
	}
	want := MemoIDs
	if limit <= 0 {
		want = 0
	} else if limit > want {
		want = limit
	}
	merged := mergeSimilar(cands, viewed, sc.ids[:0], want, sc)
	memo.Put(g, viewed, merged, want == 0 || len(merged) < want, epoch, expires)
	if limit > 0 && len(merged) > limit {
		merged = merged[:limit]
	}
	return merged
}

// appendSimilarList appends a ProductMastersResponse.similar_lists field
// (4) holding a SimilarList of product id in group g with the encoded list.
func appendSimilarList(b []byte, g, id int64, list []byte) []byte {
	var inner [2*binary.MaxVarintLen64 + 2]byte
	m := protowire.AppendTag(inner[:0], 1, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(g))
	m = protowire.AppendTag(m, 2, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(id))
	size := len(m) + protowire.SizeTag(3) + protowire.SizeBytes(len(list))
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = append(b, m...)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, list)
}

// mergeSimilar sums the scores of each id of cands, drops ids <= 0 and
// the viewed ones, and appends the rest to dst, best first (ties by id):
// with limit > 0 only the best limit of them. It allocates only when dst
// has no room. sc's table is its working space.
func mergeSimilar(cands []simCand, viewed []int64, dst []int64, limit int, sc *simScratch) []int64 {
	if len(cands) == 0 {
		return dst
	}
	// Sum by id in an open-addressing table of slot+1 indexes into out.
	size := 16
	for size < 2*len(cands) {
		size <<= 1
	}
	table := sc.table[:size]
	clear(table)
	mask := uint64(size - 1)
	out := sc.merged[:0]
	for _, c := range cands {
		if c.id <= 0 {
			continue
		}
		h := (uint64(c.id) * 0x9e3779b97f4a7c15) >> 32
		for {
			i := h & mask
			k := table[i]
			if k == 0 {
				out = append(out, c)
				table[i] = int32(len(out))
				break
			}
			if out[k-1].id == c.id {
				out[k-1].score += c.score
				break
			}
			h++
		}
	}
	// Drop the viewed products.
	kept := out[:0]
	for _, c := range out {
		if !slices.Contains(viewed, c.id) {
			kept = append(kept, c)
		}
	}
	better := func(a, b simCand) bool { return a.score > b.score || a.score == b.score && a.id < b.id }
	if limit <= 0 || 2*limit >= len(kept) { // a sort beats insertion into a long prefix
		if limit <= 0 || limit > len(kept) {
			limit = len(kept)
		}
		slices.SortFunc(kept, func(a, b simCand) int {
			if better(a, b) {
				return -1
			}
			if better(b, a) {
				return 1
			}
			return 0
		})
		for _, c := range kept[:limit] {
			dst = append(dst, c.id)
		}
		return dst
	}
	// The best limit, by insertion into a sorted prefix: one comparison for
	// a candidate that does not make it.
	top := sc.top[:0]
	for _, c := range kept {
		if len(top) == limit && !better(c, top[limit-1]) {
			continue
		}
		if len(top) < limit {
			top = append(top, c)
		} else {
			top[limit-1] = c
		}
		for j := len(top) - 1; j > 0 && better(top[j], top[j-1]); j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
	for _, c := range top {
		dst = append(dst, c.id)
	}
	return dst
}

// SimilarIDs is the merge a store makes for similar_to_viewed, over lists
// given in memory (by product id), for a client that caches the lists
// itself (catalog/remote) and for evaluations: the similar lists of the
// first MaxSimilarViewed viewed products merged by the sum of their
// scores, best first, ties by id, without the viewed products, each id
// once; with limit > 0 only the best limit. It allocates only when dst has
// no room.
func SimilarIDs(viewed []int64, lists func(id int64) []Similar, limit int, dst []int64) []int64 {
	sc := simScratchPool.Get().(*simScratch)
	defer simScratchPool.Put(sc)
	cands := sc.cands[:0]
	for _, v := range viewed[:min(len(viewed), MaxSimilarViewed)] {
		if v <= 0 {
			continue
		}
		for _, s := range lists(v) {
			if len(cands) == len(sc.cands) {
				break
			}
			cands = append(cands, simCand{s.ID, uint64(s.Score)})
		}
	}
	return mergeSimilar(cands, viewed, dst, limit, sc)
}

// similarLimit is how many merged ids a request for atMost products
// resolves: room for some to be out of stock or deleted since.
func similarLimit(atMost int32) int { return 2*int(max(atMost, 0)) + 8 }

// SimilarLimit is similarLimit, for clients that resolve lists themselves.
func SimilarLimit(atMost int32) int { return similarLimit(atMost) }

var simScratchPool = sync.Pool{New: func() any { return new(simScratch) }}

var errNoBuilder = errors.New("catalog: similar lists: builder closed")

// EachProduct calls fn with every product of the version being built, in
// key order (p is reused after fn returns), after committing what Put
// and Delete buffered: the similar lists are computed from the version's
// own products.
func (b *Builder) EachProduct(fn func(p *catalogpb.Product) error) error {
	if b.db == nil {
		return errNoBuilder
	}
	if err := b.commit(); err != nil {
		return err
	}
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{productKeyPrefix}, UpperBound: []byte{productKeyPrefix + 1}})
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer it.Close()
	var p catalogpb.Product
	for ok := it.First(); ok; ok = it.Next() {
		g, id, ok := ParseKey(it.Key())
		if !ok {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		if err := DecodeValue(g, id, v, &p); err != nil {
			return err
		}
		if err := fn(&p); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

// ReadProducts calls fn with every product of the live version of dir, in
// key order (p is reused after fn returns). For tools (the offline
// evaluation): it opens the version read-only.
func ReadProducts(dir string, fn func(p *catalogpb.Product) error) error {
	name, err := ReadPointer(dir, CurrentFile)
	if err != nil {
		return err
	}
	db, err := openReadOnly(VersionPath(dir, name), nil, zap.NewNop())
	if err != nil {
		return err
	}
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{productKeyPrefix}, UpperBound: []byte{productKeyPrefix + 1}})
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer it.Close()
	var p catalogpb.Product
	for ok := it.First(); ok; ok = it.Next() {
		g, id, _ := ParseKey(it.Key())
		v, err := it.ValueAndErr()
		if err == nil {
			err = DecodeValue(g, id, v, &p)
		}
		if err == nil {
			err = fn(&p)
		}
		if err != nil {
			return err
		}
	}
	return it.Error()
}
