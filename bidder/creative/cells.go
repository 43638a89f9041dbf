package creative

import (
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// CellCache keeps the rendered markup of product cells (the image, title
// and prices: all of a cell but its link, which is per bid), so that a
// banner of popular products copies bytes instead of validating URLs and
// escaping text again for every bid. A 15-product banner spends most of
// its time there.
//
// It is keyed by the *catalogpb.Product pointer, so it is for product
// stores that hand out the same immutable Product for a product every
// time, and never reuse one's memory for another: the local index's hot
// cache, or the remote catalog client's near cache. With a store that
// decodes fresh products per call (the remote client without its near
// cache) every lookup would miss; do not use it there.
//
// A product has two slots, both hashes of its pointer (two-choice
// hashing: with one, at a full cache's load a product would share its
// slot with another ~60% of the time and the two would take turns). A
// lookup reads both; lookups take no lock. A miss renders the cell and,
// if the product was seen before (a doorkeeper bitset remembers first
// sightings, as the hot cache's does), copies it (one allocation) into an
// empty one of the two slots or else into either at random. So the
// products a store decodes afresh for each call (the long tail its hot
// cache does not keep) are never stored: they would only churn the cache
// and pin memory.
//
// An entry keeps its product alive, so a product the store has dropped
// (evicted, or from a previous index version) stays in memory until its
// slot is reused: the cache holds at most its number of slots of them
// (about 1 KiB each with the product).
//
// A nil *CellCache caches nothing. It is safe for concurrent use.
type CellCache struct {
	slots        []atomic.Pointer[cellEntry]
	shift        uint            // 64 - log2(len(slots))
	door         []atomic.Uint64 // doorkeeper: products seen once, 8 bits per slot
	doorN        atomic.Int64    // first sightings since the doorkeeper's reset
	hits, misses atomic.Int64
}

type cellEntry struct {
	p    *catalogpb.Product
	html []byte // what appendCellBody writes for p
}

// NewCellCache returns a cache of about entries cells (its slots: entries
// rounded up to a power of two, at least 64), or nil when entries <= 0.
// A slot costs 9 bytes, an entry the cell's markup (200-400 bytes for a
// typical product) plus 48 bytes, and its product.
func NewCellCache(entries int) *CellCache {
	if entries <= 0 {
		return nil
	}
	n := max(64, 1<<bits.Len(uint(entries-1)))
	return &CellCache{slots: make([]atomic.Pointer[cellEntry], n), shift: uint(64 - bits.Len(uint(n-1))),
		door: make([]atomic.Uint64, n/8)}
}

// Stats returns the cache's hits and misses so far (0, 0 for nil).
func (c *CellCache) Stats() (hits, misses int64) {
	if c == nil {
		return 0, 0
	}
	return c.hits.Load(), c.misses.Load()
}

// slotsOf returns p's two slots.
func (c *CellCache) slotsOf(p *catalogpb.Product) (a, b *atomic.Pointer[cellEntry]) {
	// Fibonacci hashing, twice: the top bits of each product mix all of
	// the pointer's bits.
	u := uint64(uintptr(unsafe.Pointer(p)))
	return &c.slots[(u*0x9E3779B97F4A7C15)>>c.shift], &c.slots[(u*0xC2B2AE3D27D4EB4F)>>c.shift]
}

// appendBody appends p's cell body from c when it is there, else renders
// it and keeps a copy. hit says which.
func (c *CellCache) appendBody(dst []byte, p *catalogpb.Product) (_ []byte, hit bool) {
	a, b := c.slotsOf(p)
	ea, eb := a.Load(), b.Load()
	switch {
	case ea != nil && ea.p == p:
		return append(dst, ea.html...), true
	case eb != nil && eb.p == p:
		return append(dst, eb.html...), true
	}
	start := len(dst)
	dst = appendCellBody(dst, p)
	if !c.seen(p) {
		return dst, false
	}
	e := &cellEntry{p: p, html: append([]byte(nil), dst[start:]...)}
	switch {
	case ea == nil:
		a.Store(e)
	case eb == nil || rand.Uint32()&1 == 0:
		b.Store(e)
	default:
		a.Store(e)
	}
	return dst, false
}

// seen reports whether p was seen before (since the doorkeeper's last
// reset), and remembers it if not. The doorkeeper is cleared after about
// as many first sightings as the cache has slots, so its false "seen
// before" stay rare.
func (c *CellCache) seen(p *catalogpb.Product) bool {
	// The top bits of a third Fibonacci hash: 8 bits per slot, so 3 more.
	bit := (uint64(uintptr(unsafe.Pointer(p))) * 0x94D049BB133111EB) >> (c.shift - 3)
	w, m := &c.door[bit/64], uint64(1)<<(bit%64)
	if w.Load()&m != 0 {
		return true
	}
	w.Or(m)
	if c.doorN.Add(1) >= int64(len(c.slots)) {
		c.doorN.Store(0)
		for i := range c.door {
			c.door[i].Store(0)
		}
	}
	return false
}

// count adds one banner's hits and misses (once per banner: the counters
// are shared by every core).
func (c *CellCache) count(hits, misses int64) {
	if hits > 0 {
		c.hits.Add(hits)
	}
	if misses > 0 {
		c.misses.Add(misses)
	}
}
