package catalog

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// hotCache is a bounded cache of decoded products in front of Pebble, keyed
// by (group, id). It also caches absence (nil), so ids that do not exist do
// not cost a Pebble lookup each time. Eviction is CLOCK (second chance) per
// shard: a hit only sets a flag under a read lock, so hot products are cheap
// to read concurrently. Products in the cache are shared and immutable.
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
	key cacheKey
	p   *cached
	ref atomic.Bool
}

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
	if decodeProduct(unsafe.String(unsafe.SliceData(w), len(w)), 0, w, &c.p) != nil {
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
	mu    sync.RWMutex
	m     map[cacheKey]int32
	slots []cacheSlot
	hand  int
	cap   int
	door  []uint64 // doorkeeper bitset (first sightings), power-of-two bits
	doorN int      // first sightings recorded since the last reset
	_     [56]byte // keep shards' hot fields on separate cache lines
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
		c.shards[i].cap = per
		c.shards[i].m = make(map[cacheKey]int32, per)
		bits := 64
		for bits < 8*per { // ~8 bits per entry: few false "seen before"
			bits <<= 1
		}
		c.shards[i].door = make([]uint64, bits/64)
	}
	return c
}

func hashKey(k cacheKey) uint64 {
	return uint64(k.g)*0x9E3779B97F4A7C15 ^ uint64(k.id)*0xC2B2AE3D27D4EB4F
}

func (c *hotCache) shard(k cacheKey) *cacheShard {
	return &c.shards[(hashKey(k)>>32)&c.mask]
}

// admit reports whether a key not in the full shard s may replace an
// entry: true if it was seen before in the current window, else it is
// remembered. Called with s.mu held.
func (s *cacheShard) admit(k cacheKey) bool {
	h := hashKey(k)
	h ^= h >> 29 // low bits: the shard index used the high ones
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
// key was in the cache. The caller counts it (count).
func (c *hotCache) get(g, id int64) (*cached, bool) {
	k := cacheKey{g, id}
	s := c.shard(k)
	s.mu.RLock()
	i, ok := s.m[k]
	var p *cached
	if ok {
		sl := &s.slots[i]
		p = sl.p
		if !sl.ref.Load() {
			sl.ref.Store(true)
		}
	}
	s.mu.RUnlock()
	return p, ok
}

func (c *hotCache) put(g, id int64, p *cached) {
	k := cacheKey{g, id}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.m[k]; ok {
		s.slots[i].p = p
		return
	}
	if len(s.slots) < s.cap {
		s.slots = append(s.slots, cacheSlot{key: k, p: p})
		s.m[k] = int32(len(s.slots) - 1)
		return
	}
	if !s.admit(k) {
		return
	}
	for {
		sl := &s.slots[s.hand]
		if sl.ref.Load() {
			sl.ref.Store(false)
			s.hand = (s.hand + 1) % len(s.slots)
			continue
		}
		delete(s.m, sl.key)
		sl.key, sl.p = k, p
		s.m[k] = int32(s.hand)
		s.hand = (s.hand + 1) % len(s.slots)
		return
	}
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
		s.mu.RLock()
		entries += int64(len(s.slots))
		s.mu.RUnlock()
	}
	return hits, misses, entries
}
