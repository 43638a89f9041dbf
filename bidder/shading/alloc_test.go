//go:build !race

package shading

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/internal/splitmix"
)

// TestAllocations pins the bid path at zero allocations: pricing a bid
// (shaded, with exploration) and counting it, in segments already held.
func TestAllocations(t *testing.T) {
	rng := splitmix.Rand{S: 3}
	s := New(Options{Explore: 0.5})
	id := Segment(0, "pub", FormatBanner, 300, 250)
	now := learn(s, id, 2000, 4_000_000, 0, func() int64 { return int64(rng.IntN(4_000_000)) }, true, true, t0)
	var d Decision
	if n := testing.AllocsPerRun(1000, func() {
		d = s.Price(id, FirstPrice, true, 4_000_000, 500_000)
		s.Bid(id, d.Price, now)
	}); n != 0 {
		t.Errorf("Price and Bid: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		s.Observe(id, d.Price, now, false, 4_500_000, true, now)
	}); n != 0 {
		t.Errorf("Observe: %v allocs, want 0", n)
	}
	raw := []byte("2.5")
	if n := testing.AllocsPerRun(1000, func() { _, _ = ParseMinToWin(raw, 2_000_000, false) }); n != 0 {
		t.Errorf("ParseMinToWin: %v allocs", n)
	}
	if d.How != HowShaded && d.How != HowExplored {
		t.Errorf("not shaded: %+v", d)
	}
	// Sharing with a fleet (Options.Fleet) adds the settled counts to the
	// segment's pending ones: still no allocation.
	f := New(Options{Explore: 0.5, Fleet: &FleetOptions{}})
	now = learn(f, id, 2000, 4_000_000, 0, func() int64 { return int64(rng.IntN(4_000_000)) }, true, true, t0)
	if n := testing.AllocsPerRun(1000, func() {
		d = f.Price(id, FirstPrice, true, 4_000_000, 500_000)
		f.Bid(id, d.Price, now)
		f.Observe(id, d.Price, now.Add(-time.Hour), false, 4_500_000, true, now) // settled at once
	}); n != 0 {
		t.Errorf("with a fleet: Price, Bid and Observe: %v allocs, want 0", n)
	}
}

func BenchmarkPrice(b *testing.B) {
	rng := splitmix.Rand{S: 3}
	s := New(Options{})
	id := Segment(0, "pub", FormatBanner, 300, 250)
	learn(s, id, 2000, 4_000_000, 0, func() int64 { return int64(rng.IntN(4_000_000)) }, true, true, t0)
	b.ReportAllocs()
	for b.Loop() {
		s.Price(id, FirstPrice, true, 4_000_000, 500_000)
	}
}
