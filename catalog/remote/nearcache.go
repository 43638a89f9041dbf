package remote

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// nearCache is the bidder's cache of decoded products (and of absences)
// in front of the catalog nodes, bounded in bytes. It is split into shards
// (a power of two, up to 64) by key hash, each with its own lock, map and
// CLOCK ring (second chance: a hit sets the entry's reference bit, the hand
// clears it once before evicting). An entry holds a product decoded once
// and shared by every answer until the entry is evicted or retired; it is
// never modified.
//
// Entries carry the epoch of the index content they were read from and an
// expiry (max age minus a per-key jitter of up to a quarter of it). An entry
// whose epoch was superseded is still served until the moment the newer
// content was first seen plus a per-key offset in [0, grace), so a full
// change of the index retires the cache gradually over the grace period.
// Validity is checked at every get; a stale entry is a miss, and it is
// replaced by the fresh answer or reclaimed first by the CLOCK hand.
//
// A get that finds an entry in the last refreshAhead of its life still
// serves it and queues its key (once) for the client's refresher, which
// asks the nodes for the queued keys in the background and inserts the
// answers: an entry in use is replaced before it expires, so max age costs
// no request a miss, and entries no request asks for still expire.
type nearCache struct {
	lists  *listCache         // similar lists of viewed products (similar.go)
	memo   *catalog.MergeMemo // merged similar_to_viewed answers from lists (similar.go)
	shards []ncShard
	mask   uint64
	grace  int64 // ns
	maxAge int64 // ns
	now    func() int64
	ver    atomic.Pointer[verState]
	// Counted once per lookup of a request, not per key.
	hits, absentHits, misses atomic.Int64
	evictions                atomic.Int64
	retired                  [numCauses]atomic.Int64
	// refreshAhead (ns) before expiry a hit queues its key in refresh.
	refreshAhead   int64
	refresh        chan ncKey
	entries, bytes atomic.Int64
	m              *metrics
}

// Retirement causes (metrics label values).
const (
	causeDelta = iota
	causeEpoch
	causeMaxAge
	numCauses
)

var causeNames = [numCauses]string{"delta", "epoch", "max_age"}

// epochRing is how many superseded epochs keep their retirement time; an
// entry older than that is retired outright (it is older than grace anyway
// unless the index changed that many times within one grace period).
const epochRing = 8

// verState is the client's view of the index version, replaced whole.
type verState struct {
	v     *catalogpb.IndexVersion // newest content accepted (shared, not modified)
	epoch uint32
	// retireAt[e%epochRing] is when epoch e was superseded (unix ns): its
	// entries retire at that time plus their per-key offset.
	retireAt [epochRing]int64
}

type ncKey struct{ g, id int64 }

func hashNCKey(k ncKey) uint64 {
	h := uint64(k.g)*0x9E3779B97F4A7C15 ^ uint64(k.id)*0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	return h ^ h>>32
}

// ncEntry is what the CLOCK hand and a stale check need of a cached
// product or absence. It lives in its slot (not behind a pointer), written
// only under the shard's write lock; the product itself, and a copy of
// the expiry and epoch, are in the shard map's cell (ncHot).
type ncEntry struct {
	key      ncKey
	epoch    uint32
	expires  int64 // unix ns
	offset   int64 // ns into the grace period at which an old-epoch entry retires
	size     int64
	retiredF atomic.Bool // counted as retired (once)
}

type ncSlot struct {
	ncEntry
	used bool // holds an entry (else on the free list)
}

// ncHot is what a get reads of an entry, kept in the shard map's cell
// beside the key: finding the key brings the product, its expiry and its
// epoch in the same cache lines, and the slot is read only when the entry
// is stale or of another epoch.
type ncHot struct {
	p       *catalogpb.Product // nil: absent
	expires int64
	epoch   uint32
	slot    int32
}

// set makes slot i hold the entry of k. Called with the shard's write
// lock.
func (s *ncShard) set(i int32, k ncKey, p *catalogpb.Product, epoch uint32, expires, offset, size int64) {
	sl := &s.slots[i]
	sl.key, sl.epoch, sl.expires, sl.offset, sl.size = k, epoch, expires, offset, size
	sl.retiredF.Store(false)
	sl.used = true
	s.refs[i].Store(0)
	s.m[k] = ncHot{p: p, expires: expires, epoch: epoch, slot: i}
}

type ncShard struct {
	mu    sync.RWMutex
	m     map[ncKey]ncHot
	slots []ncSlot // grows up to maxEntries
	// refs[i] is slot i's flags (refRef, refQueued), set by gets under
	// the read lock: a dense array, so that setting them touches no slot.
	refs       []atomic.Uint32
	free       []int32
	hand       int
	bytes      int64
	maxBytes   int64
	maxEntries int
	_          [64]byte
}

// Slot flags (ncShard.refs).
const (
	refRef    = 1 // CLOCK reference bit: hit since the hand last passed
	refQueued = 2 // queued for a refresh ahead of expiry
)

// refreshQueue bounds the keys waiting for the refresher; a key that finds
// it full is not queued (its entry expires as without refreshing).
const refreshQueue = 4096

// Size accounting: a decoded product is its struct plus its strings
// (DecodeValue gives them one backing string no longer than the value);
// every entry adds its slot, its reference bit and its map cell (key,
// ncHot, control byte, and room for the map's load factor).
var (
	productSize  = int64(unsafe.Sizeof(catalogpb.Product{}))
	entryOverEst = int64(unsafe.Sizeof(ncSlot{})) + 1 + (int64(unsafe.Sizeof(ncKey{})+unsafe.Sizeof(ncHot{}))+1)*8/7 + 8
)

// entrySize is the bytes an entry of a product with an encoded value of
// valueLen bytes counts for (valueLen < 0: an absence).
func entrySize(valueLen int) int64 {
	if valueLen < 0 {
		return entryOverEst
	}
	return entryOverEst + productSize + int64(valueLen)
}

// minShardBytes keeps shards big enough that one large product does not
// fill one.
const minShardBytes = 1 << 20

func newNearCache(maxBytes int64, grace, maxAge time.Duration, m *metrics) *nearCache {
	if maxBytes <= 0 {
		return nil
	}
	n := 1
	for n < 64 && int64(n)*2*minShardBytes <= maxBytes {
		n <<= 1
	}
	c := &nearCache{
		shards: make([]ncShard, n), mask: uint64(n - 1),
		grace: int64(grace), maxAge: int64(maxAge), m: m,
		now:          func() int64 { return time.Now().UnixNano() },
		refreshAhead: int64(maxAge) / 8,
		refresh:      make(chan ncKey, refreshQueue),
	}
	per := maxBytes / int64(n)
	for i := range c.shards {
		s := &c.shards[i]
		s.maxBytes = per
		s.maxEntries = int(per / entryOverEst)
		s.m = make(map[ncKey]ncHot)
	}
	c.ver.Store(&verState{epoch: 1})
	c.lists = newListCache(maxBytes)
	c.memo = catalog.NewMergeMemo(int(min(max(maxBytes/16/memoEntryBytes, 1024), 1<<18)))
	return c
}

func (c *nearCache) shard(k ncKey) *ncShard { return &c.shards[(hashNCKey(k)>>40)&c.mask] }

// maxEntries is the most entries the cache can hold (all absences).
func (c *nearCache) maxEntries() int {
	n := 0
	for i := range c.shards {
		n += c.shards[i].maxEntries
	}
	return n
}

// stale says whether e must not be served at now under vs, and why.
func (c *nearCache) stale(e *ncEntry, now int64, vs *verState) (bool, int) {
	if now >= e.expires {
		return true, causeMaxAge
	}
	// d < 0: the entry is newer than the caller's snapshot of vs.
	if d := int32(vs.epoch - e.epoch); d > 0 {
		if d >= epochRing || now >= vs.retireAt[e.epoch%epochRing]+e.offset {
			return true, causeEpoch
		}
	}
	return false, 0
}

func (c *nearCache) retire(e *ncEntry, cause int) {
	if e.retiredF.CompareAndSwap(false, true) {
		c.retired[cause].Add(1)
		c.m.retire(cause)
	}
}

// get returns the cached product for k (nil: known absent) and whether the
// cache could answer.
func (c *nearCache) get(k ncKey, now int64, vs *verState) (*catalogpb.Product, bool) {
	s := c.shard(k)
	s.mu.RLock()
	h, ok := s.m[k]
	if !ok {
		s.mu.RUnlock()
		return nil, false
	}
	if now >= h.expires || h.epoch != vs.epoch { // the slot has the rest
		sl := &s.slots[h.slot]
		if st, cause := c.stale(&sl.ncEntry, now, vs); st {
			c.retire(&sl.ncEntry, cause)
			s.mu.RUnlock()
			return nil, false
		}
	}
	r, due := &s.refs[h.slot], now >= h.expires-c.refreshAhead
	if f := r.Load(); f&refRef == 0 || due && f&refQueued == 0 {
		c.touch(k, r, due)
	}
	s.mu.RUnlock()
	return h.p, true
}

// touch sets a hit entry's reference bit and, when refresh, queues its key
// for the refresher once. Called with the shard's read lock.
func (c *nearCache) touch(k ncKey, r *atomic.Uint32, refresh bool) {
	if !refresh {
		r.Or(refRef)
		return
	}
	if r.Or(refRef|refQueued)&refQueued != 0 {
		return // queued already
	}
	select {
	case c.refresh <- k:
	default:
		r.And(^uint32(refQueued)) // full: try again at a later hit
		c.m.refreshed(refreshDropped)
	}
}

// unqueue clears k's queued flag (its refresh failed: a later hit queues
// it again).
func (c *nearCache) unqueue(k ncKey) {
	s := c.shard(k)
	s.mu.RLock()
	if h, ok := s.m[k]; ok {
		s.refs[h.slot].And(^uint32(refQueued))
	}
	s.mu.RUnlock()
}

// put inserts (or replaces) k's entry, read from an answer of content hash
// hash, if that is still the client's current content (checked under the
// shard lock, so a delta retirement that follows cannot miss it).
func (c *nearCache) put(k ncKey, p *catalogpb.Product, valueLen int, hash uint64, now int64) {
	size := entrySize(valueLen)
	if p == nil {
		size = entrySize(-1)
	}
	s := c.shard(k)
	if size > s.maxBytes || s.maxEntries == 0 {
		return
	}
	h := hashNCKey(k)
	var offset int64
	if c.grace > 0 {
		offset = int64(h % uint64(c.grace))
	}
	expires := now + c.maxAge - int64((h>>20)%uint64(c.maxAge/4+1))
	s.mu.Lock()
	vs := c.ver.Load()
	if vs.v.GetContentHash() != hash {
		s.mu.Unlock()
		return
	}
	if h, ok := s.m[k]; ok { // replace in place
		sl := &s.slots[h.slot]
		s.bytes += size - sl.size
		c.bytes.Add(size - sl.size)
		s.set(h.slot, k, p, vs.epoch, expires, offset, size)
		s.evict(c, now, vs, -1)
		s.mu.Unlock()
		return
	}
	s.evict(c, now, vs, size)
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		s.slots = append(s.slots, ncSlot{})
		s.refs = append(s.refs, atomic.Uint32{})
		i = int32(len(s.slots) - 1)
	}
	s.set(i, k, p, vs.epoch, expires, offset, size)
	s.bytes += size
	c.bytes.Add(size)
	c.entries.Add(1)
	s.mu.Unlock()
}

// evict makes room for an entry of size bytes (-1: none, only trim to the
// bound), CLOCK order; stale entries go first whatever their bit. Called
// with s.mu held.
func (s *ncShard) evict(c *nearCache, now int64, vs *verState, size int64) {
	extra, slot := max(size, 0), int64(0)
	if size >= 0 {
		slot = 1
	}
	for len(s.m) > 0 && (s.bytes+extra > s.maxBytes || int64(len(s.m))+slot > int64(s.maxEntries)) {
		if s.hand >= len(s.slots) {
			s.hand = 0
		}
		sl := &s.slots[s.hand]
		if !sl.used {
			s.hand++
			continue
		}
		if st, cause := c.stale(&sl.ncEntry, now, vs); st {
			c.retire(&sl.ncEntry, cause)
		} else if r := &s.refs[s.hand]; r.Load()&refRef != 0 {
			r.And(^uint32(refRef))
			s.hand++
			continue
		} else {
			c.evictions.Add(1)
			c.m.evict()
		}
		s.remove(c, int32(s.hand))
		s.hand++
	}
}

// remove frees slot i. Called with s.mu held.
func (s *ncShard) remove(c *nearCache, i int32) {
	sl := &s.slots[i]
	delete(s.m, sl.key)
	sl.used = false
	s.free = append(s.free, i)
	s.bytes -= sl.size
	c.bytes.Add(-sl.size)
	c.entries.Add(-1)
}

// drop retires k's entry now (a delta named it).
func (c *nearCache) drop(k ncKey) {
	s := c.shard(k)
	s.mu.Lock()
	if h, ok := s.m[k]; ok {
		c.retire(&s.slots[h.slot].ncEntry, causeDelta)
		s.remove(c, h.slot)
	}
	s.mu.Unlock()
}

// count adds one request's lookups.
func (c *nearCache) count(hits, absentHits, misses int64) {
	if hits != 0 {
		c.hits.Add(hits)
	}
	if absentHits != 0 {
		c.absentHits.Add(absentHits)
	}
	if misses != 0 {
		c.misses.Add(misses)
	}
	c.m.lookupsAdd(hits-absentHits, absentHits, misses)
	c.m.setNear(c.entries.Load(), c.bytes.Load())
}

// NearCacheStats are the near cache's counters since the Client started.
type NearCacheStats struct {
	// Hits are lookups the cache answered, AbsentHits among them those it
	// answered with "no such product"; Misses went to a node.
	Hits, AbsentHits, Misses int64
	// Entries and Bytes are the cache's content now; MaxBytes its bound.
	Entries, Bytes, MaxBytes int64
	// Evictions made room; Retired{Delta,Epoch,MaxAge} were entries no
	// longer served because a delta named them, their index content was
	// superseded, or they reached near_cache_max_age.
	Evictions                                 int64
	RetiredDelta, RetiredEpoch, RetiredMaxAge int64
}

// HitRatio is Hits / (Hits + Misses), 0 with no lookups.
func (s NearCacheStats) HitRatio() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

func (c *nearCache) stats() NearCacheStats {
	if c == nil {
		return NearCacheStats{}
	}
	var maxBytes int64
	for i := range c.shards {
		maxBytes += c.shards[i].maxBytes
	}
	return NearCacheStats{
		Hits: c.hits.Load(), AbsentHits: c.absentHits.Load(), Misses: c.misses.Load(),
		Entries: c.entries.Load(), Bytes: c.bytes.Load(), MaxBytes: maxBytes,
		Evictions:     c.evictions.Load(),
		RetiredDelta:  c.retired[causeDelta].Load(),
		RetiredEpoch:  c.retired[causeEpoch].Load(),
		RetiredMaxAge: c.retired[causeMaxAge].Load(),
	}
}
