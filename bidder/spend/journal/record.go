package journal

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
)

// recordVersion is the first byte of every record value.
const recordVersion = 1

// maxField bounds the campaign and user ids a record holds (bytes).
const maxField = 1 << 12

// appendRecord appends the value of a record (see the package comment) to
// buf.
func appendRecord(buf []byte, campaign string, n *spend.Notice) []byte {
	buf = append(buf, recordVersion)
	buf = binary.AppendUvarint(buf, uint64(len(campaign)))
	buf = append(buf, campaign...)
	buf = append(buf, n.Nonce[:]...)
	buf = append(buf, byte(n.Kind))
	buf = binary.AppendUvarint(buf, uint64(len(n.User)))
	buf = append(buf, n.User...)
	buf = binary.AppendVarint(buf, n.Micros)
	buf = binary.AppendVarint(buf, unixNanos(n.At))
	return binary.AppendVarint(buf, unixNanos(n.Expires))
}

// decodeRecord parses a record value into n (its Seq untouched) and
// returns the campaign. The value is outside input (a file on disk): every
// length is checked, and a value that is not exactly one record of a known
// version is an error wrapping ErrCorrupt.
func decodeRecord(v []byte, n *spend.Notice) (campaign string, err error) {
	d := decoder{b: v}
	if ver := d.byte(); d.err == nil && ver != recordVersion {
		return "", fmt.Errorf("%w: version %d", ErrCorrupt, ver)
	}
	campaign = d.field("campaign")
	copy(n.Nonce[:], d.take(len(n.Nonce), "nonce"))
	n.Kind = spend.NoticeKind(d.byte())
	n.User = d.field("user")
	n.Micros = d.varint("micros")
	n.At = fromUnixNanos(d.varint("at"))
	n.Expires = fromUnixNanos(d.varint("expires"))
	switch {
	case d.err != nil:
		return "", d.err
	case len(d.b) != 0:
		return "", fmt.Errorf("%w: %d bytes after the record", ErrCorrupt, len(d.b))
	case campaign == "":
		return "", fmt.Errorf("%w: empty campaign", ErrCorrupt)
	case n.Micros < 0:
		return "", fmt.Errorf("%w: negative micros %d", ErrCorrupt, n.Micros)
	}
	return campaign, nil
}

// unixNanos is t in unix nanoseconds, 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// decoder reads a record value; the first problem sticks in err.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or bad %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("header")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil || n < 0 || len(d.b) < n {
		d.fail(what)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) field(what string) string {
	if d.err != nil {
		return ""
	}
	l, k := binary.Uvarint(d.b)
	if k <= 0 || l > maxField {
		d.fail(what)
		return ""
	}
	d.b = d.b[k:]
	return string(d.take(int(l), what))
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[k:]
	return v
}
