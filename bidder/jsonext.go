package bidder

import (
	"strconv"
	"unsafe"
)

// extValue returns the raw JSON value of the top-level member key of the
// JSON object ext (an OpenRTB ext), or nil. It makes no allocation. ext
// comes from a body the rtb decoder has checked, but the scan stays within
// bounds on any input.
func extValue(ext []byte, key string) []byte {
	i := skipSpace(ext, 0)
	if i >= len(ext) || ext[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipSpace(ext, i)
		if i >= len(ext) || ext[i] != '"' {
			return nil
		}
		kEnd := skipString(ext, i)
		if kEnd < 0 {
			return nil
		}
		k := ext[i+1 : kEnd-1]
		i = skipSpace(ext, kEnd)
		if i >= len(ext) || ext[i] != ':' {
			return nil
		}
		i = skipSpace(ext, i+1)
		vEnd := skipValue(ext, i)
		if vEnd < 0 {
			return nil
		}
		if string(k) == key {
			return ext[i:vEnd]
		}
		i = skipSpace(ext, vEnd)
		if i >= len(ext) || ext[i] != ',' {
			return nil
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"', or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := skipString(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// extInt returns the integer value of ext's member key (a JSON number, or
// a string holding one, as some exchanges send "gdpr":"1"), and false if
// absent or not an integer.
func extInt(ext []byte, key string) (int64, bool) {
	v := extValue(ext, key)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if len(v) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(v), len(v)), 10, 64)
	return n, err == nil
}

// extString returns the string value of ext's member key, "" if absent or
// not a string. Without escapes it aliases ext (no allocation); escaped
// strings are unquoted into a new string.
func extString(ext []byte, key string) string {
	v := extValue(ext, key)
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return ""
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' {
			s, err := strconv.Unquote(string(v))
			if err != nil {
				return ""
			}
			return s
		}
	}
	if len(inner) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(inner), len(inner))
}

// extMembers iterates over the members of a JSON object (an OpenRTB ext
// or a value inside one) without allocating: keys are the raw bytes
// between the quotes (escapes not undone), values raw JSON. Iteration
// stops at the object's end or at the first syntax error.
type extMembers struct {
	b     []byte
	i     int
	first bool
}

// newExtMembers starts an iteration over obj; one that is not an object
// has no members.
func newExtMembers(obj []byte) extMembers {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return extMembers{i: len(obj)}
	}
	return extMembers{b: obj, i: i + 1, first: true}
}

// next returns the next member; ok is false at the end.
func (m *extMembers) next() (key, val []byte, ok bool) {
	b := m.b
	i := skipSpace(b, m.i)
	m.i = len(b) // stays at the end on any return below but the last
	if !m.first {
		if i >= len(b) || b[i] != ',' {
			return nil, nil, false
		}
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		return nil, nil, false
	}
	kEnd := skipString(b, i)
	if kEnd < 0 {
		return nil, nil, false
	}
	key = b[i+1 : kEnd-1]
	i = skipSpace(b, kEnd)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, false
	}
	i = skipSpace(b, i+1)
	vEnd := skipValue(b, i)
	if vEnd < 0 {
		return nil, nil, false
	}
	m.i, m.first = vEnd, false
	return key, b[i:vEnd], true
}
