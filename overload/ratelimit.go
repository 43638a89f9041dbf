package overload

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Rate limits: a Limiter limits requests per source (a client's IP address)
// with a token bucket per source, held in a table of fixed size: however
// many sources ask, the memory is what NewLimiter allocated.
//
// The table is set-associative: a source's hash picks a set of Ways
// entries, and a source not in its set takes the entry whose bucket is
// the fullest (the one seen least recently). An entry whose bucket has
// refilled holds nothing a fresh bucket would not, so forgetting it loses
// nothing; only when every entry of a set is still refilling does a new
// source push out a limited one (counted in Stats.Evicted), which then
// starts again with a full bucket. Size the table for the sources active
// within a burst's refill time.
//
// Each bucket is the generic cell rate algorithm's single timestamp (the
// time at which the bucket will be full again), so a check is a hash, a
// lock and a compare: no allocation.

// Ways is how many entries a set of the table holds.
const Ways = 8

// Key is a source: an IP address in its 16-byte form (IPv4 mapped).
type Key [16]byte

// KeyOf returns the key of addr (an IPv4 address and its IPv4-mapped IPv6
// form are the same source).
func KeyOf(addr netip.Addr) Key { return addr.Unmap().As16() }

// Limit is a token bucket: Rate requests a second on average, Burst at
// once. Rate <= 0 is no limit.
type Limit struct {
	Rate  float64
	Burst int
}

// Stats are a Limiter's counts since NewLimiter.
type Stats struct {
	Allowed, Limited uint64
	// Evicted counts sources forgotten while their bucket was not yet
	// full (the table was too small for the active sources).
	Evicted uint64
}

// Limiter is a fixed table of token buckets, one per source. It is safe
// for concurrent use. A nil *Limiter allows everything.
type Limiter struct {
	interval  int64 // ns per request at Rate
	tolerance int64 // ns: (Burst-1) * interval
	seed      maphash.Seed
	sets      []set
	mask      uint64

	allowed, limited, evicted atomic.Uint64
}

type set struct {
	mu   sync.Mutex
	keys [Ways]Key
	// full is, per entry, the time (unix ns) at which its bucket is full
	// again; 0: an empty entry.
	full [Ways]int64
}

// NewLimiter returns a Limiter for l with room for at least sources sources
// (rounded up to a power of two sets of Ways), or nil when l.Rate <= 0.
// Burst < 1 is 1.
func NewLimiter(l Limit, sources int) *Limiter {
	if !(l.Rate > 0) {
		return nil
	}
	nsets := 1
	for nsets*Ways < sources {
		nsets <<= 1
	}
	interval := int64(1e9 / l.Rate)
	if interval < 1 {
		interval = 1
	}
	burst := int64(max(l.Burst, 1))
	return &Limiter{
		interval:  interval,
		tolerance: (burst - 1) * interval,
		seed:      maphash.MakeSeed(),
		sets:      make([]set, nsets),
		mask:      uint64(nsets - 1),
	}
}

// Sources is how many sources the table holds at most.
func (l *Limiter) Sources() int {
	if l == nil {
		return 0
	}
	return len(l.sets) * Ways
}

// Allow reports whether source k may make a request at now (unix ns), and
// if so takes one from its bucket. Callers pass a clock that does not go
// backwards by much (time.Now().UnixNano()); a source's bucket refills
// from the newest time it saw.
func (l *Limiter) Allow(k Key, now int64) bool {
	if l == nil {
		return true
	}
	s := &l.sets[maphash.Bytes(l.seed, k[:])&l.mask]
	s.mu.Lock()
	i := -1
	for j := range s.keys {
		if s.full[j] != 0 && s.keys[j] == k {
			i = j
			break
		}
	}
	if i < 0 {
		// Not held: take the fullest bucket (empty entries first).
		i = 0
		for j := 1; j < Ways; j++ {
			if s.full[j] < s.full[i] {
				i = j
			}
		}
		if s.full[i] > now {
			l.evicted.Add(1)
		}
		s.keys[i], s.full[i] = k, 0
	}
	t := max(s.full[i], now)
	ok := t-now <= l.tolerance
	if ok {
		s.full[i] = t + l.interval
	}
	s.mu.Unlock()
	if ok {
		l.allowed.Add(1)
	} else {
		l.limited.Add(1)
	}
	return ok
}

// Stats returns the counts so far.
func (l *Limiter) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	return Stats{Allowed: l.allowed.Load(), Limited: l.limited.Load(), Evicted: l.evicted.Load()}
}

// Held is how many entries of the table hold a source (tests, and a gauge
// when scraped: it takes every set's lock in turn).
func (l *Limiter) Held() int {
	if l == nil {
		return 0
	}
	n := 0
	for i := range l.sets {
		s := &l.sets[i]
		s.mu.Lock()
		for _, f := range s.full {
			if f != 0 {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}
