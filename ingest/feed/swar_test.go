package feed

import (
	"bytes"
	"testing"
)

func naiveIndex(b []byte, pred func(byte) bool, none int) int {
	for i, c := range b {
		if pred(c) {
			return i
		}
	}
	return none
}

func TestSWARIndexes(t *testing.T) {
	isCQ := func(c byte) bool { return c == ',' || c == '"' }
	isJS := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	for n := 0; n <= 20; n++ {
		for pos := -1; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := bytes.Repeat([]byte{'a'}, n)
				if pos >= 0 {
					b[pos] = byte(c)
				}
				if n > 0 && pos != n-1 { // a second candidate after pos must not matter
					b[n-1] = ','
				}
				if got, want := indexCommaOrQuote(b), naiveIndex(b, isCQ, -1); got != want {
					t.Fatalf("indexCommaOrQuote(%q) = %d, want %d", b, got, want)
				}
				if got, want := indexJSONStringSpecial(b), naiveIndex(b, isJS, len(b)); got != want {
					t.Fatalf("indexJSONStringSpecial(%q) = %d, want %d", b, got, want)
				}
			}
		}
	}
}

func FuzzSWARIndexes(f *testing.F) {
	f.Add([]byte("abc,def\"ghi\\\x01\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := indexCommaOrQuote(b), naiveIndex(b, func(c byte) bool { return c == ',' || c == '"' }, -1); got != want {
			t.Fatalf("indexCommaOrQuote = %d, want %d", got, want)
		}
		if got, want := indexJSONStringSpecial(b), naiveIndex(b, func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }, len(b)); got != want {
			t.Fatalf("indexJSONStringSpecial = %d, want %d", got, want)
		}
	})
}
