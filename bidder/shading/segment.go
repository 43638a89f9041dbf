package shading

// SegmentID names a segment of the bid landscape in 32 bits, so a notice
// token can carry it: bits 26-31 the exchange (its index in the bidder's
// exchange list, 0 to 63), bits 10-25 a hash of the publisher (site or app
// publisher id, else the domain or bundle; 0 when there is none or the
// segment spans all publishers), bits 0-9 a hash of the format and size (0:
// all formats). The coarser segments of an id are the id with the lower
// fields zeroed, so any bidder of a fleet with the same exchange list can
// attribute a notice to every level from the token alone. Two publishers
// whose hashes collide share their statistics (with 65,535 hash values, a
// few pairs among a thousand publishers of one exchange).
type SegmentID uint32

// Levels of a segment, coarsest first.
const (
	LevelExchange  = 0 // exchange
	LevelPublisher = 1 // exchange x publisher
	LevelFormat    = 2 // exchange x publisher x format and size
	NumLevels      = 3
)

const (
	pubShift   = 10
	pubMask    = 0xFFFF << pubShift
	fmtMask    = 0x3FF
	exchShift  = 26
	maxExchIdx = 63
)

// fnv1a hashes s (deterministic across processes, no allocation).
func fnv1a(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

const fnvOffset = 2166136261

// Format is a bid's kind of ad for its segment: banner, native or video.
type Format uint8

// Values of Format.
const (
	FormatBanner Format = iota + 1
	FormatNative
	FormatVideo
)

// Segment returns the finest segment of a bid: exchange index x (clamped
// to 0-63), publisher (site or app publisher id, else domain or bundle;
// "" for none) and format f of size w x h.
func Segment(exchange int, publisher string, f Format, w, h int64) SegmentID {
	x := uint32(min(max(exchange, 0), maxExchIdx))
	var p uint32
	if publisher != "" {
		p = fnv1a(fnvOffset, publisher)
		p = (p ^ p>>16) & 0xFFFF
		if p == 0 {
			p = 1
		}
	}
	fh := uint32(fnvOffset)
	fh = (fh ^ uint32(f)) * 16777619
	fh = (fh ^ uint32(w) ^ uint32(w>>32)<<7) * 16777619
	fh = (fh ^ uint32(h) ^ uint32(h>>32)<<7) * 16777619
	fh = (fh ^ fh>>10 ^ fh>>20) & fmtMask
	if fh == 0 {
		fh = 1
	}
	return SegmentID(x<<exchShift | p<<pubShift | fh)
}

// At returns the segment of id at level (LevelExchange, LevelPublisher,
// LevelFormat).
func (id SegmentID) At(level int) SegmentID {
	switch level {
	case LevelExchange:
		return id &^ (pubMask | fmtMask)
	case LevelPublisher:
		return id &^ fmtMask
	}
	return id
}

// Level is the level of id: the finest whose field is set.
func (id SegmentID) Level() int {
	switch {
	case id&fmtMask != 0:
		return LevelFormat
	case id&pubMask != 0:
		return LevelPublisher
	}
	return LevelExchange
}

// Exchange is the exchange index of id.
func (id SegmentID) Exchange() int { return int(id >> exchShift) }
