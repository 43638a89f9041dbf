package catalog

import (
	"sync"
	"sync/atomic"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// hotCache is a bounded cache of decoded products in front of Pebble, keyed
// by (group, id). It also caches absence (nil), so ids that do not exist do
// not cost a Pebble lookup each time. Eviction is CLOCK (second chance) per
// shard: a hit only sets a flag under a read lock, so hot products are cheap
// to read concurrently. Products in the cache are shared and immutable.
//
// One cache belongs to one index version: switching versions switches
// caches, which is what keeps the cache consistent with the index.
type hotCache struct {
	shards []cacheShard
	mask   uint64
}

type cacheKey struct{ g, id int64 }

type cacheSlot struct {
	key cacheKey
	p   *catalogpb.Product
	ref atomic.Bool
}

type cacheShard struct {
	mu     sync.RWMutex
	m      map[cacheKey]int32
	slots  []cacheSlot
	hand   int
	cap    int
	hits   atomic.Int64
	misses atomic.Int64
	_      [40]byte // keep shards' hot fields on separate cache lines
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
	}
	return c
}

func (c *hotCache) shard(k cacheKey) *cacheShard {
	h := uint64(k.g)*0x9E3779B97F4A7C15 ^ uint64(k.id)*0xC2B2AE3D27D4EB4F
	return &c.shards[(h>>32)&c.mask]
}

// get returns the cached product (nil if cached as absent) and whether the
// key was in the cache.
func (c *hotCache) get(g, id int64) (*catalogpb.Product, bool) {
	k := cacheKey{g, id}
	s := c.shard(k)
	s.mu.RLock()
	i, ok := s.m[k]
	var p *catalogpb.Product
	if ok {
		sl := &s.slots[i]
		p = sl.p
		if !sl.ref.Load() {
			sl.ref.Store(true)
		}
	}
	s.mu.RUnlock()
	if ok {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return p, ok
}

func (c *hotCache) put(g, id int64, p *catalogpb.Product) {
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

// stats returns hits, misses and the number of entries.
func (c *hotCache) stats() (hits, misses, entries int64) {
	if c == nil {
		return 0, 0, 0
	}
	for i := range c.shards {
		s := &c.shards[i]
		hits += s.hits.Load()
		misses += s.misses.Load()
		s.mu.RLock()
		entries += int64(len(s.slots))
		s.mu.RUnlock()
	}
	return hits, misses, entries
}
