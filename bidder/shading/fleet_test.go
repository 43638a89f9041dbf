package shading_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
)

func pebbleStore(t *testing.T) *pebblestore.Store {
	s, err := pebblestore.Open(filepath.Join(t.TempDir(), "spend"), pebblestore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// failingAdds is a store whose next fail adds fail (the reads work).
type failingAdds struct {
	shading.Store
	fail int
}

var errDown = errors.New("store down")

func (f *failingAdds) AddShading(ctx context.Context, slot int64, c []shading.SlotCounts, idx []shading.SegmentID, exp time.Time) error {
	if f.fail > 0 {
		f.fail--
		return errDown
	}
	return f.Store.AddShading(ctx, slot, c, idx, exp)
}

func bidsOf(t *testing.T, st shading.Store, id shading.SegmentID, slots ...int64) uint32 {
	t.Helper()
	rs, err := st.ReadShading(context.Background(), []shading.SegmentID{id}, slots)
	if err != nil {
		t.Fatal(err)
	}
	var n uint32
	for _, r := range rs {
		for _, v := range r.N[shading.KindBids] {
			n += v
		}
	}
	return n
}

// TestSyncFailedFlush: counts a failed flush took are kept and flushed by
// the next Sync, once; meanwhile the estimate still counts them.
func TestSyncFailedFlush(t *testing.T) {
	st := &failingAdds{Store: pebbleStore(t), fail: 1}
	s := shading.New(shading.Options{Fleet: &shading.FleetOptions{Slot: time.Minute},
		Exchanges: []shading.Exchange{{NoticeWait: time.Second}}})
	id := shading.Segment(0, "p", shading.FormatBanner, 300, 250)
	now := time.Now().Truncate(time.Minute)
	for range 40 {
		s.Bid(id, 2_000_000, now)
	}
	now = now.Add(3 * time.Second)
	s.Refresh(now) // settles the bids
	ctx := context.Background()
	if _, err := s.Sync(ctx, st, now); !errors.Is(err, errDown) {
		t.Fatalf("Sync with the store down: %v", err)
	}
	slot := now.Unix() - now.Unix()%60
	if n := bidsOf(t, st, id, slot); n != 0 {
		t.Fatalf("the failed flush stored %d bids", n)
	}
	if v := s.Snapshot(nil); len(v) == 0 || v[len(v)-1].Bids != 40 {
		t.Errorf("after a failed flush the estimate counts %+v, want the 40 bids", v)
	}
	stats, err := s.Sync(ctx, st, now.Add(5*time.Second))
	if err != nil || stats.Flushed != 3 {
		t.Fatalf("second Sync: %+v, %v; want the 3 levels flushed", stats, err)
	}
	if _, err := s.Sync(ctx, st, now.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := bidsOf(t, st, id, slot); n != 40 {
		t.Errorf("stored %d bids, want the 40 once", n)
	}
	for _, v := range s.Snapshot(nil) {
		if v.Bids != 40 {
			t.Errorf("segment %s after the syncs: %v bids, want 40 (the store's, not twice)", v.ID, v.Bids)
		}
	}
}

// TestLoadDecaysBySlotAge: the fleet's counts weigh by their slot's age:
// a slot one half-life old (at its middle) counts half.
func TestLoadDecaysBySlotAge(t *testing.T) {
	st := pebbleStore(t)
	const w = 60
	hl := 10 * time.Minute
	now := time.Now().Truncate(time.Minute).Add(30 * time.Second)
	id := shading.Segment(0, "", shading.FormatBanner, 300, 250).At(shading.LevelExchange)
	old := now.Add(-hl).Unix() - w/2 // its middle is one half-life ago
	cur := now.Unix() - w/2
	for _, sl := range []int64{old, cur} {
		c := shading.SlotCounts{Segment: id, Slot: sl}
		c.N[shading.KindBids][10] = 100
		if err := st.AddShading(context.Background(), sl, []shading.SlotCounts{c}, []shading.SegmentID{id}, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	s := shading.New(shading.Options{HalfLife: hl, Fleet: &shading.FleetOptions{Slot: w * time.Second}})
	stats, err := s.Load(context.Background(), st, now)
	if err != nil || stats.Segments != 1 {
		t.Fatalf("Load: %+v, %v", stats, err)
	}
	v := s.Snapshot(nil)
	if want := 100 + 50.0; len(v) != 1 || math.Abs(v[0].Bids-want) > 0.5 {
		t.Errorf("loaded %+v, want %.0f bids (100 now, 100 one half-life ago at half weight)", v, want)
	}
}

// TestLoadBounded: a fleet with more segments than a bidder holds loads
// the coarse ones first and drops the finest, within Options.MaxSegments.
func TestLoadBounded(t *testing.T) {
	st := pebbleStore(t)
	now := time.Now().Truncate(time.Minute)
	slot := now.Unix()
	var adds []shading.SlotCounts
	var index []shading.SegmentID
	seen := map[shading.SegmentID]bool{}
	for p := range 4 {
		for w := range 40 {
			fine := shading.Segment(1, "pub"+string(rune('a'+p)), shading.FormatBanner, int64(100+w), 250)
			for _, id := range []shading.SegmentID{fine, fine.At(shading.LevelPublisher), fine.At(shading.LevelExchange)} {
				if !seen[id] {
					seen[id] = true
					c := shading.SlotCounts{Segment: id, Slot: slot}
					c.N[shading.KindMins][20] = 200
					adds, index = append(adds, c), append(index, id)
				}
			}
		}
	}
	if err := st.AddShading(context.Background(), slot, adds, index, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	const maxSegs = 64
	s := shading.New(shading.Options{MaxSegments: maxSegs, Explore: -1, Fleet: &shading.FleetOptions{Slot: time.Minute}})
	stats, err := s.Load(context.Background(), st, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() > maxSegs || stats.Segments != s.Len() || s.Len() < 5 {
		t.Fatalf("loaded %d segments, holding %d; want between the 5 coarse ones and %d", stats.Segments, s.Len(), maxSegs)
	}
	levels := map[string]int{}
	for _, v := range s.Snapshot(nil) {
		levels[v.Level]++
	}
	if levels["exchange"] != 1 || levels["publisher"] != 4 {
		t.Errorf("levels held %v, want the exchange and its 4 publishers, whatever fine ones fit", levels)
	}
	d := s.Price(shading.Segment(1, "pubz", shading.FormatBanner, 1, 1), shading.FirstPrice, true, 4_000_000, 0)
	if d.How != shading.HowShaded || d.Level != shading.LevelExchange {
		t.Errorf("a new publisher after Load: %+v, want shaded by the exchange's estimate", d)
	}
}

// The shared stores' count names: every kind and bucket round-trips, and
// nothing else parses.
func TestCountName(t *testing.T) {
	seen := map[string]bool{}
	for k := range shading.NumKinds {
		for b := range shading.NumBuckets {
			name := shading.CountName(k, b)
			if seen[name] || len(name) > 4 {
				t.Fatalf("CountName(%d, %d) = %q: repeated or over 4 bytes", k, b, name)
			}
			seen[name] = true
			if gk, gb, ok := shading.ParseCountName(name); !ok || gk != k || gb != b {
				t.Fatalf("ParseCountName(%q) = %d, %d, %v; want %d, %d", name, gk, gb, ok, k, b)
			}
		}
	}
	for _, bad := range []string{"", "w", "x1", "w-1", "w128", "wx", "s"} {
		if k, b, ok := shading.ParseCountName(bad); ok {
			t.Errorf("ParseCountName(%q) = %d, %d, ok", bad, k, b)
		}
	}
	var c shading.SlotCounts
	c.N[shading.KindWins][17], c.N[shading.KindMins][0] = 3, 1
	got := map[string]uint32{}
	for name, v := range c.NonZero() {
		got[name] = v
	}
	if len(got) != 2 || got["w17"] != 3 || got["m0"] != 1 {
		t.Errorf("NonZero = %v, want w17:3 m0:1", got)
	}
}
