package catalog

import (
	"slices"
	"sync/atomic"
)

// MergeMemo caches the answers of similar_to_viewed merges: for a group
// and a viewed list, the merged ids best first (at most MemoIDs of them).
// A user's bid requests ask the same merge again and again, within one
// request (one lookup per creative template of a group) and across the
// requests of a browsing session, until they view something new (a new
// viewed list: a new key). Two-way set associative by a hash of the key
// (the two most recently stored keys of a pair stay), compared in full on
// a hit (no false hit); a hit allocates nothing, a miss allocates the
// entry it stores. The lists behind a memo must not
// change while it is used: the local store keeps one per index version;
// the remote client's entries carry the epoch and expiry of its cached
// lists. A nil *MergeMemo caches nothing.
type MergeMemo struct {
	slots []atomic.Pointer[memoEntry]
	mask  uint64
}

// MemoIDs is the most merged ids an entry keeps: enough for
// SimilarLimit of a template's largest quantity (2 x 28 + 8).
const MemoIDs = 64

type memoEntry struct {
	g       int64
	epoch   uint32
	expires int64   // unix ns; 0: none
	viewed  []int64 // the key's viewed list
	ids     []int64 // merged, best first
	all     bool    // ids holds every merged id (fewer than MemoIDs)
}

// NewMergeMemo returns a memo of at least n slots (a power of two, at
// least 2), or nil for n <= 0. An entry takes about 8 bytes per viewed and merged id.
func NewMergeMemo(n int) *MergeMemo {
	if n <= 0 {
		return nil
	}
	size := 2
	for size < n {
		size <<= 1
	}
	return &MergeMemo{slots: make([]atomic.Pointer[memoEntry], size), mask: uint64(size - 1)}
}

// pair returns the two slots the key may live in (neighbours).
func (m *MergeMemo) pair(g int64, viewed []int64) (*atomic.Pointer[memoEntry], *atomic.Pointer[memoEntry]) {
	h := uint64(g) * 0x9e3779b97f4a7c15
	for _, v := range viewed {
		h = (h ^ uint64(v)) * 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	i := (h >> 20) & m.mask
	return &m.slots[i], &m.slots[i^1]
}

func (e *memoEntry) is(g int64, viewed []int64) bool {
	return e != nil && e.g == g && slices.Equal(e.viewed, viewed)
}

// Get appends to dst the best limit (all with limit <= 0) merged ids of
// group g and viewed, and reports whether the memo had them: stored for
// epoch and not expired at now (unix ns).
func (m *MergeMemo) Get(g int64, viewed []int64, limit int, epoch uint32, now int64, dst []int64) ([]int64, bool) {
	if m == nil {
		return dst, false
	}
	a, b := m.pair(g, viewed)
	e := a.Load()
	if !e.is(g, viewed) {
		if e = b.Load(); !e.is(g, viewed) {
			return dst, false
		}
	}
	if e.epoch != epoch || e.expires != 0 && now >= e.expires {
		return dst, false
	}
	if limit <= 0 || limit > len(e.ids) {
		if !e.all {
			return dst, false
		}
		limit = len(e.ids)
	}
	return append(dst, e.ids[:limit]...), true
}

// Put stores ids, the best merged ids of group g and viewed (at most
// MemoIDs kept; all says whether ids are every merged id), for epoch
// until expires (unix ns; 0: no expiry). Neither slice is retained.
func (m *MergeMemo) Put(g int64, viewed, ids []int64, all bool, epoch uint32, expires int64) {
	if m == nil {
		return
	}
	if len(ids) > MemoIDs {
		ids, all = ids[:MemoIDs], false
	}
	buf := make([]int64, len(viewed)+len(ids))
	copy(buf, viewed)
	copy(buf[len(viewed):], ids)
	e := &memoEntry{g: g, epoch: epoch, expires: expires,
		viewed: buf[:len(viewed):len(viewed)], ids: buf[len(viewed):], all: all}
	a, b := m.pair(g, viewed)
	if old := a.Load(); old != nil && !old.is(g, viewed) {
		b.Store(old) // the pair keeps the two latest keys
	}
	a.Store(e)
}
