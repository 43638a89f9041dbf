package shading

import (
	"math"
	"testing"
	"time"

	"github.com/rtbd/rtbd/internal/splitmix"
)

var t0 = time.Unix(1_800_000_000, 0)

func TestBucket(t *testing.T) {
	prev := uint16(0)
	for p := int64(1); p < 500_000_000; p = p*11/10 + 1 {
		b := Bucket(p)
		if b < prev {
			t.Fatalf("Bucket(%d) = %d below Bucket of a lower price %d", p, b, prev)
		}
		prev = b
		if b > 0 && b < NumBuckets-1 && !(Edge(int(b)) <= float64(p) && float64(p) < Edge(int(b)+1)) {
			t.Fatalf("Bucket(%d) = %d: edges [%.0f, %.0f)", p, b, Edge(int(b)), Edge(int(b)+1))
		}
	}
	if Bucket(0) != 0 || Bucket(math.MaxInt64) != NumBuckets-1 {
		t.Errorf("Bucket(0) = %d, Bucket(max) = %d", Bucket(0), Bucket(math.MaxInt64))
	}
}

func TestSegmentLevels(t *testing.T) {
	a := Segment(3, "pub-1", FormatBanner, 300, 250)
	b := Segment(3, "pub-1", FormatBanner, 728, 90)
	c := Segment(3, "pub-2", FormatBanner, 300, 250)
	if a.Level() != LevelFormat || a.Exchange() != 3 {
		t.Fatalf("%#x: level %d exchange %d", a, a.Level(), a.Exchange())
	}
	if a == b || a.At(LevelPublisher) != b.At(LevelPublisher) {
		t.Errorf("two sizes of one publisher: %#x %#x, publisher level %#x %#x", a, b, a.At(LevelPublisher), b.At(LevelPublisher))
	}
	if a.At(LevelPublisher) == c.At(LevelPublisher) || a.At(LevelExchange) != c.At(LevelExchange) {
		t.Errorf("two publishers: %#x %#x", a, c)
	}
	if a.At(LevelExchange).Level() != LevelExchange || a.At(LevelPublisher).Level() != LevelPublisher {
		t.Errorf("levels of the coarser ids: %d %d", a.At(LevelExchange).Level(), a.At(LevelPublisher).Level())
	}
	if Segment(4, "pub-1", FormatBanner, 300, 250) == a {
		t.Error("two exchanges share a segment")
	}
	// No publisher: the publisher level is the exchange's, counted once.
	n := Segment(1, "", FormatNative, 0, 0)
	if _, k := levels(n); k != 2 {
		t.Errorf("segment without a publisher: %d levels, want 2", k)
	}
	if _, k := levels(a); k != 3 {
		t.Errorf("%d levels, want 3", k)
	}
}

func TestParseMinToWin(t *testing.T) {
	const bid = 2_000_000
	for _, tc := range []struct {
		raw  string
		won  bool
		want BadMinToWin
		m    int64
	}{
		{"", false, MinToWinAbsent, 0},
		{"${AUCTION_MIN_TO_WIN}", false, MinToWinMacro, 0},
		{"NaN", false, MinToWinNotPrice, 0},
		{"Inf", true, MinToWinNotPrice, 0},
		{"1e3", false, MinToWinNotPrice, 0},
		{"-1.5", false, MinToWinNegative, 0},
		{"2.5", true, MinToWinAboveBid, 0},
		{"1.5", true, MinToWinOK, 1_500_000},
		{"2", true, MinToWinOK, 2_000_000},
		{"1.5", false, MinToWinBelowBid, 0},
		{"2", false, MinToWinBelowBid, 0},
		{"2.01", false, MinToWinOK, 2_010_000},
		{"40.01", false, MinToWinAbsurd, 0},
		{"5000", false, MinToWinAbsurd, 0},
	} {
		m, got := ParseMinToWin([]byte(tc.raw), bid, tc.won)
		if got != tc.want || got == MinToWinOK && m != tc.m {
			t.Errorf("ParseMinToWin(%q, won %v) = %d, %s; want %d, %s", tc.raw, tc.won, m, got, tc.m, tc.want)
		}
	}
	if MinToWinAbsurd.String() != "absurd" || BadMinToWin(200).String() != "unknown" {
		t.Error("names")
	}
}

// learn feeds s n auctions of segment id whose price to tie is drawn by
// tie, priced by s itself, one every 100ms, with m and loss notices as
// asked; it returns the time after them.
func learn(s *Shader, id SegmentID, n int, value, floor int64, tie func() int64, withM, lossNotices bool, now time.Time) time.Time {
	for range n {
		now = now.Add(100 * time.Millisecond)
		s.Refresh(now)
		d := s.Price(id, FirstPrice, true, value, floor)
		s.Bid(id, d.Price, now)
		m := tie()
		won := d.Price >= m
		if won || lossNotices {
			s.Observe(id, d.Price, now, won, m, withM, now)
		}
	}
	return now
}

func TestPriceNotShaded(t *testing.T) {
	s := New(Options{})
	id := Segment(0, "p", FormatBanner, 300, 250)
	rng := splitmix.Rand{S: 1}
	learn(s, id, 3000, 4_000_000, 500_000, func() int64 { return 1_000_000 + int64(rng.IntN(1_000_000)) }, true, true, t0)
	for _, tc := range []struct {
		at    AuctionType
		shade bool
		how   How
	}{
		{SecondPrice, true, HowSecondPrice},
		{FixedPrice, true, HowFixedPrice},
		{AuctionType(0), true, HowSecondPrice},
		{FirstPrice, false, HowOff},
	} {
		d := s.Price(id, tc.at, tc.shade, 4_000_000, 500_000)
		if d.Price != 4_000_000 || d.How != tc.how {
			t.Errorf("at %d shade %v: %d %s, want the value and %s", tc.at, tc.shade, d.Price, d.How, tc.how)
		}
	}
	var nilS *Shader
	if d := nilS.Price(id, FirstPrice, true, 4_000_000, 0); d.Price != 4_000_000 || d.How != HowOff {
		t.Errorf("nil Shader: %+v", d)
	}
	if d := s.Price(id, FirstPrice, true, 4_000_000, 0); d.How != HowShaded && d.How != HowExplored || d.Price >= 4_000_000 {
		t.Errorf("first price: %+v, want shaded below the value", d)
	}
}

// TestPriceBounds: whatever the curve and the draws, a price is never
// above the value nor below the floor.
func TestPriceBounds(t *testing.T) {
	rng := splitmix.Rand{S: 7}
	s := New(Options{Rand: rng.Float64, Explore: 0.5, ExploreWidth: 1})
	id := Segment(0, "p", FormatBanner, 300, 250)
	learn(s, id, 2000, 4_000_000, 100_000, func() int64 { return int64(rng.IntN(8_000_000)) }, false, false, t0)
	for range 5000 {
		value := int64(rng.IntN(10_000_000))
		floor := int64(rng.IntN(max(int(value), 1)))
		d := s.Price(id, FirstPrice, true, value, floor)
		if d.Price > value || d.Price < floor {
			t.Fatalf("value %d floor %d: price %d (%s)", value, floor, d.Price, d.How)
		}
	}
}

// TestBackOff: a segment without data is priced from its publisher's,
// else its exchange's, estimate; once it has its own, from that.
func TestBackOff(t *testing.T) {
	s := New(Options{Explore: -1, ExploreCold: -1})
	a := Segment(0, "pub", FormatBanner, 300, 250)
	b := Segment(0, "pub", FormatBanner, 728, 90)
	other := Segment(0, "other", FormatBanner, 300, 250)
	now := learn(s, a, 2000, 4_000_000, 0, func() int64 { return 2_000_000 }, true, true, t0)
	s.Refresh(now)
	if d := s.Price(b, FirstPrice, true, 4_000_000, 0); d.Level != LevelPublisher || d.Segment != b.At(LevelPublisher) {
		t.Errorf("a new size of a known publisher: level %d segment %#x, want the publisher's %#x", d.Level, d.Segment, b.At(LevelPublisher))
	}
	if d := s.Price(other, FirstPrice, true, 4_000_000, 0); d.Level != LevelExchange {
		t.Errorf("a new publisher: level %d, want the exchange's", d.Level)
	}
	d := s.Price(a, FirstPrice, true, 4_000_000, 0)
	if d.Level != LevelFormat || d.How != HowShaded {
		t.Errorf("the learned segment: %+v", d)
	}
	// Every competing bid is 2.00: the best bid ties it.
	if d.Price < 2_000_000 || d.Price > 2_200_000 {
		t.Errorf("price %d, want at or just above 2.00", d.Price)
	}
	empty := New(Options{ExploreCold: -1})
	if d := empty.Price(a, FirstPrice, true, 4_000_000, 0); d.How != HowNoData || d.Price != 4_000_000 {
		t.Errorf("no data: %+v, want the value", d)
	}
}

// TestCensoredLosses: an exchange without loss notices: bids are losses
// only once their notice wait is over, and the estimate follows the win
// rate by price.
func TestCensoredLosses(t *testing.T) {
	s := New(Options{MinObservations: 50, Exchanges: []Exchange{{NoticeWait: time.Minute}}})
	id := Segment(0, "pub", FormatBanner, 300, 250)
	now := t0
	// 200 bids at 1.00 (all lose) and 200 at 3.00 (all win), within 20s.
	for i := range 400 {
		now = now.Add(50 * time.Millisecond)
		price := int64(1_000_000)
		if i%2 == 1 {
			price = 3_000_000
			s.Observe(id, price, now, true, 0, false, now)
		}
		s.Bid(id, price, now)
	}
	s.Refresh(now)
	if g := s.lookup(id); g.cur.Load() != nil {
		t.Fatalf("estimate from bids within their notice wait: %+v", g.cur.Load())
	}
	now = now.Add(2 * time.Minute)
	s.Refresh(now)
	c := s.lookup(id).cur.Load()
	if c == nil || c.source != SourceWins {
		t.Fatalf("no estimate after the wait: %+v", c)
	}
	// Between the two prices tried the curve is linear (no data there).
	if p := c.at(1_000_000); p > 0.05 {
		t.Errorf("P(win | 1.00) = %.3f, want about 0 (every bid there lost)", p)
	}
	if p := c.at(3_000_000); p < 0.95 {
		t.Errorf("P(win | 3.00) = %.3f, want about 1 (every bid there won)", p)
	}
	// A late win of a settled bid still counts.
	s.Observe(id, 1_000_000, t0.Add(time.Second), true, 0, false, now)
	s.Refresh(now)
	if p := s.lookup(id).cur.Load().at(1_000_000); p <= 0 {
		t.Errorf("a late win at 1.00 not counted: %.3f", p)
	}
}

// TestDecay: a landscape that moves is learned again.
func TestDecay(t *testing.T) {
	s := New(Options{HalfLife: time.Minute, Explore: -1})
	id := Segment(0, "pub", FormatBanner, 300, 250)
	now := learn(s, id, 2000, 4_000_000, 0, func() int64 { return 1_000_000 }, true, true, t0)
	if d := s.Price(id, FirstPrice, true, 4_000_000, 0); d.Price > 1_100_000 {
		t.Fatalf("price %d, want about 1.00", d.Price)
	}
	now = learn(s, id, 6000, 4_000_000, 0, func() int64 { return 3_000_000 }, true, true, now)
	if d := s.Price(id, FirstPrice, true, 4_000_000, 0); d.Price < 3_000_000 || d.Price > 3_300_000 {
		t.Errorf("after the move to 3.00: price %d (%+v)", d.Price, d)
	}
	_ = now
}

// TestBounded: the segments held never exceed MaxSegments, and the ones
// bid on most recently stay.
func TestBounded(t *testing.T) {
	s := New(Options{MaxSegments: 64})
	now := t0
	var ids []SegmentID
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		id := Segment(1, string(rune('a'+i%26))+string(rune('a'+i/26)), FormatBanner, 300, 250)
		ids = append(ids, id)
		s.Bid(id, 1_000_000, now)
	}
	if n := s.Len(); n > 64 {
		t.Errorf("%d segments held, want at most 64", n)
	}
	if s.lookup(ids[len(ids)-1]) == nil || s.lookup(ids[len(ids)-1].At(LevelExchange)) == nil {
		t.Error("the segment bid on last was evicted")
	}
}

func TestSnapshot(t *testing.T) {
	s := New(Options{Explore: -1})
	id := Segment(1, "pub", FormatBanner, 300, 250)
	rng := splitmix.Rand{S: 5}
	now := learn(s, id, 3000, 4_000_000, 500_000, func() int64 { return 1_000_000 + int64(rng.IntN(2_000_000)) }, true, true, t0)
	s.Refresh(now)
	vs := s.Snapshot([]string{"default", "gam"})
	if len(vs) != 3 {
		t.Fatalf("%d segments, want 3 (format, publisher, exchange)", len(vs))
	}
	for _, v := range vs {
		if v.Exchange != "gam" || v.Source != "min_to_win" || v.MinToWin < 100 || len(v.Curve) < 3 {
			t.Errorf("%+v", v)
		}
		if v.LastValue == 0 && v.Level == "format" || v.Shade > 1 {
			t.Errorf("last: %+v", v)
		}
		for k := 1; k < len(v.Curve); k++ {
			if v.Curve[k].WinProb < v.Curve[k-1].WinProb || v.Curve[k].Price <= v.Curve[k-1].Price {
				t.Errorf("curve not increasing at %d: %+v", k, v.Curve)
			}
		}
	}
}
