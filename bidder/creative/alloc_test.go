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
	var nr NativeRequest
	if err := ParseNative(nativeReq, &nr); err != nil {
		t.Fatal(err)
	}
	n := &Native{Request: &nr, Products: ps, Advertiser: "Acme", Links: appendLinks{}}
	if a := testing.AllocsPerRun(50, func() { dst, _ = AppendNative(dst[:0], n) }); a != 0 {
		t.Errorf("AppendNative: %v allocs, want 0", a)
	}
}

func BenchmarkBanner15(b *testing.B) {
	ps := products(15)
	dst := make([]byte, 0, 64<<10)
	bn := &Banner{W: 300, H: 250, Products: ps, Advertiser: "Acme", Links: appendLinks{}}
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendBanner(dst[:0], bn)
	}
	b.ReportMetric(float64(len(dst)), "bytes")
}
