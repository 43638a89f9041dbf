package user

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Limits of what a profile and a user id may hold.
const (
	// MaxUIDLen is the longest user id accepted, in bytes.
	MaxUIDLen = 128
	// MaxSegmentLen is the longest segment accepted, in bytes.
	MaxSegmentLen = 128
	// MaxSegments is the most segments a stored profile may have.
	MaxSegments = 64
)

// formatVersion is the first byte of every encoded profile.
const formatVersion = 1

var (
	// ErrCorrupt is wrapped by DecodeProfile errors: the bytes are not a
	// profile in the encoding AppendProfile writes.
	ErrCorrupt = errors.New("user: corrupt profile encoding")
	// ErrInvalidProfile is wrapped by the errors of Validate, Put and
	// RecordView for a profile (or a view) that breaks the rules: ids <= 0,
	// a group listed twice, a product listed twice in a group, too many
	// groups, products or segments, or a bad segment.
	ErrInvalidProfile = errors.New("user: invalid profile")
	// ErrInvalidUID is wrapped by the errors for a user id that is empty,
	// longer than MaxUIDLen bytes, not UTF-8, or holds a control character.
	ErrInvalidUID = errors.New("user: invalid uid")
)

// GroupIDs are product ids of one product group.
type GroupIDs struct {
	// Group is the catalog's product group id (> 0).
	Group int64
	// IDs are product ids (> 0), each at most once; for viewed products the
	// most recent first.
	IDs []int64
}

// Profile is what retargeting knows of one user. The zero value is an empty
// profile. A Profile is not safe for concurrent use; slices returned by its
// methods alias it and change when it is reused (Reset, DecodeProfile,
// Store.Get).
type Profile struct {
	// Viewed are the products the user viewed, per group; groups in order
	// of their latest view (most recent first) when written by RecordView,
	// ids most recent first.
	Viewed []GroupIDs
	// Recommended are products recommended to the user, per group, best
	// first.
	Recommended []GroupIDs
	// Segments are the user's audience segments.
	Segments []string
}

// Reset empties p and keeps the capacity of every slice (including each
// group's IDs), so that decoding into p again does not allocate.
func (p *Profile) Reset() {
	p.Viewed = p.Viewed[:0]
	p.Recommended = p.Recommended[:0]
	p.Segments = p.Segments[:0]
}

// ViewedIn returns the products viewed in group, most recent first, or nil.
// The slice aliases p.
func (p *Profile) ViewedIn(group int64) []int64 { return idsIn(p.Viewed, group) }

// RecommendedIn returns the products recommended in group, or nil. The
// slice aliases p.
func (p *Profile) RecommendedIn(group int64) []int64 { return idsIn(p.Recommended, group) }

func idsIn(gs []GroupIDs, group int64) []int64 {
	for i := range gs {
		if gs[i].Group == group {
			return gs[i].IDs
		}
	}
	return nil
}

// HasSegment reports whether p has segment s.
func (p *Profile) HasSegment(s string) bool {
	for _, x := range p.Segments {
		if x == s {
			return true
		}
	}
	return false
}

// Limits bound a profile in Validate. Zero fields are not checked.
type Limits struct {
	MaxGroups      int // groups in Viewed, and in Recommended
	MaxViewed      int // products per viewed group
	MaxRecommended int // products per recommended group
}

// Validate returns nil if p may be stored: every group and product id > 0,
// no group twice in a list, no product twice in a group, at most
// MaxSegments segments each valid (1..MaxSegmentLen bytes of UTF-8 without
// control characters) and listed once, and the counts within lim. The
// error wraps ErrInvalidProfile and names the first problem.
func (p *Profile) Validate(lim Limits) error {
	if err := validateGroups("viewed", p.Viewed, lim.MaxGroups, lim.MaxViewed); err != nil {
		return err
	}
	if err := validateGroups("recommended", p.Recommended, lim.MaxGroups, lim.MaxRecommended); err != nil {
		return err
	}
	if len(p.Segments) > MaxSegments {
		return fmt.Errorf("%w: %d segments, more than %d", ErrInvalidProfile, len(p.Segments), MaxSegments)
	}
	for i, s := range p.Segments {
		if err := checkSegment(s); err != nil {
			return fmt.Errorf("%w: segments[%d]: %w", ErrInvalidProfile, i, err)
		}
		for _, t := range p.Segments[:i] {
			if t == s {
				return fmt.Errorf("%w: segments[%d]: %q listed twice", ErrInvalidProfile, i, s)
			}
		}
	}
	return nil
}

func validateGroups(what string, gs []GroupIDs, maxGroups, maxIDs int) error {
	if maxGroups > 0 && len(gs) > maxGroups {
		return fmt.Errorf("%w: %s: %d groups, more than %d", ErrInvalidProfile, what, len(gs), maxGroups)
	}
	for i := range gs {
		g := &gs[i]
		if g.Group <= 0 {
			return fmt.Errorf("%w: %s[%d]: group id %d: must be > 0", ErrInvalidProfile, what, i, g.Group)
		}
		for _, h := range gs[:i] {
			if h.Group == g.Group {
				return fmt.Errorf("%w: %s[%d]: group %d listed twice", ErrInvalidProfile, what, i, g.Group)
			}
		}
		if maxIDs > 0 && len(g.IDs) > maxIDs {
			return fmt.Errorf("%w: %s group %d: %d products, more than %d", ErrInvalidProfile, what, g.Group, len(g.IDs), maxIDs)
		}
		for j, id := range g.IDs {
			if id <= 0 {
				return fmt.Errorf("%w: %s group %d: product id %d: must be > 0", ErrInvalidProfile, what, g.Group, id)
			}
			// Groups are small (tens of ids): a quadratic scan beats a map.
			for _, x := range g.IDs[:j] {
				if x == id {
					return fmt.Errorf("%w: %s group %d: product %d listed twice", ErrInvalidProfile, what, g.Group, id)
				}
			}
		}
	}
	return nil
}

// checkSegment returns nil if s is a valid segment: 1..MaxSegmentLen bytes
// of UTF-8 without control characters.
func checkSegment[T string | []byte](s T) error {
	switch {
	case len(s) == 0:
		return errors.New("empty segment")
	case len(s) > MaxSegmentLen:
		return fmt.Errorf("segment longer than %d bytes", MaxSegmentLen)
	case hasControl(s):
		return errors.New("segment holds a control character")
	case !validUTF8(s):
		return errors.New("segment is not valid UTF-8")
	}
	return nil
}

// CheckUID returns nil if uid is a valid user id, or an error wrapping
// ErrInvalidUID: empty, longer than MaxUIDLen bytes, not valid UTF-8, or
// holding a control character (below 0x20, or 0x7f).
func CheckUID[T string | []byte](uid T) error {
	switch {
	case len(uid) == 0:
		return fmt.Errorf("%w: empty", ErrInvalidUID)
	case len(uid) > MaxUIDLen:
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidUID, len(uid), MaxUIDLen)
	case hasControl(uid):
		return fmt.Errorf("%w: control character", ErrInvalidUID)
	case !validUTF8(uid):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidUID)
	}
	return nil
}

// ValidUID is CheckUID without the error value (no allocation).
func ValidUID[T string | []byte](uid T) bool {
	return len(uid) > 0 && len(uid) <= MaxUIDLen && !hasControl(uid) && validUTF8(uid)
}

func hasControl[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

func validUTF8[T string | []byte](s T) bool {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[i:])
		r, size := utf8.DecodeRune(buf[:n])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		i += size
	}
	return true
}

// AppendProfile appends the encoding of p to dst and returns the extended
// slice. It encodes p as it is; Store validates before it writes.
func AppendProfile(dst []byte, p *Profile) []byte {
	dst = append(dst, formatVersion)
	dst = appendGroups(dst, p.Viewed)
	dst = appendGroups(dst, p.Recommended)
	dst = binary.AppendUvarint(dst, uint64(len(p.Segments)))
	for _, s := range p.Segments {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

func appendGroups(dst []byte, gs []GroupIDs) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(gs)))
	for i := range gs {
		dst = binary.AppendUvarint(dst, uint64(gs[i].Group))
		dst = binary.AppendUvarint(dst, uint64(len(gs[i].IDs)))
		for _, id := range gs[i].IDs {
			dst = binary.AppendUvarint(dst, uint64(id))
		}
	}
	return dst
}

// DecodeProfile decodes b (from AppendProfile) into p, replacing its
// content and reusing its slices: with enough capacity it allocates nothing
// but the segment strings, and not even those when p's backing array
// already holds an equal string (as when p is reused for users with the same
// segments). b is not retained. On error p is reset and the error wraps
// ErrCorrupt; no input makes it panic.
func DecodeProfile(b []byte, p *Profile) error {
	return decodeProfile(b, p, nil)
}

// decodeProfile is DecodeProfile with an optional Interner for segments.
func decodeProfile(b []byte, p *Profile, in *Interner) error {
	if err := decodeInto(b, p, in); err != nil {
		p.Reset()
		return err
	}
	return nil
}

func corrupt(what string) error { return fmt.Errorf("%w: %s", ErrCorrupt, what) }

func decodeInto(b []byte, p *Profile, in *Interner) (err error) {
	if len(b) == 0 {
		return corrupt("empty")
	}
	if b[0] != formatVersion {
		return fmt.Errorf("%w: unknown format %d", ErrCorrupt, b[0])
	}
	b = b[1:]
	if p.Viewed, b, err = decodeGroups(b, p.Viewed); err != nil {
		return err
	}
	if p.Recommended, b, err = decodeGroups(b, p.Recommended); err != nil {
		return err
	}
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b))/2 { // a segment takes >= 2 bytes
		return corrupt("segment count")
	}
	segs := p.Segments[:0]
	if uint64(cap(segs)) < n {
		// Grow keeping the old strings: they are reused when equal.
		ns := make([]string, n)
		copy(ns, segs[:cap(segs)])
		segs = ns[:0]
	}
	full := segs[:cap(segs)]
	for i := 0; i < int(n); i++ {
		l, rest, ok := uvarint(b)
		if !ok || l == 0 || l > MaxSegmentLen || l > uint64(len(rest)) {
			return corrupt("segment length")
		}
		sb := rest[:l]
		b = rest[l:]
		if checkSegment(sb) != nil {
			return corrupt("segment content")
		}
		// Reuse an equal string left in the backing array by an earlier
		// decode: swap it into slot i (slots >= i are not in use yet).
		found := false
		for j := i; j < len(full); j++ {
			if full[j] == string(sb) {
				full[i], full[j] = full[j], full[i]
				found = true
				break
			}
		}
		if !found {
			if in != nil {
				full[i] = in.intern(sb)
			} else {
				full[i] = string(sb)
			}
		}
	}
	p.Segments = full[:n]
	if len(b) != 0 {
		return corrupt("trailing bytes")
	}
	return nil
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

// positive reads a uvarint that must be an int64 > 0.
func positive(b []byte) (int64, []byte, bool) {
	v, rest, ok := uvarint(b)
	if !ok || v == 0 || v > 1<<63-1 {
		return 0, b, false
	}
	return int64(v), rest, true
}

// decodeGroups decodes a group list into dst's backing array, reusing the
// IDs slices found there.
func decodeGroups(b []byte, dst []GroupIDs) ([]GroupIDs, []byte, error) {
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b))/2 { // a group takes >= 2 bytes
		return dst[:0], b, corrupt("group count")
	}
	if uint64(cap(dst)) < n {
		nd := make([]GroupIDs, n)
		copy(nd, dst[:cap(dst)]) // keep the old IDs capacities
		dst = nd
	}
	dst = dst[:n]
	for i := range dst {
		g := &dst[i]
		var cnt uint64
		if g.Group, b, ok = positive(b); !ok {
			return dst[:0], b, corrupt("group id")
		}
		if cnt, b, ok = uvarint(b); !ok || cnt > uint64(len(b)) { // an id takes >= 1 byte
			return dst[:0], b, corrupt("product count")
		}
		ids := g.IDs[:0]
		if uint64(cap(ids)) < cnt {
			ids = make([]int64, 0, cnt)
		}
		for range cnt {
			var id int64
			if id, b, ok = positive(b); !ok {
				g.IDs = ids
				return dst[:0], b, corrupt("product id")
			}
			ids = append(ids, id)
		}
		g.IDs = ids
	}
	return dst, b, nil
}

// RecordView applies one view of product pid in group to p in place,
// reusing its slices: the group moves to the front of Viewed and pid to the
// front of its IDs; then every group keeps at most maxViewed ids and p at
// most maxGroups groups. Every user store applies a view by this rule.
func (p *Profile) RecordView(group, pid int64, maxGroups, maxViewed int) {
	gi := -1
	for i := range p.Viewed {
		if p.Viewed[i].Group == group {
			gi = i
			break
		}
	}
	if gi < 0 {
		if len(p.Viewed) < cap(p.Viewed) {
			p.Viewed = p.Viewed[:len(p.Viewed)+1]
		} else {
			p.Viewed = append(p.Viewed, GroupIDs{})
		}
		gi = len(p.Viewed) - 1
		p.Viewed[gi].Group = group
		p.Viewed[gi].IDs = p.Viewed[gi].IDs[:0]
	}
	if gi > 0 { // rotate the group to the front (a permutation: no IDs slice is shared)
		g := p.Viewed[gi]
		copy(p.Viewed[1:gi+1], p.Viewed[:gi])
		p.Viewed[0] = g
	}
	g := &p.Viewed[0]
	j := -1
	for k, id := range g.IDs {
		if id == pid {
			j = k
			break
		}
	}
	if j < 0 {
		g.IDs = append(g.IDs, 0)
		j = len(g.IDs) - 1
	}
	copy(g.IDs[1:j+1], g.IDs[:j])
	g.IDs[0] = pid
	for i := range p.Viewed {
		if len(p.Viewed[i].IDs) > maxViewed {
			p.Viewed[i].IDs = p.Viewed[i].IDs[:maxViewed]
		}
	}
	if len(p.Viewed) > maxGroups {
		p.Viewed = p.Viewed[:maxGroups]
	}
}
