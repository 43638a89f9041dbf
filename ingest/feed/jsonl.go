package feed

import (
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth is encoding/json's nesting limit, kept the same so that a line
// is valid here exactly when json.Valid says so.
const maxJSONDepth = 10000

// msgJSONEOF marks a syntax error caused by the end of the line.
const msgJSONEOF = "unexpected end of line"

// jsonParser parses one JSON Lines object into field values without
// allocating in steady state. Values point into the line or into buf.
type jsonParser struct {
	buf  []byte // unescaped string values of the current line
	kbuf []byte // unescaped key
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && isJSONSpace(b[i]) {
		i++
	}
	return i
}

// parse parses line as one JSON object, setting vals for known keys (last
// one wins). It returns "" on success, else a message (msgJSONEOF when the
// line ended too early).
func (p *jsonParser) parse(line []byte, vals *[numFields]value) string {
	p.buf = p.buf[:0]
	n := len(line)
	i := skipJSONSpace(line, 0)
	if i == n {
		return msgJSONEOF
	}
	if line[i] != '{' {
		return "not a JSON object"
	}
	i = skipJSONSpace(line, i+1)
	if i < n && line[i] == '}' {
		i++
	} else {
		for {
			if i >= n {
				return msgJSONEOF
			}
			if line[i] != '"' {
				return "want a string key"
			}
			p.kbuf = p.kbuf[:0]
			key, j, msg := p.str(line, i, &p.kbuf)
			if msg != "" {
				return msg
			}
			i = skipJSONSpace(line, j)
			if i >= n {
				return msgJSONEOF
			}
			if line[i] != ':' {
				return "want ':' after key"
			}
			i = skipJSONSpace(line, i+1)
			if f := lookupField(key); f >= 0 {
				var v value
				v, i, msg = p.value(line, i)
				if msg != "" {
					return msg
				}
				vals[f] = v
			} else {
				i, msg = p.skip(line, i, 1)
				if msg != "" {
					return msg
				}
			}
			i = skipJSONSpace(line, i)
			if i >= n {
				return msgJSONEOF
			}
			if line[i] == ',' {
				i = skipJSONSpace(line, i+1)
				continue
			}
			if line[i] == '}' {
				i++
				break
			}
			return "want ',' or '}'"
		}
	}
	if skipJSONSpace(line, i) != n {
		return "data after the object"
	}
	return ""
}

// value parses the value at line[i] for a known key.
func (p *jsonParser) value(line []byte, i int) (value, int, string) {
	if i >= len(line) {
		return value{}, i, msgJSONEOF
	}
	switch c := line[i]; {
	case c == '"':
		s, j, msg := p.str(line, i, &p.buf)
		return value{b: s, k: kString}, j, msg
	case c == '-' || isDigit(c):
		j, msg := number(line, i)
		return value{b: line[i:j:j], k: kNumber}, j, msg
	case c == 't' || c == 'f':
		j, msg := literal(line, i)
		return value{b: line[i:j:j], k: kBool}, j, msg
	case c == 'n':
		j, msg := literal(line, i)
		return value{k: kNull}, j, msg
	case c == '{' || c == '[':
		j, msg := p.skip(line, i, 1)
		return value{b: line[i:j:j], k: kComposite}, j, msg
	}
	return value{}, i, "invalid value"
}

// skip validates and skips the value at line[i]; depth counts the enclosing
// objects and arrays.
func (p *jsonParser) skip(line []byte, i, depth int) (int, string) {
	n := len(line)
	if i >= n {
		return i, msgJSONEOF
	}
	switch c := line[i]; {
	case c == '"':
		return skipString(line, i)
	case c == '-' || isDigit(c):
		return number(line, i)
	case c == 't' || c == 'f' || c == 'n':
		return literal(line, i)
	case c == '{' || c == '[':
		depth++
		if depth > maxJSONDepth {
			return i, "nested too deeply"
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipJSONSpace(line, i+1)
		if i < n && line[i] == closer {
			return i + 1, ""
		}
		for {
			var msg string
			if c == '{' {
				if i >= n {
					return i, msgJSONEOF
				}
				if line[i] != '"' {
					return i, "want a string key"
				}
				if i, msg = skipString(line, i); msg != "" {
					return i, msg
				}
				i = skipJSONSpace(line, i)
				if i >= n {
					return i, msgJSONEOF
				}
				if line[i] != ':' {
					return i, "want ':' after key"
				}
				i = skipJSONSpace(line, i+1)
			}
			if i, msg = p.skip(line, i, depth); msg != "" {
				return i, msg
			}
			i = skipJSONSpace(line, i)
			if i >= n {
				return i, msgJSONEOF
			}
			if line[i] == ',' {
				i = skipJSONSpace(line, i+1)
				continue
			}
			if line[i] == closer {
				return i + 1, ""
			}
			return i, "want ',' or a closing bracket"
		}
	}
	return i, "invalid value"
}

// literal checks true / false / null at line[i].
func literal(line []byte, i int) (int, string) {
	var want string
	switch line[i] {
	case 't':
		want = "true"
	case 'f':
		want = "false"
	default:
		want = "null"
	}
	for k := 0; k < len(want); k++ {
		if i+k >= len(line) {
			return i + k, msgJSONEOF
		}
		if line[i+k] != want[k] {
			return i + k, "invalid literal"
		}
	}
	return i + len(want), ""
}

// number checks a JSON number at line[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(line []byte, i int) (int, string) {
	n := len(line)
	if line[i] == '-' {
		i++
		if i >= n {
			return i, msgJSONEOF
		}
	}
	switch {
	case line[i] == '0':
		i++
	case isDigit(line[i]):
		for i < n && isDigit(line[i]) {
			i++
		}
	default:
		return i, "invalid number"
	}
	if i < n && line[i] == '.' {
		var msg string
		if i, msg = skipDigits(line, i+1); msg != "" {
			return i, msg
		}
	}
	return skipExponent(line, i)
}

// skipExponent validates and skips a number's exponent, if line[i:] starts
// with one.
func skipExponent(line []byte, i int) (int, string) {
	n := len(line)
	if i < n && (line[i] == 'e' || line[i] == 'E') {
		i++
		if i < n && (line[i] == '+' || line[i] == '-') {
			i++
		}
		return skipDigits(line, i)
	}
	return i, ""
}

// skipDigits validates and skips the one or more digits at line[i:].
func skipDigits(line []byte, i int) (int, string) {
	n := len(line)
	if i >= n {
		return i, msgJSONEOF
	}
	if !isDigit(line[i]) {
		return i, "invalid number"
	}
	for i < n && isDigit(line[i]) {
		i++
	}
	return i, ""
}

// skipString validates and skips the string starting at line[i] == '"'.
func skipString(line []byte, i int) (int, string) {
	n := len(line)
	for i++; i < n; {
		i += indexJSONStringSpecial(line[i:])
		if i >= n {
			break
		}
		c := line[i]
		switch {
		case c == '"':
			return i + 1, ""
		case c < 0x20:
			return i, "control character in string"
		case c == '\\':
			if i+1 >= n {
				return i + 1, msgJSONEOF
			}
			switch line[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, msg := hex4(line, i+2); msg != "" {
					return i, msg
				}
				i += 6
			default:
				return i, "invalid escape"
			}
		default:
			i++
		}
	}
	return i, msgJSONEOF
}

// hex4 reads 4 hex digits at line[i:].
func hex4(line []byte, i int) (rune, string) {
	var r rune
	for k := 0; k < 4; k++ {
		if i+k >= len(line) {
			return 0, msgJSONEOF
		}
		c := line[i+k]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, "invalid \\u escape"
		}
		r = r<<4 | rune(c)
	}
	return r, ""
}

// str parses the string at line[i] == '"' and returns its contents: a slice
// of line when it has no escapes, else unescaped into *dst (appended). Lone
// surrogates become U+FFFD, as in encoding/json.
func (p *jsonParser) str(line []byte, i int, dst *[]byte) ([]byte, int, string) {
	n := len(line)
	start := i + 1
	j := start + indexJSONStringSpecial(line[start:])
	if j >= n {
		return nil, j, msgJSONEOF
	}
	switch c := line[j]; {
	case c == '"':
		return line[start:j:j], j + 1, ""
	case c < 0x20:
		return nil, j, "control character in string"
	}
	buf := *dst
	from := len(buf)
	buf = append(buf, line[start:j]...)
	for j < n {
		c := line[j]
		switch {
		case c == '"':
			*dst = buf
			return buf[from:len(buf):len(buf)], j + 1, ""
		case c < 0x20:
			*dst = buf
			return nil, j, "control character in string"
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= n {
			*dst = buf
			return nil, j + 1, msgJSONEOF
		}
		switch e := line[j+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, msg := hex4(line, j+2)
			if msg != "" {
				*dst = buf
				return nil, j, msg
			}
			j += 6
			if utf16.IsSurrogate(r) {
				if j+1 < n && line[j] == '\\' && line[j+1] == 'u' {
					if r2, msg := hex4(line, j+2); msg == "" {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							buf = utf8.AppendRune(buf, dec)
							j += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
			continue
		default:
			*dst = buf
			return nil, j, "invalid escape"
		}
		j += 2
	}
	*dst = buf
	return nil, j, msgJSONEOF
}
