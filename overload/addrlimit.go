package overload

import (
	"net/netip"
	"sync"
)

// AddrLimit counts a listener's open connections per remote IP address
// and holds at most Max from one, so one address cannot take every place
// of a connection budget. It is safe for concurrent use.
type AddrLimit struct {
	max    int
	mu     sync.Mutex
	byAddr map[netip.Addr]int
}

// NewAddrLimit returns an AddrLimit of at most max connections per address.
func NewAddrLimit(max int) *AddrLimit {
	return &AddrLimit{max: max, byAddr: make(map[netip.Addr]int)}
}

// Take counts one more connection from a, unless max are open from it:
// then it reports false and counts nothing.
func (l *AddrLimit) Take(a netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[a] >= l.max {
		return false
	}
	l.byAddr[a]++
	return true
}

// Drop counts one connection from a fewer (one Take reported true for).
func (l *AddrLimit) Drop(a netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[a] <= 1 {
		delete(l.byAddr, a)
	} else {
		l.byAddr[a]--
	}
}

// Addrs is how many addresses hold a connection now.
func (l *AddrLimit) Addrs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byAddr)
}
