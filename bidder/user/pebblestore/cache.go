package pebblestore

import "sync"

// valueCache keeps the stored values of the profiles read last, so that
// the bid path's Get of a recent user (or of one without a profile)
// decodes from memory instead of
// walking Pebble's memtables and levels. It is direct-mapped: a uid's
// slot is its hash modulo the slot count, and a read that misses
// replaces what the slot held. Each slot reuses its key and value buffers,
// so that neither a hit nor a fill allocates once the slot's buffers have
// grown; values over maxCachedValue bytes are not kept.
//
// Every write of a profile (Store.setProfile: Put, RecordView,
// SetRecommended; the expiry delete; a BulkWriter's commit) invalidates
// the uid's slot after Pebble has the write; a read that missed fills its
// slot only if no invalidation came between its Pebble read and the fill
// (the slot's generation), so the cache never serves a value older than
// the last write it has seen.
// Expiry is checked on every hit, from the value's own stamp.
type valueCache struct {
	slots []cacheSlot // len is a power of two
	mask  uint64
}

// maxCachedValue bounds the stored value a slot keeps, in bytes.
const maxCachedValue = 2 << 10

type cacheSlot struct {
	mu  sync.Mutex
	gen uint64 // bumped by every invalidation
	ok  bool   // key holds a uid: its value is val, or none (absent)
	// absent: the uid has no stored profile.
	absent bool
	key    []byte
	val    []byte
	_      [24]byte // keep neighbouring slots' locks on different cache lines
}

// newValueCache returns a cache of at least n slots (rounded up to a power
// of two), or nil for n <= 0 (every method of a nil cache is a no-op that
// misses).
func newValueCache(n int) *valueCache {
	if n <= 0 {
		return nil
	}
	size := 1
	for size < n {
		size <<= 1
	}
	return &valueCache{slots: make([]cacheSlot, size), mask: uint64(size - 1)}
}

func (c *valueCache) slot(h uint64) *cacheSlot { return &c.slots[h&c.mask] }

// lookup locks uid's slot (hash h) and returns it with whether it holds
// uid's value (slot.val); the caller reads slot.val and unlocks. On a
// miss, gen is the generation to pass to fill. A nil cache returns a nil
// slot.
func (c *valueCache) lookup(h uint64, uid string) (s *cacheSlot, hit bool, gen uint64) {
	if c == nil {
		return nil, false, 0
	}
	s = c.slot(h)
	s.mu.Lock()
	if s.ok && string(s.key) == uid {
		return s, true, 0
	}
	gen = s.gen
	s.mu.Unlock()
	return s, false, gen
}

// fill stores uid's value v in its slot (present false: uid has none)
// unless an invalidation came since lookup returned gen.
func (c *valueCache) fill(h uint64, gen uint64, uid string, v []byte, present bool) {
	if c == nil || len(v) > maxCachedValue {
		return
	}
	s := c.slot(h)
	s.mu.Lock()
	if s.gen == gen {
		s.key = append(s.key[:0], uid...)
		s.val = append(s.val[:0], v...)
		s.ok, s.absent = true, !present
	}
	s.mu.Unlock()
}

// invalidate forgets uid's value (hash h): called after every write of it.
func (c *valueCache) invalidate(h uint64) {
	if c == nil {
		return
	}
	s := c.slot(h)
	s.mu.Lock()
	s.gen++
	s.ok = false
	s.mu.Unlock()
}

// invalidateAll forgets every value (a bulk load wrote many uids).
func (c *valueCache) invalidateAll() {
	if c == nil {
		return
	}
	for i := range c.slots {
		c.invalidate(uint64(i))
	}
}
