package feed

import (
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rtbd/rtbd/rtb/money"
)

// Field limits, in bytes.
const (
	maxTitleBytes       = 500
	maxDescriptionBytes = 2000
	maxURLBytes         = 2048
	maxShortTextBytes   = 200 // category, brand
	maxPixels           = 10000
	maxUnixSeconds      = 253402300799 // 9999-12-31T23:59:59Z
)

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// trimSpace trims ASCII white space from both ends of b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold reports whether b equals the lowercase ASCII string s, ignoring
// ASCII case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// parsePrice parses a price or sale_price by money's grammar (see the
// package comment), without allocating. On failure it returns a Reason and
// a constant message.
func parsePrice(b []byte) (int64, Reason, string) {
	m, err := money.Parse(b)
	switch {
	case err == nil:
		return m, "", ""
	case errors.Is(err, money.ErrNegative):
		return 0, ReasonNegativePrice, "below zero"
	case errors.Is(err, money.ErrEmpty):
		return 0, ReasonBadPrice, "empty"
	case errors.Is(err, money.ErrNoFraction):
		return 0, ReasonBadPrice, "no digits after the decimal point"
	case errors.Is(err, money.ErrTrailing):
		return 0, ReasonBadPrice, "not a plain decimal number (no exponent, sign or separators)"
	case errors.Is(err, money.ErrPrecision):
		return 0, ReasonBadPrice, "more than 6 decimal places"
	case errors.Is(err, money.ErrRange):
		return 0, ReasonBadPrice, "too large (at most 999999999999.999999)"
	}
	return 0, ReasonBadPrice, "not a decimal number"
}

// parseUint parses ASCII decimal digits. ok is false for an empty string,
// any other byte, or a value above math.MaxInt64.
func parseUint(b []byte) (v int64, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		d := int64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// parseID parses a positive int64 id.
func parseID(b []byte) (int64, Reason, string) {
	v, ok := parseUint(b)
	if !ok {
		return 0, ReasonBadNumber, "not a positive integer that fits int64"
	}
	if v == 0 {
		return 0, ReasonBadNumber, "must be > 0"
	}
	return v, "", ""
}

// parsePixels parses a width or height in 1..maxPixels.
func parsePixels(b []byte) (int32, Reason, string) {
	neg := len(b) > 1 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 {
		return 0, ReasonBadNumber, "not an integer"
	}
	for _, c := range digits {
		if !isDigit(c) {
			return 0, ReasonBadNumber, "not an integer"
		}
	}
	v, ok := parseUint(digits)
	if neg || !ok || v < 1 || v > maxPixels {
		return 0, ReasonBadSize, "must be 1..10000 pixels"
	}
	return int32(v), "", ""
}

// parseBool accepts true/false, 1/0, yes/no, in stock/out of stock,
// in_stock/out_of_stock, in any ASCII case.
func parseBool(b []byte) (v, ok bool) {
	switch len(b) {
	case 1:
		switch b[0] {
		case '1':
			return true, true
		case '0':
			return false, true
		}
	case 2:
		if equalFold(b, "no") {
			return false, true
		}
	case 3:
		if equalFold(b, "yes") {
			return true, true
		}
	case 4:
		if equalFold(b, "true") {
			return true, true
		}
	case 5:
		if equalFold(b, "false") {
			return false, true
		}
	case 8:
		if equalFold(b, "in stock") || equalFold(b, "in_stock") {
			return true, true
		}
	case 12:
		if equalFold(b, "out of stock") || equalFold(b, "out_of_stock") {
			return false, true
		}
	}
	return false, false
}

// parseTime accepts unix seconds or RFC 3339 and returns unix seconds.
func parseTime(b []byte) (int64, Reason, string) {
	if len(b) > 0 && len(b) <= 12 && isDigit(b[0]) && (len(b) < 5 || b[4] != '-') {
		v, ok := parseUint(b)
		if !ok || v > maxUnixSeconds {
			return 0, ReasonBadTime, "not unix seconds (0 .. 253402300799) or RFC 3339"
		}
		return v, "", ""
	}
	t, ok := parseRFC3339(b)
	if !ok || t < 0 || t > maxUnixSeconds {
		return 0, ReasonBadTime, "not unix seconds or RFC 3339 (2025-01-31T09:00:00Z) from 1970 to 9999"
	}
	return t, "", ""
}

// digits2 parses exactly two digits at b[i:].
func digitsN(b []byte, i, n int) (int, bool) {
	if i+n > len(b) {
		return 0, false
	}
	v := 0
	for _, c := range b[i : i+n] {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parseRFC3339 parses YYYY-MM-DD(T|t| )HH:MM:SS(.frac)?(Z|z|+HH:MM|-HH:MM)
// into unix seconds, without allocating.
func parseRFC3339(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	if c := b[10]; c != 'T' && c != 't' && c != ' ' {
		return 0, false
	}
	year, ok1 := digitsN(b, 0, 4)
	month, ok2 := digitsN(b, 5, 2)
	day, ok3 := digitsN(b, 8, 2)
	hour, ok4 := digitsN(b, 11, 2)
	minute, ok5 := digitsN(b, 14, 2)
	sec, ok6 := digitsN(b, 17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	i := 19
	if b[i] == '.' {
		i++
		start := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == start || i-start > 9 {
			return 0, false
		}
	}
	if i >= len(b) {
		return 0, false
	}
	var off int
	switch b[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		oh, ok1 := digitsN(b, i+1, 2)
		om, ok2 := digitsN(b, i+4, 2)
		if !ok1 || !ok2 || b[i+3] != ':' || oh > 23 || om > 59 {
			return 0, false
		}
		off = oh*3600 + om*60
		if b[i] == '-' {
			off = -off
		}
		i += 6
	default:
		return 0, false
	}
	if i != len(b) {
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC).Unix()
	return t - int64(off), true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// asciiClean8 reports whether the 8 bytes in x are all printable ASCII
// (0x20..0x7e), testing them at once (SWAR).
func asciiClean8(x uint64) bool {
	const hi, ones = 0x8080808080808080, 0x0101010101010101
	if x&hi != 0 { // a byte >= 0x80
		return false
	}
	if (x-0x20*ones)&^x&hi != 0 { // a byte < 0x20
		return false
	}
	y := x ^ 0x7f*ones // a byte == 0x7f becomes 0
	return (y-ones)&^y&hi == 0
}

// checkText checks a text field: length, UTF-8, control characters. Tabs
// and line breaks are allowed when multiline is set.
func checkText(b []byte, max int, multiline bool) (Reason, string) {
	if len(b) > max {
		return ReasonFieldTooLong, "longer than " + strconv.Itoa(max) + " bytes"
	}
	for i := 0; i < len(b); {
		for i+8 <= len(b) && asciiClean8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				if multiline && (c == '\t' || c == '\n' || c == '\r') {
					i++
					continue
				}
				return ReasonBadUTF8, "control character"
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return ReasonBadUTF8, "invalid UTF-8"
		}
		if r <= 0x9f {
			return ReasonBadUTF8, "control character"
		}
		i += size
	}
	return "", ""
}

// urlPlain is a bitmap of the ASCII bytes allowed as-is in a URL's path,
// query and fragment: 0x21..0x7e except " < > \ ` and % (which needs its
// own check). Bit c of urlPlain[c>>6].
var urlPlain = func() (m [2]uint64) {
	for c := 0x21; c < 0x7f; c++ {
		switch c {
		case '"', '<', '>', '\\', '`', '%':
			continue
		}
		m[c>>6] |= 1 << (c & 63)
	}
	return m
}()

// urlForbidden marks ASCII bytes that may not appear in a feed URL.
func urlForbidden(c byte) bool {
	return c <= ' ' || c == 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '`'
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// checkURL checks an absolute http(s) URL (rules in the package comment).
func checkURL(b []byte) (Reason, string) {
	if len(b) > maxURLBytes {
		return ReasonFieldTooLong, "longer than 2048 bytes"
	}
	var rest []byte
	switch {
	case len(b) >= 7 && equalFold(b[:7], "http://"):
		rest = b[7:]
	case len(b) >= 8 && equalFold(b[:8], "https://"):
		rest = b[8:]
	default:
		return ReasonBadURL, "not an absolute http:// or https:// URL"
	}
	// Authority: up to the first / ? #.
	n := 0
	for n < len(rest) && rest[n] != '/' && rest[n] != '?' && rest[n] != '#' {
		n++
	}
	if !checkHost(rest[:n]) {
		return ReasonBadURL, "bad or empty host"
	}
	// Path, query, fragment.
	tail := rest[n:]
	for i := 0; i < len(tail); {
		c := tail[i]
		if c < utf8.RuneSelf && urlPlain[c>>6]&(1<<(c&63)) != 0 {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if urlForbidden(c) {
				return ReasonBadURL, "space, control character or one of \" < > \\ `"
			}
			if c == '%' && (i+2 >= len(tail) || !isHex(tail[i+1]) || !isHex(tail[i+2])) {
				return ReasonBadURL, "% not followed by two hex digits"
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(tail[i:])
		if (r == utf8.RuneError && size == 1) || r <= 0x9f {
			return ReasonBadURL, "invalid UTF-8 or control character"
		}
		i += size
	}
	return "", ""
}

// checkHost checks host[:port]: a non-empty reg-name (letters, digits, - . _
// and non-ASCII UTF-8) or a [v6] literal, then an optional numeric port.
func checkHost(h []byte) bool {
	if len(h) == 0 {
		return false
	}
	i := 0
	if h[0] == '[' {
		i = 1
		for i < len(h) && (isHex(h[i]) || h[i] == ':' || h[i] == '.') {
			i++
		}
		if i == 1 || i >= len(h) || h[i] != ']' {
			return false
		}
		if a, err := netip.ParseAddr(string(h[1:i])); err != nil || !a.Is6() {
			return false
		}
		i++
	} else {
		for i < len(h) && h[i] != ':' {
			c := h[i]
			if c >= utf8.RuneSelf {
				r, size := utf8.DecodeRune(h[i:])
				if (r == utf8.RuneError && size == 1) || r <= 0x9f {
					return false
				}
				i += size
				continue
			}
			if !(isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '-' || c == '.' || c == '_') {
				return false
			}
			i++
		}
		if i == 0 {
			return false
		}
	}
	if i == len(h) {
		return true
	}
	if h[i] != ':' {
		return false
	}
	port := h[i+1:]
	if len(port) > 5 {
		return false
	}
	for _, c := range port {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// cutUTF8 returns b cut to at most n bytes, backing off to a rune boundary.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	if n <= 0 {
		return nil
	}
	c := n
	for c > 0 && c > n-utf8.UTFMax && !utf8.RuneStart(b[c]) {
		c--
	}
	if c == 0 || !utf8.RuneStart(b[c]) {
		c = n
	}
	return b[:c]
}
