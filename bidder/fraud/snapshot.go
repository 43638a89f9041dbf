package fraud

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rtbd/rtbd/bidder/internal/ascii"
	"github.com/rtbd/rtbd/rtb"
)

// List names one block list.
type List int

// The block lists, in the order Check tries them.
const (
	ListDomains List = iota
	ListBundles
	ListIPs
	ListDataCenters
	ListIFAs
	ListUIDs
	numLists
)

var listNames = [numLists]string{"domains", "bundles", "ips", "datacenters", "ifas", "uids"}

// String is the list's Redis key suffix and metric label.
func (l List) String() string {
	if l >= 0 && l < numLists {
		return listNames[l]
	}
	return "unknown"
}

// NBR is the no-bid reason a hit in l gives.
func (l List) NBR() rtb.NoBidReason {
	switch l {
	case ListDomains, ListBundles:
		return rtb.NoBidBlockedPublisher
	case ListDataCenters:
		return rtb.NoBidCloudProxyIP
	default:
		return rtb.NoBidSuspectedNonHuman
	}
}

// MaxEntryLen is the longest entry accepted in any list, in bytes.
const MaxEntryLen = 253

// Snapshot is one immutable version of every list. Safe for concurrent use.
type Snapshot struct {
	domains, bundles, ifas, uids map[string]struct{}
	ips, dcs                     ipSet
	// Version is the version key's value read before the load (0 if absent).
	Version int64
	// LoadedAt is when the load finished.
	LoadedAt time.Time
	// Sizes are the entries kept per list (after dropping rejected ones).
	Sizes [numLists]int
}

// ipSet matches addresses exactly and by prefix.
type ipSet struct {
	addrs    map[netip.Addr]struct{}
	prefixes map[netip.Prefix]struct{}
	lens4    []int // distinct prefix lengths of IPv4 prefixes, longest first
	lens6    []int
}

func (s *ipSet) add(p netip.Prefix) {
	if p.IsSingleIP() {
		if s.addrs == nil {
			s.addrs = map[netip.Addr]struct{}{}
		}
		s.addrs[p.Addr()] = struct{}{}
		return
	}
	if s.prefixes == nil {
		s.prefixes = map[netip.Prefix]struct{}{}
	}
	s.prefixes[p] = struct{}{}
	lens := &s.lens6
	if p.Addr().Is4() {
		lens = &s.lens4
	}
	if !slices.Contains(*lens, p.Bits()) {
		*lens = append(*lens, p.Bits())
		slices.Sort(*lens)
		slices.Reverse(*lens)
	}
}

func (s *ipSet) size() int { return len(s.addrs) + len(s.prefixes) }

func (s *ipSet) contains(a netip.Addr) bool {
	if _, ok := s.addrs[a]; ok {
		return true
	}
	if len(s.prefixes) == 0 {
		return false
	}
	lens := s.lens6
	if a.Is4() {
		lens = s.lens4
	}
	for _, bits := range lens {
		p, err := a.Prefix(bits)
		if err != nil {
			continue
		}
		if _, ok := s.prefixes[p]; ok {
			return true
		}
	}
	return false
}

// Check reports whether the request is blocked and by which list; see the
// package comment. It allocates nothing.
func (s *Snapshot) Check(site, bundle, ip, ifa, uid string) (blocked bool, list List) {
	if site != "" && s.hasDomain(site) {
		return true, ListDomains
	}
	if bundle != "" && hasFold(s.bundles, bundle) {
		return true, ListBundles
	}
	if ip != "" && (len(s.ips.addrs) > 0 || len(s.ips.prefixes) > 0 || len(s.dcs.addrs) > 0 || len(s.dcs.prefixes) > 0) {
		if a, err := netip.ParseAddr(ip); err == nil {
			a = a.Unmap().WithZone("")
			if s.ips.contains(a) {
				return true, ListIPs
			}
			if s.dcs.contains(a) {
				return true, ListDataCenters
			}
		}
	}
	if ifa != "" && hasFold(s.ifas, ifa) {
		return true, ListIFAs
	}
	if uid != "" {
		if _, ok := s.uids[uid]; ok {
			return true, ListUIDs
		}
	}
	return false, 0
}

// hasFold looks v up lower-cased, without allocating.
func hasFold(m map[string]struct{}, v string) bool {
	if len(m) == 0 || len(v) > MaxEntryLen {
		return false
	}
	if !hasUpper(v) {
		_, ok := m[v]
		return ok
	}
	var buf [MaxEntryLen]byte
	b := ascii.AppendLower(buf[:0], v)
	_, ok := m[string(b)]
	return ok
}

// hasDomain matches d and each of its parent domains.
func (s *Snapshot) hasDomain(d string) bool {
	if len(s.domains) == 0 || len(d) > MaxEntryLen+1 {
		return false
	}
	d = strings.TrimSuffix(d, ".")
	var buf [MaxEntryLen + 1]byte
	b := ascii.AppendLower(buf[:0], d)
	for {
		if _, ok := s.domains[string(b)]; ok {
			return true
		}
		i := indexDot(b)
		if i < 0 {
			return false
		}
		b = b[i+1:]
	}
}

func indexDot(b []byte) int {
	for i, c := range b {
		if c == '.' {
			return i
		}
	}
	return -1
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

// builder accumulates one load.
type builder struct {
	s        *Snapshot
	rejected [numLists]int
}

func newBuilder() *builder {
	return &builder{s: &Snapshot{
		domains: map[string]struct{}{}, bundles: map[string]struct{}{},
		ifas: map[string]struct{}{}, uids: map[string]struct{}{},
	}}
}

// add parses one raw entry of list l; false if it was rejected.
func (b *builder) add(l List, raw string) bool {
	switch l {
	case ListDomains:
		d, ok := normalizeDomain(raw)
		if !ok {
			b.rejected[l]++
			return false
		}
		b.s.domains[d] = struct{}{}
	case ListBundles, ListIFAs:
		v, ok := normalizeToken(raw, true)
		if !ok {
			b.rejected[l]++
			return false
		}
		if l == ListBundles {
			b.s.bundles[v] = struct{}{}
		} else {
			b.s.ifas[v] = struct{}{}
		}
	case ListUIDs:
		v, ok := normalizeToken(raw, false)
		if !ok {
			b.rejected[l]++
			return false
		}
		b.s.uids[v] = struct{}{}
	case ListIPs, ListDataCenters:
		p, ok := parseIPOrPrefix(raw)
		if !ok {
			b.rejected[l]++
			return false
		}
		if l == ListIPs {
			b.s.ips.add(p)
		} else {
			b.s.dcs.add(p)
		}
	}
	return true
}

func (b *builder) finish(version int64, now time.Time) *Snapshot {
	s := b.s
	s.Version, s.LoadedAt = version, now
	s.Sizes = [numLists]int{len(s.domains), len(s.bundles), s.ips.size(), s.dcs.size(), len(s.ifas), len(s.uids)}
	return s
}

func (s *Snapshot) total() int {
	n := 0
	for _, v := range s.Sizes {
		n += v
	}
	return n
}

// normalizeDomain turns a domain list entry into the form Check matches:
// lower case, without surrounding spaces, a leading "*." or "." or a
// trailing ".". It rejects empty or over-long values and values with
// characters other than letters, digits, '-', '_' and '.', or empty labels.
func normalizeDomain(raw string) (string, bool) {
	d := strings.TrimSpace(raw)
	d = strings.TrimPrefix(d, "*.")
	d = strings.TrimPrefix(d, ".")
	d = strings.TrimSuffix(d, ".")
	if d == "" || len(d) > MaxEntryLen {
		return "", false
	}
	prevDot := true
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case c == '.':
			if prevDot {
				return "", false
			}
			prevDot = true
			continue
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		case c >= 'A' && c <= 'Z':
		default:
			return "", false
		}
		prevDot = false
	}
	if prevDot {
		return "", false
	}
	return strings.ToLower(d), true
}

// normalizeToken trims spaces and rejects empty, over-long or control-
// character values; fold lower-cases.
func normalizeToken(raw string, fold bool) (string, bool) {
	v := strings.TrimSpace(raw)
	if v == "" || len(v) > MaxEntryLen {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return "", false
		}
	}
	if fold {
		v = strings.ToLower(v)
	}
	return v, true
}

// parseIPOrPrefix parses an IP list entry: an IPv4 or IPv6 address (a
// single-address prefix) or a CIDR prefix, which is masked ("10.1.2.3/8"
// means 10.0.0.0/8). IPv4-mapped IPv6 forms are turned into IPv4; zones are
// rejected.
func parseIPOrPrefix(raw string) (netip.Prefix, bool) {
	v := strings.TrimSpace(raw)
	if v == "" || len(v) > 64 {
		return netip.Prefix{}, false
	}
	if strings.IndexByte(v, '/') >= 0 {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return netip.Prefix{}, false
		}
		a := p.Addr()
		bits := p.Bits()
		if a.Is4In6() {
			if bits < 96 {
				return netip.Prefix{}, false
			}
			a, bits = a.Unmap(), bits-96
		}
		p, err = a.Prefix(bits)
		if err != nil {
			return netip.Prefix{}, false
		}
		return p, true
	}
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}
