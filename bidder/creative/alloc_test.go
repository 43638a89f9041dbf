//go:build !race

package creative

import (
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// appendLinks appends a fixed click URL without allocating.
type appendLinks struct{}

func (appendLinks) AppendClickURL(dst []byte, p *catalogpb.Product) []byte {
	return append(dst, "https://bid.example/click?t=abcdefghijklmnopqrstuvwxyz0123456789"...)
}

// TestAllocations pins the renderers at zero allocations once the buffer
// has grown.
func TestAllocations(t *testing.T) {
	ps := products(15)
	ps[3] = evil()
	dst := make([]byte, 0, 64<<10)
	b := &Banner{W: 300, H: 250, Products: ps, Advertiser: "Acme", Links: appendLinks{}}
	if n := testing.AllocsPerRun(50, func() { dst = AppendBanner(dst[:0], b) }); n != 0 {
		t.Errorf("AppendBanner: %v allocs, want 0", n)
	}
	b.Cells = NewCellCache(64)
	for range 2 { // the products are seen, then stored (allocating)
		dst = AppendBanner(dst[:0], b)
	}
	if n := testing.AllocsPerRun(50, func() { dst = AppendBanner(dst[:0], b) }); n != 0 {
		t.Errorf("AppendBanner with cached cells: %v allocs, want 0", n)
	}
	var nr NativeRequest
	if err := ParseNative(nativeReq, &nr); err != nil {
		t.Fatal(err)
	}
	n := &Native{Request: &nr, Products: ps, Advertiser: "Acme", Links: appendLinks{}}
	if a := testing.AllocsPerRun(50, func() { dst, _ = AppendNative(dst[:0], n) }); a != 0 {
		t.Errorf("AppendNative: %v allocs, want 0", a)
	}
}

// BenchmarkBanner15 renders a 15-product banner, without and with a
// CellCache (all hits after the first).
func BenchmarkBanner15(b *testing.B) {
	for _, cells := range []*CellCache{nil, NewCellCache(64)} {
		name := "render"
		if cells != nil {
			name = "cached-cells"
		}
		b.Run(name, func(b *testing.B) {
			ps := products(15)
			dst := make([]byte, 0, 64<<10)
			bn := &Banner{W: 300, H: 250, Products: ps, Advertiser: "Acme", Links: appendLinks{}, Cells: cells}
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendBanner(dst[:0], bn)
			}
			b.ReportMetric(float64(len(dst)), "bytes")
		})
	}
}
