//go:build !race

package dsa

import (
	"testing"

	"github.com/rtbd/rtbd/rtb"
)

// TestDecideAllocs pins the decision and the ext it writes at zero
// allocations.
func TestDecideAllocs(t *testing.T) {
	req := rtb.DSA{Present: true, Required: 2, PubRender: 1, DataToPub: 2}
	s := Setting{Behalf: "a", Paid: "b"}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		d := Decide(&req, s, true, "dsp.example", true)
		buf = rtb.AppendBidExtDSA(buf[:0], &d.Ext)
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
