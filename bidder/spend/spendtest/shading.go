package spendtest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/internal/splitmix"
)

// ShadingCaps says what a shading.Store under test lets the suite do.
type ShadingCaps struct {
	// Advance, if set, moves the store's clock forward by d (a store whose
	// expiry the suite can drive); the suite then checks that a slot is
	// gone after its expiry.
	Advance func(d time.Duration)
}

// NewShadingStoreFunc returns a shading.Store on a fresh, empty backend
// (or a fresh key space of a shared one); it is closed by t.Cleanup.
type NewShadingStoreFunc func(t *testing.T) shading.Store

// RunShadingSuite runs the conformance tests every shading.Store must
// pass, and the fleet's sharing (shading.Shader.Sync, Load) through it.
func RunShadingSuite(t *testing.T, newStore NewShadingStoreFunc, caps ShadingCaps) {
	base := time.Now().Truncate(time.Hour).Unix()
	segA, segB, segC := shading.SegmentID(0x04000401), shading.SegmentID(0x04000400), shading.SegmentID(7)

	t.Run("AddRead", func(t *testing.T) {
		s := newStore(t)
		a := shading.SlotCounts{Segment: segA, Slot: base}
		a.N[shading.KindBids][5], a.N[shading.KindWins][5], a.N[shading.KindLosses][127] = 3, 1, 4
		b := shading.SlotCounts{Segment: segB, Slot: base}
		b.N[shading.KindMins][0] = 2
		exp := time.Unix(base, 0).Add(time.Hour)
		for _, add := range [][]shading.SlotCounts{{a, b}, {a}} {
			if err := s.AddShading(ctx(t), base, add, []shading.SegmentID{segA, segB}, exp); err != nil {
				t.Fatal(err)
			}
		}
		next := shading.SlotCounts{Segment: segA, Slot: base + 60}
		next.N[shading.KindBids][9] = 1
		if err := s.AddShading(ctx(t), base+60, []shading.SlotCounts{next}, []shading.SegmentID{segA}, exp); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadShading(ctx(t), []shading.SegmentID{segA, segB, segC}, []int64{base, base + 60, base + 120})
		if err != nil {
			t.Fatal(err)
		}
		want := map[[2]int64]shading.SlotCounts{}
		wa := a
		for k := range shading.NumKinds {
			for i := range shading.NumBuckets {
				wa.N[k][i] *= 2
			}
		}
		want[[2]int64{int64(segA), base}], want[[2]int64{int64(segB), base}], want[[2]int64{int64(segA), base + 60}] = wa, b, next
		if len(got) != len(want) {
			t.Fatalf("read %d entries, want %d (segments and slots with counts only)", len(got), len(want))
		}
		for _, g := range got {
			w, ok := want[[2]int64{int64(g.Segment), g.Slot}]
			if !ok || g.N != w.N {
				t.Errorf("segment %x slot %d: counts differ from the sum of the adds", uint32(g.Segment), g.Slot)
			}
		}
		ids, err := s.ShadingSegments(ctx(t), []int64{base, base + 60, base + 120})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []shading.SegmentID{segB, segA}) {
			t.Errorf("index %x, want each of %x, %x once", ids, segB, segA)
		}
		if ids, err := s.ShadingSegments(ctx(t), []int64{base + 120}); err != nil || len(ids) != 0 {
			t.Errorf("index of an empty slot: %v, %v", ids, err)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		s := newStore(t)
		c := shading.SlotCounts{Segment: segA, Slot: base}
		c.N[shading.KindBids][1] = 1
		exp := time.Unix(base, 0).Add(time.Hour)
		for name, call := range map[string]func() error{
			"negative slot":  func() error { return s.AddShading(ctx(t), -60, nil, nil, exp) },
			"other slot":     func() error { return s.AddShading(ctx(t), base+60, []shading.SlotCounts{c}, nil, exp) },
			"expired":        func() error { return s.AddShading(ctx(t), base, []shading.SlotCounts{c}, nil, time.Unix(base, 0)) },
			"negative read":  func() error { _, err := s.ReadShading(ctx(t), []shading.SegmentID{segA}, []int64{-1}); return err },
			"negative index": func() error { _, err := s.ShadingSegments(ctx(t), []int64{-1}); return err },
		} {
			if err := call(); !errors.Is(err, shading.ErrInvalidCounts) {
				t.Errorf("%s: %v, want ErrInvalidCounts", name, err)
			}
		}
		if got, err := s.ReadShading(ctx(t), []shading.SegmentID{segA}, []int64{base, base + 60}); err != nil || len(got) != 0 {
			t.Errorf("a refused add added %v (%v)", got, err)
		}
	})

	t.Run("Fleet", func(t *testing.T) { fleetSuite(t, newStore(t)) })

	if caps.Advance != nil {
		t.Run("Expiry", func(t *testing.T) {
			s := newStore(t)
			now := time.Now().Truncate(time.Minute)
			old := now.Unix()
			c := shading.SlotCounts{Segment: segA, Slot: old}
			c.N[shading.KindBids][3] = 5
			if err := s.AddShading(ctx(t), old, []shading.SlotCounts{c}, []shading.SegmentID{segA}, now.Add(2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			caps.Advance(3 * time.Minute)
			later := old + 180
			c.Slot = later
			if err := s.AddShading(ctx(t), later, []shading.SlotCounts{c}, []shading.SegmentID{segA}, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			got, err := s.ReadShading(ctx(t), []shading.SegmentID{segA}, []int64{old, later})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Slot != later {
				t.Errorf("after the first slot's expiry read %d entries, want only the later slot's", len(got))
			}
			if ids, err := s.ShadingSegments(ctx(t), []int64{old}); err != nil || len(ids) != 0 {
				t.Errorf("expired slot's index: %v, %v", ids, err)
			}
		})
	}
}

// fleetSuite: bidder A makes the bids, bidder B gets their notices (with
// m); after a Sync of each, A prices from the fleet's estimate though it
// saw no notice itself, and a bidder C started afterwards (Load) shades
// its very first bid.
func fleetSuite(t *testing.T, st shading.Store) {
	fo := &shading.FleetOptions{Slot: time.Minute}
	xs := []shading.Exchange{{LossNotices: true, NoticeWait: time.Second}}
	newShader := func(seed uint64) *shading.Shader {
		r := splitmix.Rand{S: seed}
		return shading.New(shading.Options{Fleet: fo, Exchanges: xs, Explore: -1, Rand: r.Float64})
	}
	a, b := newShader(1), newShader(2)
	id := shading.Segment(0, "pub", shading.FormatBanner, 300, 250)
	rng := splitmix.Rand{S: 9}
	const value, floor = 4_000_000, 500_000
	now := time.Now().Truncate(time.Minute)
	for range 1500 {
		now = now.Add(10 * time.Millisecond)
		d := a.Price(id, shading.FirstPrice, true, value, floor)
		a.Bid(id, d.Price, now)
		m := int64(1_000_000 + rng.IntN(1_500_000))
		b.Observe(id, d.Price, now, d.Price >= m, m, true, now)
	}
	now = now.Add(3 * time.Second)
	for _, s := range []*shading.Shader{a, b, a} {
		s.Refresh(now)
		if _, err := s.Sync(ctx(t), st, now); err != nil {
			t.Fatal(err)
		}
		s.Refresh(now)
	}
	d := a.Price(id, shading.FirstPrice, true, value, floor)
	if d.How != shading.HowShaded || d.Price >= value {
		t.Errorf("the bidding bidder after Sync: %+v, want a shaded price from the fleet's minimum bids to win", d)
	}
	c := newShader(3)
	if d := c.Price(id, shading.FirstPrice, true, value, floor); d.How == shading.HowShaded {
		t.Fatalf("a new bidder shades before Load: %+v", d)
	}
	stats, err := c.Load(ctx(t), st, now)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Segments != 3 {
		t.Errorf("Load: %d segments, want the 3 levels of one segment", stats.Segments)
	}
	dc := c.Price(id, shading.FirstPrice, true, value, floor)
	if dc.How != shading.HowShaded || dc.Price != d.Price {
		t.Errorf("a started bidder's first bid after Load: %+v, want shaded like the fleet's %+v", dc, d)
	}
	// A sibling segment of the same publisher is priced from the coarser
	// level at once.
	sib := shading.Segment(0, "pub", shading.FormatBanner, 728, 90)
	if ds := c.Price(sib, shading.FirstPrice, true, value, floor); ds.How != shading.HowShaded || ds.Level != shading.LevelPublisher {
		t.Errorf("a new size of a known publisher: %+v, want shaded at the publisher level", ds)
	}
}
