package shading

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// AuctionType is OpenRTB's at: how the winner's price is set.
type AuctionType uint8

// Values of AuctionType.
const (
	FirstPrice  AuctionType = 1 // the winner pays its bid: shaded
	SecondPrice AuctionType = 2 // the winner pays the next price: bid the value
	FixedPrice  AuctionType = 3 // a deal's at 3: the price is the deal's bidfloor
)

// How says how Choose priced a bid (the how label of rtbd_shading_bids_total).
type How uint8

// Values of How.
const (
	HowOff          How = iota // shading off for the campaign: the value
	HowSecondPrice             // not a first-price auction: the value
	HowFixedPrice              // a fixed-price deal: the deal's price
	HowNoData                  // first price, no segment with enough data yet: the value
	HowShaded                  // the price maximising the expected surplus
	HowExplored                // the shaded price moved at random (exploration)
	HowExploredCold            // no data yet: a random price between ColdLow x value and the value
	NumHow
)

var howNames = [NumHow]string{"off", "second_price", "fixed_price", "no_data", "shaded", "explored", "explored_cold"}

// String is a fixed, metric-safe name.
func (h How) String() string {
	if h < NumHow {
		return howNames[h]
	}
	return "unknown"
}

// Defaults of Options.
const (
	DefaultMaxSegments     = 4096
	DefaultHalfLife        = 30 * time.Minute
	DefaultMinObservations = 100
	DefaultExplore         = 0.05
	DefaultExploreWidth    = 0.25
	DefaultExploreCold     = 0.25
	DefaultColdLow         = 0.3
	DefaultNoticeWait      = 60 * time.Second
)

// Exchange is what the Shader needs to know of one exchange (its index
// in Options.Exchanges is the exchange index of its segments).
type Exchange struct {
	// LossNotices: the exchange sends loss notices (exchanges.NAME.loss_notices).
	// Without them, a bid with no win within NoticeWait is a censored loss.
	LossNotices bool
	// NoticeWait is how long after a bid its notices may still arrive
	// (exchanges.NAME.notice_wait): only bids older than that are
	// estimated from. Default DefaultNoticeWait.
	NoticeWait time.Duration
}

// Options tune a Shader. The zero value is usable: every field documents
// its default.
type Options struct {
	// MaxSegments bounds the segments held (all levels together); the least
	// recently bid on go first. Default DefaultMaxSegments (a segment holds
	// about 8 KiB).
	MaxSegments int
	// HalfLife is the half-life of the counts, so a landscape that shifts
	// is learned again. Default DefaultHalfLife.
	HalfLife time.Duration
	// MinObservations is the decayed count (minimum bids to win, else
	// resolved bids) a segment needs before its estimate is used; a finer
	// segment with fewer backs off to a coarser one. Default
	// DefaultMinObservations.
	MinObservations float64
	// Explore is the fraction of shaded bids whose price is moved by a
	// random factor in [exp(-ExploreWidth), exp(ExploreWidth)], never
	// above the value nor below the floor. Default DefaultExplore; negative: none.
	Explore float64
	// ExploreWidth: see Explore. Default DefaultExploreWidth.
	ExploreWidth float64
	// ExploreCold is the fraction of bids of a segment without data (at
	// every level) priced at random between ColdLow x value and the value
	// (the others bid the value). Default DefaultExploreCold; negative: none.
	ExploreCold float64
	// ColdLow: see ExploreCold. Default DefaultColdLow.
	ColdLow float64
	// Exchanges by exchange index; an index beyond it has the defaults.
	Exchanges []Exchange
	// Rand returns a uniform float in [0, 1); safe for concurrent use if
	// Choose is called concurrently. Default math/rand/v2's Float64.
	Rand func() float64
	// Fleet: the Shader shares its counts with a fleet through a Store
	// (Sync, Load): every settled count is also kept for the next Sync,
	// and the estimate rests on the fleet's counts. See FleetOptions.
	Fleet *FleetOptions
}

func (o *Options) defaults() {
	if o.MaxSegments <= 0 {
		o.MaxSegments = DefaultMaxSegments
	}
	if o.HalfLife <= 0 {
		o.HalfLife = DefaultHalfLife
	}
	if o.MinObservations <= 0 {
		o.MinObservations = DefaultMinObservations
	}
	if o.Explore == 0 {
		o.Explore = DefaultExplore
	}
	if o.ExploreWidth <= 0 {
		o.ExploreWidth = DefaultExploreWidth
	}
	if o.ExploreCold == 0 {
		o.ExploreCold = DefaultExploreCold
	}
	if !(o.ColdLow > 0 && o.ColdLow < 1) {
		o.ColdLow = DefaultColdLow
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Fleet != nil {
		f := *o.Fleet
		f.defaults(o.HalfLife)
		o.Fleet = &f
	}
}

// numShards splits the segment table's lock.
const numShards = 16

// Shader learns the landscape of competing bids per segment and prices
// first-price bids. Safe for concurrent use; a nil *Shader prices every
// bid at its value (HowOff).
type Shader struct {
	opts   Options
	tau    float64 // decay time constant, ns
	perCap int
	shards [numShards]shard
	// fleetMu serialises Sync and Load.
	fleetMu sync.Mutex
	// status is what they did, for the view.
	status fleetStatus
}

type shard struct {
	mu   sync.RWMutex
	segs map[SegmentID]*segment
}

// New returns a Shader.
func New(opts Options) *Shader {
	opts.defaults()
	s := &Shader{opts: opts, tau: float64(opts.HalfLife) / math.Ln2, perCap: max(1, opts.MaxSegments/numShards)}
	for i := range s.shards {
		s.shards[i].segs = make(map[SegmentID]*segment)
	}
	return s
}

// counts are one time slot's observations, by price bucket.
type counts struct {
	bids, wins, losses [NumBuckets]uint32
}

// numSlots: bids of slot n are final (their notices in) once slot n+2
// starts, so three slots are live at most.
const numSlots = 3

// segment is one segment's observations and estimate.
type segment struct {
	id          SegmentID
	lossNotices bool
	wait        int64 // ns, the slot width

	lastSeen  atomic.Int64 // unix ns of the last bid
	lastValue atomic.Int64 // the last bid's value and price (micros CPM), for the view
	lastPrice atomic.Int64
	cur       atomic.Pointer[curve]

	mu      sync.Mutex
	slotNum [numSlots]int64 // -1: empty
	slots   [numSlots]counts
	// Settled, time-decayed counts by price bucket: bids and wins of slots
	// past the notice wait, explicit losses, and minimum bids to win (by
	// the bucket of m).
	bids, wins, losses, mins [NumBuckets]float64
	lastDecay                int64
	dirty                    bool
	// fl is the segment's share of the fleet's counts (Options.Fleet), nil without.
	fl *fleetState
}

// curve is a segment's estimate: P(win | price) at each bucket edge,
// linear in between. Immutable once published.
type curve struct {
	p      [NumBuckets + 1]float32
	source Source
	obs    float64 // the decayed observations it rests on
}

// Source is what a segment's estimate rests on.
type Source uint8

// Values of Source.
const (
	SourceNone     Source = iota // not enough data
	SourceMinToWin               // minimum bids to win (uncensored)
	SourceWins                   // wins and losses (censored: price >= or < competition)
)

var sourceNames = [...]string{"none", "min_to_win", "wins"}

// String is a fixed name.
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "unknown"
}

func (s *Shader) exchange(id SegmentID) Exchange {
	var x Exchange
	if i := id.Exchange(); i < len(s.opts.Exchanges) {
		x = s.opts.Exchanges[i]
	}
	if x.NoticeWait <= 0 {
		x.NoticeWait = DefaultNoticeWait
	}
	return x
}

func (s *Shader) lookup(id SegmentID) *segment {
	sh := &s.shards[uint32(id)*2654435761>>28]
	sh.mu.RLock()
	g := sh.segs[id]
	sh.mu.RUnlock()
	return g
}

// segment returns id's segment, creating it (and evicting the least
// recently seen of its shard when full); allocates only then.
func (s *Shader) segment(id SegmentID, now int64) *segment {
	return s.segmentEvict(id, now, true)
}

// segmentEvict is segment; without evict it returns nil instead of
// evicting a segment when id's shard is full.
func (s *Shader) segmentEvict(id SegmentID, now int64, evict bool) *segment {
	if g := s.lookup(id); g != nil {
		return g
	}
	sh := &s.shards[uint32(id)*2654435761>>28]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if g := sh.segs[id]; g != nil {
		return g
	}
	if len(sh.segs) >= s.perCap && !evict {
		return nil
	}
	if len(sh.segs) >= s.perCap {
		var old *segment
		for _, g := range sh.segs {
			if old == nil || g.lastSeen.Load() < old.lastSeen.Load() {
				old = g
			}
		}
		delete(sh.segs, old.id)
	}
	x := s.exchange(id)
	g := &segment{id: id, lossNotices: x.LossNotices, wait: int64(x.NoticeWait), lastDecay: now}
	if s.opts.Fleet != nil {
		g.fl = &fleetState{}
	}
	g.slotNum = [numSlots]int64{-1, -1, -1}
	g.lastSeen.Store(now)
	sh.segs[id] = g
	return g
}

// levels returns the distinct segments of fine, finest first.
func levels(fine SegmentID) (ids [NumLevels]SegmentID, n int) {
	for l := LevelFormat; l >= LevelExchange; l-- {
		id := fine.At(l)
		if n > 0 && ids[n-1] == id {
			continue
		}
		ids[n] = id
		n++
	}
	return ids, n
}

// Decision is how a bid was priced.
type Decision struct {
	// Price is the bid, micros CPM: in [floor, value].
	Price int64
	How   How
	// Segment is the segment whose estimate priced it (HowShaded,
	// HowExplored), Level its level; else the finest segment and -1.
	Segment SegmentID
	Level   int8
	// WinProb is the estimated probability of winning at the shaded price
	// (before exploration); 0 without an estimate.
	WinProb float64
}

// Price returns the bid price (micros CPM) for value (the campaign's,
// paced, in the bid currency) at floor, in an auction of type at, for the
// segment fine: the value unless at is FirstPrice and shade is true (at 3,
// fixed price, is priced by the caller; here the value). No allocation.
func (s *Shader) Price(fine SegmentID, at AuctionType, shade bool, value, floor int64) Decision {
	d := Decision{Price: value, Segment: fine, Level: -1}
	switch {
	case s == nil || !shade:
		d.How = HowOff
		return d
	case at == FixedPrice:
		d.How = HowFixedPrice
		return d
	case at != FirstPrice:
		d.How = HowSecondPrice
		return d
	case value <= floor:
		d.How = HowNoData
		return d
	}
	ids, n := levels(fine)
	for k := range n {
		g := s.lookup(ids[k])
		if g == nil {
			continue
		}
		c := g.cur.Load()
		if c == nil {
			continue
		}
		p, pw := c.best(float64(value), float64(max(floor, 0)))
		d.Segment, d.Level, d.WinProb, d.How = g.id, int8(g.id.Level()), pw, HowShaded
		if s.opts.Explore > 0 && s.opts.Rand() < s.opts.Explore {
			p *= math.Exp((2*s.opts.Rand() - 1) * s.opts.ExploreWidth)
			d.How = HowExplored
		}
		d.Price = clampPrice(p, value, floor)
		g.lastValue.Store(value)
		g.lastPrice.Store(d.Price)
		return d
	}
	d.How = HowNoData
	if s.opts.ExploreCold > 0 && s.opts.Rand() < s.opts.ExploreCold {
		lo := max(float64(floor), s.opts.ColdLow*float64(value))
		d.Price = clampPrice(lo+s.opts.Rand()*(float64(value)-lo), value, floor)
		d.How = HowExploredCold
	}
	return d
}

func clampPrice(p float64, value, floor int64) int64 {
	v := int64(math.Round(p))
	return max(min(v, value), floor)
}

// Bid counts a bid made at priceMicros in segment fine (and its coarser
// segments) at now. Allocates only for a segment not held yet.
func (s *Shader) Bid(fine SegmentID, priceMicros int64, now time.Time) {
	if s == nil {
		return
	}
	t := now.UnixNano()
	b := Bucket(priceMicros)
	ids, n := levels(fine)
	for k := range n {
		g := s.segment(ids[k], t)
		g.lastSeen.Store(t)
		g.mu.Lock()
		if c := g.slot(t); c != nil {
			c.bids[b]++
		} else {
			g.bids[b]++
			g.fl.add(kindBids, b, 1)
		}
		g.dirty = true
		g.mu.Unlock()
	}
}

// Observe records a notice of a bid of segment fine at priceMicros,
// issued at issued: won or lost; m (micros CPM, the minimum bid to win, a
// value ParseMinToWin accepted) when mOK. The caller counts each bid's
// notice once (its replay set) and only from a verified token.
func (s *Shader) Observe(fine SegmentID, priceMicros int64, issued time.Time, won bool, m int64, mOK bool, now time.Time) {
	if s == nil {
		return
	}
	t := now.UnixNano()
	it := issued.UnixNano()
	b := Bucket(priceMicros)
	ids, n := levels(fine)
	for k := range n {
		g := s.segment(ids[k], t)
		g.mu.Lock()
		c := g.slot(it)
		switch {
		case won && c != nil:
			c.wins[b]++
		case won:
			g.wins[b]++
			g.fl.add(kindWins, b, 1)
		case c != nil:
			c.losses[b]++
		default:
			g.losses[b]++
			g.fl.add(kindLosses, b, 1)
		}
		if mOK {
			mb := Bucket(m)
			g.mins[mb]++
			g.fl.add(kindMins, mb, 1)
		}
		g.dirty = true
		g.mu.Unlock()
	}
}

// slot returns the counts of the time slot of t (unix ns), nil when that
// slot is already settled; a live slot that t's reuses is settled first.
// g.mu held.
func (g *segment) slot(t int64) *counts {
	n := t / g.wait
	i := n % numSlots
	switch {
	case g.slotNum[i] == n:
		return &g.slots[i]
	case g.slotNum[i] > n || n < g.newest()-numSlots+1:
		return nil
	}
	if g.slotNum[i] >= 0 {
		g.settle(int(i))
	}
	g.slotNum[i] = n
	return &g.slots[i]
}

func (g *segment) newest() int64 {
	return max(g.slotNum[0], g.slotNum[1], g.slotNum[2])
}

// settle moves slot i into the settled counts. g.mu held.
func (g *segment) settle(i int) {
	c := &g.slots[i]
	for b := range NumBuckets {
		g.bids[b] += float64(c.bids[b])
		g.wins[b] += float64(c.wins[b])
		g.losses[b] += float64(c.losses[b])
	}
	if f := g.fl; f != nil {
		for b := range NumBuckets {
			f.pending[kindBids][b] += c.bids[b]
			f.pending[kindWins][b] += c.wins[b]
			f.pending[kindLosses][b] += c.losses[b]
		}
	}
	*c = counts{}
	g.slotNum[i] = -1
	g.dirty = true
}

// Refresh settles the slots past their notice wait, decays the counts to
// now and publishes the new estimates. Call it periodically (every
// second or so) from one goroutine; the bid path never waits for it.
func (s *Shader) Refresh(now time.Time) {
	if s == nil {
		return
	}
	t := now.UnixNano()
	var buf []*segment
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		buf = buf[:0]
		for _, g := range sh.segs {
			buf = append(buf, g)
		}
		sh.mu.RUnlock()
		for _, g := range buf {
			g.refresh(t, s)
		}
	}
}

func (g *segment) refresh(t int64, s *Shader) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range numSlots {
		if n := g.slotNum[i]; n >= 0 && (n+2)*g.wait <= t {
			g.settle(i)
		}
	}
	if dt := t - g.lastDecay; dt > 0 {
		f := math.Exp(-float64(dt) / s.tau)
		for b := range NumBuckets {
			g.bids[b] *= f
			g.wins[b] *= f
			g.losses[b] *= f
			g.mins[b] *= f
		}
		g.lastDecay = t
		g.dirty = true
	}
	if g.dirty {
		g.dirty = false
		g.cur.Store(g.estimate(s.opts.MinObservations))
	}
}

// Len is the number of segments held (all levels).
func (s *Shader) Len() int {
	if s == nil {
		return 0
	}
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += len(sh.segs)
		sh.mu.RUnlock()
	}
	return n
}
