package rtb

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// The bid request decoder: OpenRTB's types (github.com/prebid/openrtb/v20)
// decoded by code generated from them (jsondec_gen.go, written by
// internal/decgen: `make generate`), on the small runtime below. It replaced
// goccy/go-json in DecodeRequest when BenchmarkCodecs showed the library to
// be the bidder's largest single cost (see codec_bench_test.go).
//
// Semantics are encoding/json's, checked by FuzzDecodeRequest:
// keys match exactly, else case-insensitively (bytes.EqualFold); unknown
// keys are skipped; null leaves a value alone and sets a pointer, slice or
// RawMessage to nil or `null`; a duplicate key decodes again into what is
// there (pointers and slice elements are reused, as encoding/json does);
// integers must be integral and in range; \u escapes with invalid
// surrogates become U+FFFD. It differs in one way: it stops at the first
// type mismatch, where encoding/json goes on and returns the first one at
// the end (DecodeRequest discards the request on either).
//
// It validates as it decodes, in the same pass: the body must be exactly one
// JSON value (RFC 8259: grammar, escapes, UTF-8) within the Limits (depth,
// elements of one array or object, raw bytes of one string, number length),
// as checkJSON checks it; values it does not decode are skipped with
// checkValue. On any problem it returns errSyntax, and DecodeRequest runs
// checkJSON to name it. It never panics or loops, whatever the input.

// decoder reads one JSON document from buf, a private copy of the request
// body: strings and RawMessages point into buf (escaped strings are
// unescaped in place, which only ever shortens them).
type decoder struct {
	buf []byte
	i   int
	key []byte // the member key read by first/next (unescaped; points into buf)
	err error

	// Limits, as in Limits: maxDepth <= maxDepthCap.
	maxDepth, maxElems, maxStr int
	depth                      int                    // objects and arrays open at i
	counts                     [maxDepthCap + 1]int32 // members or elements so far, by depth

	exts    *Exts // filled by the ext hooks (exts.go) when not nil
	copyEsc bool  // unescape strings into memory of their own, leaving buf as it is
}

// typeError is the decoder's error for a JSON value that does not fit its
// Go field: Struct and Field are Go names ("Banner", "W").
type typeError struct {
	Struct, Field string
}

func (e *typeError) Error() string {
	return "rtb: JSON value does not fit " + e.Struct + "." + e.Field
}

// errSyntax is the decoder's error for input that is not JSON within the
// limits (checkJSON names the problem).
var errSyntax = errors.New("rtb: JSON syntax error")

// decodeBidRequest decodes body into *v and, when not nil, *exts (which
// the caller has reset).
func decodeBidRequest(body []byte, v *openrtb2.BidRequest, exts *Exts, lim *Limits) error {
	d := decoders.Get().(*decoder)
	d.buf, d.i, d.key, d.err = append([]byte(nil), body...), 0, nil, nil
	d.exts, d.copyEsc = exts, false
	d.maxDepth, d.maxElems, d.maxStr, d.depth = min(lim.MaxDepth, maxDepthCap), lim.MaxElements, lim.MaxStringBytes, 0
	if !decBidRequest(d, v) {
		d.fail(&typeError{Struct: "BidRequest", Field: ""})
	}
	if d.err == nil {
		if d.ws(); d.i != len(d.buf) {
			d.err = errSyntax
		}
	}
	err := d.err
	d.buf, d.key, d.err, d.exts = nil, nil, nil, nil // the request owns buf
	decoders.Put(d)
	return err
}

// decoders are reused decoders: one escapes to the heap (the generated
// code passes it through function values), and its counts make it a few
// hundred bytes.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// fail records the first error.
func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// typeErr records a mismatch of the value of Go field s.f.
func (d *decoder) typeErr(s, f string) { d.fail(&typeError{Struct: s, Field: f}) }

// ws skips whitespace and returns the next byte, 0 at the end.
func (d *decoder) ws() byte {
	if d.i < len(d.buf) && d.buf[d.i] > ' ' {
		return d.buf[d.i]
	}
	return d.wsSlow()
}

func (d *decoder) wsSlow() byte {
	for d.i < len(d.buf) {
		switch c := d.buf[d.i]; c {
		case ' ', '\n', '\r', '\t':
			d.i++
		default:
			return c
		}
	}
	return 0
}

// Value kinds that open reports.
const (
	openObject = iota
	openNull
	openOther
)

// open starts a struct's value: it consumes '{' (openObject) or null
// (openNull); anything else is left for the caller to report (openOther).
func (d *decoder) open() int {
	switch d.ws() {
	case '{':
		d.i++
		d.enter()
		return openObject
	case 'n':
		d.literal("null")
		return openNull
	}
	return openOther
}

// enter counts an object or array whose bracket was just consumed: one
// level deeper (within maxDepth), no member or element yet.
func (d *decoder) enter() {
	if d.depth >= d.maxDepth {
		d.fail(errSyntax)
		d.i = len(d.buf) // no further reading
		return
	}
	d.depth++
	d.counts[d.depth] = 0
}

// count counts one more member or element of the innermost container
// (within maxElems); false past the bound.
func (d *decoder) count() bool {
	d.counts[d.depth]++
	if int(d.counts[d.depth]) > d.maxElems {
		d.fail(errSyntax)
		return false
	}
	return true
}

// first reads the first member key of an object whose '{' was consumed
// (and entered); false at '}' (or an error).
func (d *decoder) first() bool {
	if d.err != nil {
		return false
	}
	if d.ws() == '}' {
		d.i++
		d.depth--
		return false
	}
	return d.count() && d.readKey()
}

// next reads the next member key; false at '}' (or an error).
func (d *decoder) next() bool {
	if d.err != nil {
		return false
	}
	switch d.ws() {
	case ',':
		d.i++
		d.ws()
		return d.count() && d.readKey()
	case '}':
		d.i++
		d.depth--
		return false
	}
	d.fail(errSyntax)
	return false
}

// readKey reads `"key" :` into d.key.
func (d *decoder) readKey() bool {
	if d.i >= len(d.buf) || d.buf[d.i] != '"' {
		d.fail(errSyntax)
		return false
	}
	k, ok := d.readString()
	if !ok {
		return false
	}
	if d.ws() != ':' {
		d.fail(errSyntax)
		return false
	}
	d.i++
	d.key = k
	return true
}

// foldKey reports whether k may match a field name only by case folding:
// it has an upper-case ASCII letter or a non-ASCII byte (the field names
// are lower-case ASCII, so any other key matches exactly or not at all).
func foldKey(k []byte) bool {
	for _, c := range k {
		if c >= 0x80 || (c >= 'A' && c <= 'Z') {
			return true
		}
	}
	return false
}

// foldField returns the index in names of the first name equal to k under
// Unicode case folding (as encoding/json matches keys), or -1.
func foldField(k []byte, names []string) int {
	if !foldKey(k) {
		return -1
	}
	for i, n := range names {
		if bytes.EqualFold(k, unsafe.Slice(unsafe.StringData(n), len(n))) {
			return i
		}
	}
	return -1
}

// literal consumes lit (null, true, false) at d.i.
func (d *decoder) literal(lit string) {
	if len(d.buf)-d.i >= len(lit) && string(d.buf[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return
	}
	d.fail(errSyntax)
}

// null consumes a null and reports whether there was one.
func (d *decoder) null() bool {
	if d.ws() == 'n' {
		d.literal("null")
		return true
	}
	return false
}

// readString reads the string whose quote is at d.i, unescaping it in
// place; the result points into buf.
func (d *decoder) readString() ([]byte, bool) {
	b := d.buf
	start := d.i + 1
	j := start
	for {
		j = skipSafe(b, j)
		if j >= len(b) {
			d.fail(errSyntax)
			return nil, false
		}
		switch c := b[j]; {
		case c == '"':
			if j-start > d.maxStr {
				d.fail(errSyntax)
				return nil, false
			}
			d.i = j + 1
			return b[start:j:j], true
		case c == '\\':
			if d.copyEsc {
				return d.unescapeCopy(start)
			}
			return d.unescape(start, j)
		case c < 0x20:
			d.fail(errSyntax)
			return nil, false
		default: // c >= 0x80: UTF-8
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size <= 1 {
				d.fail(errSyntax)
				return nil, false
			}
			j += size
		}
	}
}

// unescape finishes readString from the first backslash at r, writing the
// unescaped bytes over the escaped ones.
func (d *decoder) unescape(start, r int) ([]byte, bool) {
	b := d.buf
	w := r
	for r < len(b) {
		c := b[r]
		switch {
		case c == '"':
			if r-start > d.maxStr {
				d.fail(errSyntax)
				return nil, false
			}
			d.i = r + 1
			return b[start:w:w], true
		case c < 0x20:
			d.fail(errSyntax)
			return nil, false
		case c >= 0x80:
			rr, size := utf8.DecodeRune(b[r:])
			if rr == utf8.RuneError && size <= 1 {
				d.fail(errSyntax)
				return nil, false
			}
			w += copy(b[w:], b[r:r+size])
			r += size
			continue
		case c != '\\':
			b[w] = c
			w++
			r++
			continue
		}
		if r+1 >= len(b) {
			break
		}
		switch e := b[r+1]; e {
		case '"', '\\', '/':
			b[w] = e
		case 'b':
			b[w] = '\b'
		case 'f':
			b[w] = '\f'
		case 'n':
			b[w] = '\n'
		case 'r':
			b[w] = '\r'
		case 't':
			b[w] = '\t'
		case 'u':
			rr := hex4(b, r+2)
			if rr < 0 {
				d.fail(errSyntax)
				return nil, false
			}
			r += 6
			if utf16.IsSurrogate(rr) {
				rr1 := rune(-1)
				if r+1 < len(b) && b[r] == '\\' && b[r+1] == 'u' {
					rr1 = hex4(b, r+2)
				}
				if dec := utf16.DecodeRune(rr, rr1); dec != utf8.RuneError {
					r += 6
					w += utf8.EncodeRune(b[w:], dec)
					continue
				}
				rr = utf8.RuneError
			}
			w += utf8.EncodeRune(b[w:], rr) // at most 3 bytes for the 6 read
			continue
		default:
			d.fail(errSyntax)
			return nil, false
		}
		w++
		r += 2
	}
	d.fail(errSyntax)
	return nil, false
}

// unescapeCopy finishes readString for the string whose content starts at
// start, unescaping a copy of it: buf is left as it is.
func (d *decoder) unescapeCopy(start int) ([]byte, bool) {
	d.i = start - 1
	if !d.skipString() {
		return nil, false
	}
	c := decoder{buf: append([]byte(nil), d.buf[start-1:d.i]...), maxStr: d.maxStr}
	s, ok := c.readString()
	if !ok {
		d.fail(c.err)
	}
	return s, ok
}

// hex4 is the value of the 4 hex digits at b[i:], or -1.
func hex4(b []byte, i int) rune {
	if i+4 > len(b) {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// skip skips one value, nested ones included, validating it (checkValue,
// within the limits left at this depth).
func (d *decoder) skip() {
	d.ws()
	msg, end := checkValue(d.buf, d.i, d.maxDepth-d.depth, d.maxElems, d.maxStr)
	if msg != "" {
		d.fail(errSyntax)
		d.i = len(d.buf)
		return
	}
	d.i = end
}

// isDelim reports whether c ends a literal or a number.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\n', '\r', '\t', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

// skipString skips the string whose quote is at d.i, without unescaping.
func (d *decoder) skipString() bool {
	b := d.buf
	j := d.i + 1
	for {
		j = skipSafe(b, j)
		if j >= len(b) {
			d.fail(errSyntax)
			return false
		}
		switch c := b[j]; {
		case c == '"':
			d.i = j + 1
			return true
		case c == '\\':
			j += 2
		default:
			j++
		}
	}
}

// number consumes the JSON number at d.i, which starts with '-' or a
// digit (checkNumber: its grammar and length). On a bad one it fails and
// returns the rest of buf, so that the result is never empty.
func (d *decoder) number() []byte {
	start := d.i
	end, msg := checkNumber(d.buf, start)
	if msg != "" {
		d.fail(errSyntax)
		d.i = len(d.buf)
		return d.buf[start:]
	}
	d.i = end
	return d.buf[start:end]
}

// str decodes a string (null: no change); false for another JSON type.
func (d *decoder) str(p *string) bool {
	switch d.ws() {
	case '"':
		if s, ok := d.readString(); ok && len(s) > 0 {
			*p = unsafe.String(&s[0], len(s))
		} else if ok {
			*p = ""
		}
		return true
	case 'n':
		d.literal("null")
		return true
	}
	return false
}

// float decodes a float64 (null: no change); false for another JSON type
// or a number out of range.
func (d *decoder) float(p *float64) bool {
	switch c := d.ws(); {
	case c == 'n':
		d.literal("null")
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		lit := d.number()
		f, err := strconv.ParseFloat(unsafe.String(&lit[0], len(lit)), 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && ne.Err == strconv.ErrSyntax {
				d.fail(errSyntax)
				return true
			}
			return false
		}
		*p = f
		return true
	}
	return false
}

// integer decodes an integer of bits bits (null: ok, no value); false for
// another JSON type, a fraction or exponent, or a value out of range.
func (d *decoder) integer(bits uint) (n int64, set, ok bool) {
	switch c := d.ws(); {
	case c == 'n':
		d.literal("null")
		return 0, false, true
	case c == '-' || (c >= '0' && c <= '9'):
	default:
		return 0, false, false
	}
	lit := d.number()
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) == 0 {
		d.fail(errSyntax)
		return 0, false, true
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			// A fraction or an exponent: encoding/json rejects it for an
			// integer field, whatever its value (1.0, 1e2).
			return 0, false, false
		}
		if u > (1<<63)/10 {
			return 0, false, false
		}
		u = u*10 + uint64(c-'0')
	}
	limit := uint64(1)<<(bits-1) - 1 // max positive
	if neg {
		limit++
	}
	if u > limit {
		return 0, false, false
	}
	if neg {
		return -int64(u), true, true
	}
	return int64(u), true, true
}

// raw decodes a RawMessage: the value's bytes (null included, as
// encoding/json keeps it), pointing into buf.
func (d *decoder) raw(p *json.RawMessage) bool {
	d.ws()
	start := d.i
	d.skip()
	if d.err == nil {
		*p = d.buf[start:d.i:d.i]
	}
	return true
}

// The generic helpers the generated code calls.

type integers interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64
}

// decInt decodes an integer field of any size.
func decInt[T integers](d *decoder, p *T) bool {
	n, set, ok := d.integer(uint(unsafe.Sizeof(*p)) * 8)
	if set {
		*p = T(n)
	}
	return ok
}

// decFloat decodes a float64 field.
func decFloat(d *decoder, p *float64) bool { return d.float(p) }

// decString decodes a string field.
func decString(d *decoder, p *string) bool { return d.str(p) }

// decPtr decodes into *p, allocating it if nil; null sets it to nil.
func decPtr[T any](d *decoder, p **T, dec func(*decoder, *T) bool) bool {
	if d.null() {
		*p = nil
		return true
	}
	if *p == nil {
		*p = new(T)
	}
	return dec(d, *p)
}

// decSlice decodes an array into *p as encoding/json does: null sets nil,
// [] an empty slice; elements decode into the slice's existing ones (its
// backing array is reused), and it is cut to the array's length.
func decSlice[T any](d *decoder, p *[]T, dec func(*decoder, *T) bool) bool {
	switch d.ws() {
	case 'n':
		d.literal("null")
		*p = nil
		return true
	case '[':
		d.i++
		if d.enter(); d.err != nil {
			return true
		}
	default:
		return false
	}
	s := *p
	if d.ws() == ']' {
		d.i++
		d.depth--
		if s == nil {
			s = []T{}
		}
		*p = s[:0]
		return true
	}
	i := 0
	for {
		if !d.count() {
			*p = s
			return true
		}
		if i >= cap(s) {
			var zero T
			s = append(s[:cap(s)], zero)
		}
		if i >= len(s) {
			s = s[:i+1]
		}
		if !dec(d, &s[i]) {
			*p = s
			return false
		}
		i++
		if d.err != nil {
			*p = s
			return true
		}
		switch d.ws() {
		case ',':
			d.i++
			continue
		case ']':
			d.i++
			d.depth--
			*p = s[:i]
			return true
		}
		d.fail(errSyntax)
		*p = s
		return true
	}
}
