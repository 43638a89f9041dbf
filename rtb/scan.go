package rtb

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

// maxDepthCap is the deepest nesting checkJSON can track (one bit per level).
const maxDepthCap = 64

// maxNumberLen bounds one JSON number token; OpenRTB numbers are short.
const maxNumberLen = 64

// strSafe[c] is true for bytes that may appear unescaped in a JSON string and
// need no further check: printable ASCII except '"' and '\\'.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipSafe returns the first index >= i at which b has a byte that is not
// strSafe, or len(b). It tests 8 bytes per step (SWAR): a byte is unsafe
// when it is < 0x20, '"', '\\' or >= 0x80.
func skipSafe(b []byte, i int) int {
	const (
		lsb = 0x0101010101010101
		msb = 0x8080808080808080
	)
	unsafe8 := func(x uint64) uint64 {
		q := x ^ (lsb * '"')
		bs := x ^ (lsb * '\\')
		// With no byte >= 0x80 (x&msb == 0), the other terms have a byte's
		// top bit set exactly when some byte is < 0x20, '"' or '\\'.
		return (x | (x - lsb*0x20) | ((q - lsb) &^ q) | ((bs - lsb) &^ bs)) & msb
	}
	// Two words per step while the string is long (adm markup is KiBs).
	for ; i+16 <= len(b); i += 16 {
		if unsafe8(binary.LittleEndian.Uint64(b[i:i+8]))|unsafe8(binary.LittleEndian.Uint64(b[i+8:i+16])) != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if unsafe8(binary.LittleEndian.Uint64(b[i:i+8])) != 0 {
			break
		}
	}
	for i < len(b) && strSafe[b[i]] {
		i++
	}
	return i
}

// skipSafeString is skipSafe on a string, without copying it.
func skipSafeString(s string, i int) int {
	return skipSafe(unsafe.Slice(unsafe.StringData(s), len(s)), i)
}

// checkJSON validates that b is exactly one JSON value (RFC 8259: grammar,
// escapes, UTF-8) within the given bounds: nesting depth (<= maxDepthCap),
// members or elements of one object or array, raw bytes of one string. It
// makes no allocation and no recursion. It returns ("", _) when b is valid,
// else a constant message and the byte offset of the problem. The decoder
// validates as it decodes (with checkValue for what it skips); checkJSON
// names the problem once it has found one.
func checkJSON(b []byte, maxDepth, maxElems, maxStr int) (string, int) {
	msg, i := checkValue(b, 0, maxDepth, maxElems, maxStr)
	if msg != "" {
		return msg, i
	}
	if i = skipWS(b, i); i != len(b) {
		return "data after the JSON value", i
	}
	return "", 0
}

// checkValue validates the one JSON value that starts at b[i] (after
// whitespace) within the bounds of checkJSON, maxDepth counting from it.
// It returns ("", the offset after the value) when the value is valid,
// else a constant message and the byte offset of the problem.
func checkValue(b []byte, i, maxDepth, maxElems, maxStr int) (string, int) {
	if maxDepth > maxDepthCap {
		maxDepth = maxDepthCap
	}
	var objBits uint64 // bit d-1 is set when the container at depth d is an object
	var counts [maxDepthCap + 1]int
	depth, n := 0, len(b)
	var msg string
	for {
		// A value starts at i.
		i = skipWS(b, i)
		if i >= n {
			return "unexpected end of JSON", i
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth >= maxDepth {
				return "JSON nested too deep", i
			}
			depth++
			bit := uint64(1) << (depth - 1)
			i = skipWS(b, i+1)
			if c == '{' {
				objBits |= bit
				if i < n && b[i] == '}' {
					i++
					depth--
					break
				}
				if i, msg = checkMember(b, i, maxStr); msg != "" {
					return msg, i
				}
			} else {
				objBits &^= bit
				if i < n && b[i] == ']' {
					i++
					depth--
					break
				}
			}
			counts[depth] = 1
			continue
		case '"':
			if i, msg = checkString(b, i, maxStr); msg != "" {
				return msg, i
			}
		case 't':
			if i, msg = checkLiteral(b, i, "true"); msg != "" {
				return msg, i
			}
		case 'f':
			if i, msg = checkLiteral(b, i, "false"); msg != "" {
				return msg, i
			}
		case 'n':
			if i, msg = checkLiteral(b, i, "null"); msg != "" {
				return msg, i
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return "invalid character in JSON", i
			}
			if i, msg = checkNumber(b, i); msg != "" {
				return msg, i
			}
		}
		// A value ended before i: close containers or go to the next element.
		for {
			if depth == 0 {
				return "", i
			}
			i = skipWS(b, i)
			if i >= n {
				return "unexpected end of JSON", i
			}
			isObj := objBits&(uint64(1)<<(depth-1)) != 0
			c := b[i]
			if c == ',' {
				counts[depth]++
				if counts[depth] > maxElems {
					return "too many elements in a JSON array or object", i
				}
				i++
				if isObj {
					if i, msg = checkMember(b, skipWS(b, i), maxStr); msg != "" {
						return msg, i
					}
				}
				break
			}
			if (isObj && c == '}') || (!isObj && c == ']') {
				i++
				depth--
				continue
			}
			return "expected ',' or a closing bracket in JSON", i
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\n', '\r', '\t':
			i++
		default:
			return i
		}
	}
	return i
}

// checkMember checks `"key" :` at i and returns the offset after the colon.
func checkMember(b []byte, i, maxStr int) (int, string) {
	if i >= len(b) || b[i] != '"' {
		return i, "expected a string key in JSON object"
	}
	i, msg := checkString(b, i, maxStr)
	if msg != "" {
		return i, msg
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, "expected ':' after a JSON object key"
	}
	return i + 1, ""
}

// checkString checks the string starting with the quote at i and returns the
// offset after the closing quote.
func checkString(b []byte, i, maxStr int) (int, string) {
	start := i
	i++
	n := len(b)
	for i < n {
		i = skipSafe(b, i)
		if i >= n {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			if i-start-1 > maxStr {
				return start, "JSON string too long"
			}
			return i + 1, ""
		case c == '\\':
			if i+1 >= n {
				return i, "unexpected end of JSON"
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n {
					return i, "unexpected end of JSON"
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, "invalid \\u escape in JSON string"
					}
				}
				i += 6
			default:
				return i, "invalid escape in JSON string"
			}
		case c < 0x20:
			return i, "control character in JSON string"
		default: // c >= 0x80
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return i, "invalid UTF-8 in JSON string"
			}
			i += size
		}
		if i-start-1 > maxStr {
			return start, "JSON string too long"
		}
	}
	return n, "unterminated JSON string"
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipDigits skips the digits at b[i:]; ok is false when there are none.
func skipDigits(b []byte, i int) (end int, ok bool) {
	d := i
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i, i > d
}

func checkLiteral(b []byte, i int, lit string) (int, string) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, "invalid literal in JSON"
	}
	return i + len(lit), ""
}

// checkNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func checkNumber(b []byte, i int) (int, string) {
	start, n := i, len(b)
	if b[i] == '-' {
		i++
	}
	switch {
	case i < n && b[i] == '0':
		i++
	case i < n && b[i] >= '1' && b[i] <= '9':
		for i < n && isDigit(b[i]) {
			i++
		}
	default:
		return i, "invalid number in JSON"
	}
	var ok bool
	if i < n && b[i] == '.' {
		if i, ok = skipDigits(b, i+1); !ok {
			return i, "invalid number in JSON"
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = skipDigits(b, i); !ok {
			return i, "invalid number in JSON"
		}
	}
	if i-start > maxNumberLen {
		return start, "JSON number too long"
	}
	return i, ""
}
