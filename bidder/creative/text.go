package creative

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/rtbd/rtbd/bidder/internal/ascii"
	"github.com/rtbd/rtbd/rtb/money"
)

// appendHTML appends s escaped for HTML text and quoted attribute values:
// & < > " ' as html.EscapeString escapes them, NUL and invalid UTF-8 as
// U+FFFD; and, so that the result is JSON-safe (see JSONSafe), the other
// control characters, '\\', U+2028 and U+2029 as numeric character
// references (&#9; &#92; &#8232;: the same characters to an HTML parser).
// It makes no allocation beyond growing dst.
func appendHTML(dst []byte, s string) []byte { return appendEscaped(dst, s, &htmlEscapes) }

// appendXML appends s escaped for XML text and attributes (the same five
// entities as appendHTML; control characters other than tab, CR and LF,
// which XML 1.0 forbids, and invalid UTF-8 become U+FFFD).
func appendXML(dst []byte, s string) []byte { return appendEscaped(dst, s, &xmlEscapes) }

// htmlEscapes and xmlEscapes give the replacement of each ASCII byte ("":
// kept as it is).
var htmlEscapes, xmlEscapes = func() (h, x [utf8.RuneSelf]string) {
	for _, e := range [...]struct {
		c   byte
		esc string
	}{{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&#34;"}, {'\'', "&#39;"}} {
		h[e.c], x[e.c] = e.esc, e.esc
	}
	h[0] = "\uFFFD"
	h['\\'] = "&#92;"
	for c := 1; c < 0x20; c++ {
		h[c] = "&#" + strconv.Itoa(c) + ";"
	}
	for c := 0; c < 0x20; c++ {
		if c != '\t' && c != '\n' && c != '\r' {
			x[c] = "\uFFFD"
		}
	}
	return h, x
}()

// appendEscaped appends s with each ASCII byte that esc maps replaced and
// invalid UTF-8 replaced by U+FFFD. Runs of 8 bytes that need nothing
// (printable ASCII other than & < > " ') are skipped 8 at a time.
func appendEscaped(dst []byte, s string, esc *[utf8.RuneSelf]string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlain(s, i); i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if e := esc[c]; e != "" {
				dst = append(dst, s[start:i]...)
				dst = append(dst, e...)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			start = i + 1
		case (r == '\u2028' || r == '\u2029') && esc == &htmlEscapes:
			// Line and paragraph separators: JSON allows them raw, but
			// rtb escapes them (JavaScript string literals did not).
			dst = append(dst, s[start:i]...)
			dst = append(dst, "&#823"...)
			dst = append(dst, byte('2'+r-'\u2028'), ';')
			start = i + size
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// IsHTTPSURL reports whether u is an IsHTTPURL with the https scheme (in
// any case): the only URLs a creative on a secure imp loads.
func IsHTTPSURL(u string) bool {
	return len(u) > 8 && ascii.EqualLower(u[:8], "https://") && IsHTTPURL(u)
}

// PlainHTTP reports whether u is an IsHTTPURL with the http scheme: a URL
// a creative on a secure imp must not load.
func PlainHTTP(u string) bool {
	return len(u) > 7 && ascii.EqualLower(u[:7], "http://") && IsHTTPURL(u)
}

// IsHTTPURL reports whether u is an absolute http or https URL (scheme in
// any case) with a host and without whitespace or control characters: the
// only URLs a creative links to or loads.
func IsHTTPURL(u string) bool {
	var rest string
	switch {
	case len(u) > 8 && u[:8] == "https://": // the usual spelling, compared at once
		rest = u[8:]
	case len(u) > 7 && ascii.EqualLower(u[:7], "http://"):
		rest = u[7:]
	case len(u) > 8 && ascii.EqualLower(u[:8], "https://"):
		rest = u[8:]
	default:
		return false
	}
	if rest == "" || rest[0] == '/' || rest[0] == '?' || rest[0] == '#' {
		return false
	}
	i := 0
	for ; i+8 <= len(u); i += 8 {
		x := load8(u, i)
		if hasLess(x, '!')|hasZero(x^(lsb*0x7f)) != 0 {
			return false
		}
	}
	for ; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// SWAR helpers: 8 bytes of a string as one word, tested all at once.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load8 returns s[i:i+8] as a little-endian word (one load).
func load8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s), len(s))[i:])
}

// hasZero is non-zero exactly when some byte of x is 0.
func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }

// hasLess is non-zero exactly when some byte of x is < n (n <= 128).
func hasLess(x uint64, n byte) uint64 { return (x - lsb*uint64(n)) &^ x & msb }

// skipPlain returns the first index >= i from which the next 8 bytes of s
// are not all plain (or fewer than 8 remain): printable ASCII other than
// & < > " ' \\, a run that appendHTML and appendXML copy as it is. The
// byte tests of a word share one mask (see hasZero and hasLess).
func skipPlain(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		q, a, p, l, g, b := x^(lsb*'"'), x^(lsb*'&'), x^(lsb*'\''), x^(lsb*'<'), x^(lsb*'>'), x^(lsb*'\\')
		t := x | (x-lsb*' ')&^x | (q-lsb)&^q | (a-lsb)&^a | (p-lsb)&^p | (l-lsb)&^l | (g-lsb)&^g | (b-lsb)&^b
		if t&msb != 0 {
			break
		}
	}
	return i
}

// AppendPrice appends a price for display in markup (money.AppendDisplay):
// micros of currency with the currency's symbol and usual decimals and
// thousands separators: ("JPY", 1980000000) -> "¥1,980"; ("USD", 12500000)
// -> "$12.50"; ("CHF", 9900000) -> "9.90 CHF". Rounded half up to the shown
// decimals. A currency that is not an ISO 4217 code is HTML-escaped.
func AppendPrice(dst []byte, micros int64, currency string) []byte {
	if currency == "" || money.IsCode(currency) {
		return money.AppendDisplay(dst, micros, currency)
	}
	dst = money.AppendDisplay(dst, micros, "")
	dst = append(dst, ' ')
	return appendHTML(dst, currency)
}

// truncateRunes returns s cut to at most n runes (n <= 0: unchanged),
// never inside a UTF-8 sequence.
func truncateRunes(s string, n int64) string {
	if n <= 0 {
		return s
	}
	var count int64
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}
