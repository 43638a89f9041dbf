package rtb

import (
	"strconv"
	"unsafe"
)

// The peeks read one top-level member of a bid request's body before it is
// decoded, for what must stay cheaper than decoding: the admission control
// (tmax) and the no-bid of a shed request (id). They make no allocation
// and stay within bounds on any input; on a body that is not well-formed
// they may answer as if it were (the decoder rejects it later).

// PeekTMax returns the top-level tmax of the JSON bid request in body (a
// JSON number, or a string holding one), or 0 when it has none that
// parses as an integer. Only the first top-level tmax counts.
func PeekTMax(body []byte) int64 {
	v := peekMember(body, "tmax")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if len(v) == 0 {
		return 0
	}
	n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(v), len(v)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// PeekID returns the top-level id of the JSON bid request in body when it
// is a string, else "". Without escapes it aliases body (the caller must
// not keep it beyond body's life) and makes no allocation; an escaped one
// is unescaped into a new string. id is usually the first key, so the scan
// is short.
func PeekID(body []byte) string {
	v := peekMember(body, "id")
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return ""
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' {
			d := decoder{buf: append([]byte(nil), v...), maxStr: len(v)}
			if s, ok := d.readString(); ok {
				return string(s)
			}
			return ""
		}
	}
	return unsafe.String(unsafe.SliceData(inner), len(inner))
}

// peekMember returns the raw JSON value of the first top-level member key
// of the JSON object b (keys compared as sent, escapes not undone), or nil.
func peekMember(b []byte, key string) []byte {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return nil
		}
		kEnd := peekString(b, i)
		if kEnd < 0 {
			return nil
		}
		k := b[i+1 : kEnd-1]
		i = skipWS(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return nil
		}
		i = skipWS(b, i+1)
		vEnd := peekValue(b, i)
		if vEnd < 0 {
			return nil
		}
		if string(k) == key {
			return b[i:vEnd]
		}
		i = skipWS(b, vEnd)
		if i >= len(b) || b[i] != ',' {
			return nil
		}
		i++
	}
}

// peekString returns the index after the string starting at b[i] == '"', or -1.
func peekString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		j = skipSafe(b, j)
		if j >= len(b) {
			break
		}
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// peekValue returns the index after the JSON value starting at b[i], or -1.
func peekValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return peekString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := peekString(b, j)
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
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
