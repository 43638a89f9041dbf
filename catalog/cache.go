package catalog

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/internal/productwire"
)

// hotCache is a bounded cache of decoded products in front of Pebble, keyed
// by (group, id). It also caches absence (nil), so ids that do not exist do
// not cost a Pebble lookup each time. Eviction is CLOCK (second chance) per
// shard. Products in the cache are shared and immutable.
//
// Reads take no lock: a get writes nothing shared but a hit's
// second-chance flag, once. (A sync.RWMutex per shard cost two atomic
// adds per get on a cache line the other cores also write: 2.7% of a
// bidder's CPU at 15+ gets per bid.) Each shard's slots hold immutable
// entries (key, product) behind atomic pointers, found through an
// open-addressing index of slot numbers that writers, under the shard's
// mutex, update and replace. A reader may see an index position that a
// writer is changing; it then reads a slot whose entry has another key,
// and goes on probing: at worst a miss, which reads Pebble, never another
// key's product.
//
// Once a shard is full, a key is admitted only on its second sighting
// within a window of about the shard's capacity of puts (a "doorkeeper"
// bitset remembers first sightings): a one-off id (the long tail of
// popularity, or a uniformly random workload) then costs no eviction and
// does not push out a product that is asked for again and again.
//
// One cache belongs to one index version: switching versions switches
// caches, which is what keeps the cache consistent with the index.
type hotCache struct {
	shards []cacheShard
	mask   uint64
	_      [48]byte // the written counters apart from shards and mask, which every get reads
	// hits and misses are added once per lookup (count), not per get: a
	// 15-product lookup would otherwise add to shared counters 15 times,
	// each a cache line taken from the other cores.
	hits, misses atomic.Int64
}

type cacheKey struct{ g, id int64 }

type cacheSlot struct {
	e   atomic.Pointer[slotEntry] // nil until first used
	ref atomic.Bool               // CLOCK's second chance
}

// slotEntry is a slot's content, replaced whole.
type slotEntry struct {
	key cacheKey
	p   *cached
}

// Index marks besides slot number + 1.
const (
	idxEmpty   = 0
	idxDeleted = -1
)

// cached is one product as the hot cache holds it: decoded, and, once a
// catalog node has sent it, its protobuf encoding too, so that answering
// over gRPC copies bytes instead of marshalling the same product again.
type cached struct {
	p    catalogpb.Product
	wire atomic.Pointer[[]byte] // protobuf encoding of p, made at first need
}

// aliasWire encodes c.p (not yet shared) and re-points its strings into
// the encoding, so that the product's text is held once (catalog nodes:
// LocalOptions.WireCache). A product that cannot be encoded (invalid
// UTF-8) is left as it is.
func (c *cached) aliasWire() {
	w, err := AppendProduct(make([]byte, 0, productWireSizeHint(&c.p)), &c.p)
	if err != nil || len(w) == 0 {
		return
	}
	// Every non-empty field is in w, so decoding over c.p replaces each
	// string with one that aliases w (same text); the encoding came from
	// c.p, so it decodes.
	if productwire.Decode(unsafe.String(unsafe.SliceData(w), len(w)), 0, w, &c.p) != nil {
		return
	}
	c.wire.Store(&w)
}

// wireBytes returns the protobuf encoding of c.p (made once; concurrent
// first calls may both encode, the results are identical).
func (c *cached) wireBytes() ([]byte, error) {
	if w := c.wire.Load(); w != nil {
		return *w, nil
	}
	b, err := AppendProduct(make([]byte, 0, productWireSizeHint(&c.p)), &c.p)
	if err != nil {
		return nil, err
	}
	c.wire.Store(&b)
	return b, nil
}

type cacheShard struct {
	// idx is the open-addressing index, a power of two of at least twice
	// cap positions, each idxEmpty, idxDeleted or slot number + 1. Readers
	// load it once per get; writers replace it when deleted marks pile up.
	idx   atomic.Pointer[[]atomic.Int32]
	slots []cacheSlot // cap of them, made once: readers index it unlocked
	mu    sync.Mutex  // writers: put, and stats' read of n
	n     int         // slots in use
	dead  int         // idxDeleted marks in idx
	hand  int
	cap   int
	door  []uint64 // doorkeeper bitset (first sightings), power-of-two bits
	doorN int      // first sightings recorded since the last reset
	_     [64]byte // keep shards' hot fields on separate cache lines
}

func newHotCache(entries int) *hotCache {
	if entries <= 0 {
		return nil
	}
	n := 1
	for n < 64 && n*256 < entries {
		n <<= 1
	}
	c := &hotCache{shards: make([]cacheShard, n), mask: uint64(n - 1)}
	per := (entries + n - 1) / n
	for i := range c.shards {
		s := &c.shards[i]
		s.cap = per
		s.slots = make([]cacheSlot, per)
		s.idx.Store(newIndex(per))
		bits := 64
		for bits < 8*per { // ~8 bits per entry: few false "seen before"
			bits <<= 1
		}
		s.door = make([]uint64, bits/64)
	}
	return c
}

// newIndex returns an empty index for cap slots.
func newIndex(cap int) *[]atomic.Int32 {
	size := 16
	for size < 2*cap {
		size <<= 1
	}
	idx := make([]atomic.Int32, size)
	return &idx
}

func hashKey(k cacheKey) uint64 {
	return uint64(k.g)*0x9E3779B97F4A7C15 ^ uint64(k.id)*0xC2B2AE3D27D4EB4F
}

func (c *hotCache) shard(k cacheKey) *cacheShard {
	return &c.shards[(hashKey(k)>>32)&c.mask]
}

// slotHash is k's hash within its shard: the shard index used the high
// bits of hashKey; these are mixed down into the low ones.
func slotHash(k cacheKey) uint64 {
	h := hashKey(k)
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	return h ^ h>>32
}

// admit reports whether a key not in the full shard s may replace an
// entry: true if it was seen before in the current window, else it is
// remembered. Called with s.mu held.
func (s *cacheShard) admit(k cacheKey) bool {
	h := slotHash(k)
	bit := h & uint64(len(s.door)*64-1)
	w, m := &s.door[bit/64], uint64(1)<<(bit%64)
	if *w&m != 0 {
		return true
	}
	*w |= m
	if s.doorN++; s.doorN >= s.cap {
		clear(s.door)
		s.doorN = 0
	}
	return false
}

// get returns the cached product (nil if cached as absent) and whether the
// key was in the cache. The caller counts it (count). It takes no lock.
func (c *hotCache) get(g, id int64) (*cached, bool) {
	k := cacheKey{g, id}
	s := c.shard(k)
	sl, e := s.find(*s.idx.Load(), k)
	if e == nil {
		return nil, false
	}
	if !sl.ref.Load() { // a writer may have reused the slot since: harmless
		sl.ref.Store(true)
	}
	return e.p, true
}

// find returns the slot holding k in index idx and its entry, or nils.
// Safe without the lock: a position or slot changing meanwhile can only
// make it miss.
func (s *cacheShard) find(idx []atomic.Int32, k cacheKey) (*cacheSlot, *slotEntry) {
	m := uint64(len(idx) - 1)
	h := slotHash(k)
	for i := range uint64(len(idx)) {
		switch v := idx[(h+i)&m].Load(); {
		case v == idxEmpty:
			return nil, nil
		case v > 0:
			sl := &s.slots[v-1]
			if e := sl.e.Load(); e != nil && e.key == k {
				return sl, e
			}
		}
	}
	return nil, nil
}

func (c *hotCache) put(g, id int64, p *cached) {
	k := cacheKey{g, id}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := *s.idx.Load()
	if sl, _ := s.find(idx, k); sl != nil {
		sl.e.Store(&slotEntry{key: k, p: p})
		return
	}
	var slot int
	if s.n < s.cap {
		slot = s.n
		s.n++
	} else {
		if !s.admit(k) {
			return
		}
		// Readers set flags while the hand sweeps (they take no lock), so
		// the sweep is bounded: after two turns the slot under the hand
		// goes, flag or not.
		for range 2 * s.n {
			sl := &s.slots[s.hand]
			if !sl.ref.Load() {
				break
			}
			sl.ref.Store(false)
			s.hand = (s.hand + 1) % s.n
		}
		slot = s.hand
		s.hand = (s.hand + 1) % s.n
		// Out of the index first: a reader that still finds the old
		// position then reads the new entry, another key, and goes on.
		s.unindex(idx, s.slots[slot].e.Load().key, slot)
	}
	s.slots[slot].ref.Store(false)
	s.slots[slot].e.Store(&slotEntry{key: k, p: p})
	s.index(k, slot)
}

// unindex marks the index position of (k, slot) deleted. Called with s.mu
// held.
func (s *cacheShard) unindex(idx []atomic.Int32, k cacheKey, slot int) {
	m := uint64(len(idx) - 1)
	h := slotHash(k)
	for i := range uint64(len(idx)) {
		pos := &idx[(h+i)&m]
		switch v := pos.Load(); {
		case v == idxEmpty:
			return
		case v == int32(slot)+1:
			pos.Store(idxDeleted)
			s.dead++
			return
		}
	}
}

// index adds (k, slot), whose entry is stored, to the index; or, once
// deleted marks fill a quarter of it (probes end only at an empty
// position), rebuilds it, k included. Called with s.mu held.
func (s *cacheShard) index(k cacheKey, slot int) {
	idx := *s.idx.Load()
	if s.dead >= len(idx)/4 {
		s.rebuild()
		return
	}
	if place(idx, k, slot) {
		s.dead--
	}
}

// place stores slot + 1 at the first empty or deleted position of k's
// probe sequence in idx, and reports whether that position was a deleted
// mark.
func place(idx []atomic.Int32, k cacheKey, slot int) (reused bool) {
	m := uint64(len(idx) - 1)
	h := slotHash(k)
	for i := range uint64(len(idx)) {
		pos := &idx[(h+i)&m]
		if v := pos.Load(); v == idxEmpty || v == idxDeleted {
			pos.Store(int32(slot) + 1)
			return v == idxDeleted
		}
	}
	panic("catalog: hot cache index full") // cannot happen: at least a quarter of it is empty
}

// rebuild publishes a fresh index of the slots in use. Readers on the old
// one finish there. Called with s.mu held.
func (s *cacheShard) rebuild() {
	idx := *newIndex(s.cap)
	for slot := range s.n {
		place(idx, s.slots[slot].e.Load().key, slot)
	}
	s.idx.Store(&idx)
	s.dead = 0
}

// count adds a lookup's hits and misses to the cache's.
func (c *hotCache) count(hits, misses int64) {
	if hits > 0 {
		c.hits.Add(hits)
	}
	if misses > 0 {
		c.misses.Add(misses)
	}
}

// stats returns hits, misses and the number of entries.
func (c *hotCache) stats() (hits, misses, entries int64) {
	if c == nil {
		return 0, 0, 0
	}
	hits, misses = c.hits.Load(), c.misses.Load()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		entries += int64(s.n)
		s.mu.Unlock()
	}
	return hits, misses, entries
}

// touchMax is the most ids touch reads ahead for.
const touchMax = 32

// touch reads, for up to touchMax of ids, the memory that getting them
// and copying their encodings reads, one level at a time across all ids:
// index position, slot, entry, product, encoding. The loads of a level do
// not depend on one another, so the CPU waits for their cache misses
// together instead of one product after the other. (A node's hot cache is
// far larger than the CPU's caches: a 15-id lookup is bound by memory
// latency.) It only reads: a writer changing the cache meanwhile makes it
// read memory that is not needed. The result means nothing; it keeps the
// loads from being optimized away.
func (c *hotCache) touch(g int64, ids []int64) int {
	ids = ids[:min(len(ids), touchMax)]
	var (
		keys  [touchMax]cacheKey
		slots [touchMax]*cacheSlot
		ents  [touchMax]*slotEntry
		wires [touchMax]*[]byte
	)
	for i, id := range ids {
		k := cacheKey{g, id}
		s := c.shard(k)
		idx := *s.idx.Load()
		if v := idx[slotHash(k)&uint64(len(idx)-1)].Load(); v > 0 {
			keys[i], slots[i] = k, &s.slots[v-1]
		}
	}
	for i := range ids {
		if sl := slots[i]; sl != nil {
			ents[i] = sl.e.Load()
		}
	}
	found := 0
	for i := range ids {
		if e := ents[i]; e != nil && e.key == keys[i] && e.p != nil && e.p.p.InStock {
			wires[i] = e.p.wire.Load()
		}
	}
	for i := range ids {
		if w := wires[i]; w != nil {
			for j := 0; j < len(*w); j += 64 {
				found += int((*w)[j])
			}
		}
	}
	return found
}
