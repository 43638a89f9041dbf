// Package ascii folds ASCII case without allocating, for the bidder's hot
// paths (request domains, bundles, URL schemes, header values): bytes
// outside A-Z are left as they are.
package ascii

// AppendLower appends s to dst with A-Z lowered.
func AppendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// EqualLower reports whether b, with A-Z lowered, equals lower (a string
// already in lower case).
func EqualLower[T ~string | ~[]byte](b T, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
