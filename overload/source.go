package overload

import (
	"bytes"
	"net/netip"
)

// ClientAddr is the client of a request from peer carrying the
// X-Forwarded-For header xff: peer itself, or, when peer is in trusted (a
// proxy), the rightmost address of xff that is not in trusted (an entry
// that is not an address ends the walk at the hop before it). The source
// a rate limit counts (KeyOf).
func ClientAddr(peer netip.Addr, xff []byte, trusted []netip.Prefix) netip.Addr {
	peer = peer.Unmap()
	if !inPrefixes(peer, trusted) {
		return peer
	}
	for len(xff) > 0 {
		i := bytes.LastIndexByte(xff, ',')
		part := bytes.TrimSpace(xff[i+1:])
		if i < 0 {
			xff = nil
		} else {
			xff = xff[:i]
		}
		a, err := netip.ParseAddr(string(part))
		if err != nil {
			break
		}
		peer = a.Unmap()
		if !inPrefixes(peer, trusted) {
			break
		}
	}
	return peer
}

// inPrefixes reports whether a is in one of ps.
func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
