package feed

import (
	"encoding/binary"
	"math/bits"
)

// Word-at-a-time (SWAR) byte searches for the short fields of a feed row,
// where bytes.IndexByte's call and setup cost more than the scan.

const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// zeroBytes has the high bit set in the lowest byte of x that is zero (and
// maybe in higher bytes too, never lower): its lowest set bit is exact.
func zeroBytes(x uint64) uint64 { return (x - swarOnes) &^ x & swarHigh }

// indexCommaOrQuote returns the index of the first ',' or '"' in b, or -1.
func indexCommaOrQuote(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := zeroBytes(x^(','*swarOnes)) | zeroBytes(x^('"'*swarOnes)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == ',' || c == '"' {
			return i
		}
	}
	return -1
}

// indexJSONStringSpecial returns the index of the first '"', '\\' or byte
// below 0x20 in b, or len(b).
func indexJSONStringSpecial(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		m := zeroBytes(x^('"'*swarOnes)) | zeroBytes(x^('\\'*swarOnes)) | (x-0x20*swarOnes)&^x&swarHigh
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return len(b)
}
