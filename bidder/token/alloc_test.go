//go:build !race

package token

import "testing"

// TestAllocations pins Append and Parse at zero allocations with buffers
// that have room (the bidder signs 2 + one per product on every bid).
func TestAllocations(t *testing.T) {
	k := mustKeys(t, key1, key2)
	tt := sample()
	dst := make([]byte, 0, 1024)
	tok, _ := k.Append(nil, &tt)
	buf := make([]byte, 0, 1024)
	var got Token
	if n := testing.AllocsPerRun(100, func() { dst, _ = k.Append(dst[:0], &tt) }); n != 0 {
		t.Errorf("Append: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf, _ = k.Parse(&got, tok, KindWin, tt.Issued, buf) }); n != 0 {
		t.Errorf("Parse: %v allocs, want 0", n)
	}
}

func BenchmarkAppend(b *testing.B) {
	k := mustKeys(b, key1)
	tt := sample()
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = k.Append(dst[:0], &tt)
	}
}

func BenchmarkParse(b *testing.B) {
	k := mustKeys(b, key1)
	tt := sample()
	tok, _ := k.Append(nil, &tt)
	buf := make([]byte, 0, 1024)
	var got Token
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = k.Parse(&got, tok, KindWin, tt.Issued, buf)
	}
}
