package supply

import (
	"hash/maphash"
	"sync/atomic"

	"golang.org/x/net/publicsuffix"
)

// registrableCache remembers the registrable domain (public suffix plus
// one label) of the hosts seen last, in a fixed table: publicsuffix
// allocates an error for every name that is not an IP address, so the bid
// path asks it once per host the table does not hold. Entries are
// immutable and swapped atomically; a host's entry is pushed out by
// another host of the same slot. Safe for concurrent use.
type registrableCache struct {
	seed  maphash.Seed
	slots [registrableSlots]atomic.Pointer[registrableEntry]
}

const registrableSlots = 4096

type registrableEntry struct {
	host string
	cut  int // host[cut:] is the registrable domain; -1: none
}

func newRegistrableCache() *registrableCache { return &registrableCache{seed: maphash.MakeSeed()} }

// of returns the registrable domain of host (lower case, no trailing
// dot), a substring of host; "" when host has none (it is a public suffix,
// or malformed). It makes no allocation when host is in the table.
func (c *registrableCache) of(host string) string {
	slot := &c.slots[maphash.String(c.seed, host)%registrableSlots]
	if e := slot.Load(); e != nil && e.host == host {
		if e.cut < 0 {
			return ""
		}
		return host[e.cut:]
	}
	e := &registrableEntry{host: string([]byte(host)), cut: -1} // host may alias a scratch buffer
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		e.cut = len(host) - len(d)
	}
	slot.Store(e)
	if e.cut < 0 {
		return ""
	}
	return host[e.cut:]
}
