package shading

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"time"
)

// Kinds of count a Store keeps per (segment, slot, price bucket): settled
// bids, wins, explicit losses, and minimum bids to win (by the bucket of m).
const (
	KindBids = iota
	KindWins
	KindLosses
	KindMins
	NumKinds
)

const (
	kindBids   = KindBids
	kindWins   = KindWins
	kindLosses = KindLosses
	kindMins   = KindMins
)

var kindNames = [NumKinds]string{"b", "w", "l", "m"}

// CountName is the name the shared stores give the count of kind k in
// price bucket b, in a Redis hash field or an Aerospike bin: the kind's
// letter ("b", "w", "l", "m") and b in decimal, "w17"; at most 4 bytes.
func CountName(k, b int) string { return kindNames[k] + strconv.Itoa(b) }

// ParseCountName parses a CountName into its kind and bucket; ok is false
// for any other name.
func ParseCountName(name string) (kind, bucket int, ok bool) {
	if len(name) < 2 {
		return 0, 0, false
	}
	kind = slices.Index(kindNames[:], name[:1])
	b, err := strconv.Atoi(name[1:])
	if kind < 0 || err != nil || b < 0 || b >= NumBuckets {
		return 0, 0, false
	}
	return kind, b, true
}

// SlotCounts are one segment's counts in one time slot of a Store, by kind
// and price bucket.
type SlotCounts struct {
	Segment SegmentID
	// Slot is the slot's start, unix seconds (a multiple of the slot width).
	Slot int64
	N    [NumKinds][NumBuckets]uint32
}

// Empty reports whether every count is 0.
func (c *SlotCounts) Empty() bool {
	for k := range c.N {
		for _, v := range c.N[k] {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// NonZero yields the name (CountName) and value of each count of c that
// is not 0: what a shared store adds.
func (c *SlotCounts) NonZero() iter.Seq2[string, uint32] {
	return func(yield func(string, uint32) bool) {
		for k := range c.N {
			for b, v := range c.N[k] {
				if v != 0 && !yield(CountName(k, b), v) {
					return
				}
			}
		}
	}
}

// Store keeps a fleet's shading counts: per segment and time slot (the
// slot of the flush that added them), the settled counts by kind and price
// bucket, summed over every bidder, and per slot an index of the segments
// with counts in it. A slot's keys may be forgotten after the expiry given
// with its last add, which keeps the store bounded: at most the fleet's
// segments (each bidder flushes only the segments it holds, at most
// Options.MaxSegments) times the slots of FleetOptions.Horizon. The spend
// stores implement it (pebblestore for one bidder's own counts across
// restarts, redisstore and aerostore for a fleet); they all pass the shared
// suite (bidder/spend/spendtest.RunShadingSuite). Implementations are safe
// for concurrent use.
type Store interface {
	// AddShading adds each entry's counts (entry.Slot is slot) to its
	// segment's counts of slot and adds index's segments to the slot's
	// index; the store may drop all of slot's keys after expires. Counts
	// are statistics, added at least once: a retry after an unknown outcome
	// may add them twice.
	AddShading(ctx context.Context, slot int64, counts []SlotCounts, index []SegmentID, expires time.Time) error
	// ReadShading returns the counts of segs in slots (slot starts), one
	// entry per segment and slot with any count, in any order.
	ReadShading(ctx context.Context, segs []SegmentID, slots []int64) ([]SlotCounts, error)
	// ShadingSegments returns the segments in the indexes of slots, each
	// once, in any order.
	ShadingSegments(ctx context.Context, slots []int64) ([]SegmentID, error)
}

// Defaults of FleetOptions.
const (
	DefaultFleetSlot        = 5 * time.Minute
	DefaultFleetHalfLives   = 4
	maxReadKeys             = 4096 // segments x slots per ReadShading call
	fleetMinHorizonInSlots  = 2
	fleetFinalAfterSlotEnds = 1 // a slot is final once this many slots have ended after it
)

// FleetOptions tune how a Shader shares its counts with a fleet (Sync,
// Load). The zero value is usable.
type FleetOptions struct {
	// Slot is the width of the store's time slots: the counts a bidder
	// flushes within one slot add up in one key per segment. Default
	// DefaultFleetSlot; whole seconds.
	Slot time.Duration
	// Horizon is how far back the fleet's counts are read, and how long a
	// store keeps a slot after it ends: counts older than it weigh less
	// than 2^-(Horizon/HalfLife). Default DefaultFleetHalfLives half-lives,
	// at least two slots.
	Horizon time.Duration
	// Interval is how often the caller runs Sync (shading.fleet_interval);
	// only the view uses it (FleetSnapshot): a last successful Sync older
	// than two intervals is stale. Zero: only a failed last attempt makes
	// it stale.
	Interval time.Duration
}

func (f *FleetOptions) defaults(halfLife time.Duration) {
	if f.Slot < time.Second {
		f.Slot = DefaultFleetSlot
	}
	f.Slot = f.Slot.Truncate(time.Second)
	if f.Horizon <= 0 {
		f.Horizon = DefaultFleetHalfLives * halfLife
	}
	f.Horizon = max(f.Horizon, fleetMinHorizonInSlots*f.Slot)
}

// fleetState is a segment's share of the fleet's counts. Guarded by the
// segment's mu.
type fleetState struct {
	// pending are the settled counts not yet flushed (Sync).
	pending [NumKinds][NumBuckets]uint32
	// closed is the decayed sum of the fleet's counts of the final slots up
	// to through (a slot start, unix s), decayed to closedAt (unix ns).
	closed   [NumKinds][NumBuckets]float32
	closedAt int64
	through  int64
	read     bool  // through is set
	indexed  int64 // the slot this bidder last added the segment to the index of (0: none)
	// own is what this bidder flushed, by kind (all buckets), weighed as
	// the fleet's counts of its slot are, as of ownAt (unix ns): the view
	// shows it beside the fleet's (SegmentFleet).
	own   [NumKinds]float64
	ownAt int64
}

// addOwn adds the flushed counts n of slot (start, unix s; w its width,
// s) to f.own at t (unix ns), weighed as applyFleet weighs the fleet's:
// decayed from the slot's middle on.
func (f *fleetState) addOwn(n *[NumKinds][NumBuckets]uint32, slot, w, t int64, tau float64) {
	mid := slot*1e9 + w*1e9/2
	if ref := max(t, mid); ref > f.ownAt {
		if f.ownAt != 0 {
			d := math.Exp(-float64(ref-f.ownAt) / tau)
			for k := range f.own {
				f.own[k] *= d
			}
		}
		f.ownAt = ref
	}
	wt := math.Exp(-float64(f.ownAt-mid) / tau) // f.ownAt >= mid
	for k := range NumKinds {
		var sum float64
		for _, v := range n[k] {
			sum += float64(v)
		}
		f.own[k] += wt * sum
	}
}

// add counts n of kind in bucket b as settled and not yet flushed. Nil-safe.
func (f *fleetState) add(kind int, b uint16, n uint32) {
	if f != nil {
		f.pending[kind][b] += n
	}
}

// ErrNoFleet is returned by Sync and Load of a Shader without Options.Fleet.
var ErrNoFleet = errors.New("shading: no fleet options")

// SyncStats say what one Sync or Load did.
type SyncStats struct {
	// Flushed: entries (segment counts) added to the store, Fields their
	// non-zero counts (a store's field or bin increments); Read: entries
	// read; Segments: segments read (Load: loaded).
	Flushed, Fields, Read, Segments int
	// Keys: (segment, slot) pairs asked of the store (a Redis key or an
	// Aerospike record each); Calls: ReadShading calls made (Redis: one
	// pipeline each); Slots: the slots read, OldestSlot the first of them
	// (unix s; 0 when none read): they run to the current slot.
	Keys, Calls, Slots int
	OldestSlot         int64
}

func (s *Shader) slotOf(unixSec int64) int64 {
	w := int64(s.opts.Fleet.Slot / time.Second)
	return unixSec - unixSec%w
}

// Sync is one round of the fleet's sharing, run from a background loop
// (never the bid path): it flushes the counts settled since the last Sync
// into the store (slot of now), then reads the fleet's counts of every
// segment held and rebuilds each one's settled counts as the fleet's
// (decayed by their slot's age, as of now) plus what settled here since
// the flush. A slot is read in full once it is final (one slot has ended
// after it) and kept as a decayed sum; the newer ones are read again on
// every Sync, so a segment costs two keys per Sync (three in the first
// Sync of a slot; BenchmarkFleetSync measures it). A failed flush
// keeps its counts for the next Sync; the read runs anyway. Estimates are
// published by the next Refresh.
func (s *Shader) Sync(ctx context.Context, st Store, now time.Time) (SyncStats, error) {
	var stats SyncStats
	if s == nil || s.opts.Fleet == nil {
		return stats, ErrNoFleet
	}
	s.fleetMu.Lock()
	defer s.fleetMu.Unlock()
	began := time.Now()
	s.fleetStarted(st)
	t := now.UnixNano()
	cur := s.slotOf(now.Unix())
	segs := s.held()

	// Flush.
	var adds []SlotCounts
	var index []SegmentID
	var from []*segment // the segment of each add
	for _, g := range segs {
		g.mu.Lock()
		if f := g.fl; f != nil {
			c := SlotCounts{Segment: g.id, Slot: cur, N: f.pending}
			if !c.Empty() {
				f.pending = [NumKinds][NumBuckets]uint32{}
				adds = append(adds, c)
				from = append(from, g)
				if f.indexed != cur {
					index = append(index, g.id)
				}
			}
		}
		g.mu.Unlock()
	}
	var flushErr error
	if len(adds) > 0 {
		expires := time.Unix(cur, 0).Add(s.opts.Fleet.Slot + s.opts.Fleet.Horizon)
		if err := st.AddShading(ctx, cur, adds, index, expires); err != nil {
			flushErr = fmt.Errorf("shading: flush %d segment counts: %w", len(adds), err)
			for i, g := range from {
				g.mu.Lock()
				for k := range NumKinds {
					for b := range NumBuckets {
						g.fl.pending[k][b] += adds[i].N[k][b]
					}
				}
				g.mu.Unlock()
			}
		} else {
			stats.Flushed = len(adds)
			for i := range adds {
				for k := range NumKinds {
					for _, v := range adds[i].N[k] {
						if v != 0 {
							stats.Fields++
						}
					}
				}
			}
			w := int64(s.opts.Fleet.Slot / time.Second)
			for i, g := range from {
				g.mu.Lock()
				g.fl.indexed = cur
				g.fl.addOwn(&adds[i].N, cur, w, t, s.tau)
				g.mu.Unlock()
			}
		}
	}
	err := s.readFleet(ctx, st, segs, t, cur, &stats)
	stats.Segments = len(segs)
	err = errors.Join(flushErr, err)
	s.fleetDone(false, now, time.Since(began), stats, err)
	return stats, err
}

// held returns every segment held.
func (s *Shader) held() []*segment {
	var segs []*segment
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for _, g := range sh.segs {
			segs = append(segs, g)
		}
		sh.mu.RUnlock()
	}
	return segs
}

// readFleet reads the fleet's counts of segs and installs them (t: now,
// unix ns; cur: the current slot), adding what it read to stats (Read,
// Keys, Calls, Slots, OldestSlot).
func (s *Shader) readFleet(ctx context.Context, st Store, segs []*segment, t, cur int64, stats *SyncStats) error {
	w := int64(s.opts.Fleet.Slot / time.Second)
	hs := s.slotOf((t - int64(s.opts.Fleet.Horizon)) / 1e9)
	// Group the segments by the first slot they need.
	groups := map[int64][]*segment{}
	for _, g := range segs {
		g.mu.Lock()
		from := hs
		if g.fl != nil && g.fl.read && g.fl.through+w > hs {
			from = g.fl.through + w
		}
		g.mu.Unlock()
		if g.fl != nil {
			groups[from] = append(groups[from], g)
		}
	}
	var errs []error
	for from, gs := range groups {
		var slots []int64
		for sl := from; sl <= cur; sl += w {
			slots = append(slots, sl)
		}
		if len(slots) > 0 && (stats.OldestSlot == 0 || from < stats.OldestSlot) {
			stats.OldestSlot = from
			stats.Slots = len(slots)
		}
		per := max(1, maxReadKeys/len(slots))
		for lo := 0; lo < len(gs); lo += per {
			batch := gs[lo:min(lo+per, len(gs))]
			ids := make([]SegmentID, len(batch))
			for i, g := range batch {
				ids[i] = g.id
			}
			rs, err := st.ReadShading(ctx, ids, slots)
			stats.Calls++
			stats.Keys += len(ids) * len(slots)
			if err != nil {
				errs = append(errs, fmt.Errorf("shading: read %d segments: %w", len(ids), err))
				continue
			}
			stats.Read += len(rs)
			by := make(map[SegmentID][]*SlotCounts, len(batch)) // pointers: an entry is 2 KiB
			for i := range rs {
				by[rs[i].Segment] = append(by[rs[i].Segment], &rs[i])
			}
			for _, g := range batch {
				s.applyFleet(g, by[g.id], from, cur, t)
			}
		}
	}
	return errors.Join(errs...)
}

// applyFleet installs the fleet's counts rs of g, read for the slots from
// from to cur, at t (unix ns).
func (s *Shader) applyFleet(g *segment, rs []*SlotCounts, from, cur, t int64) {
	w := int64(s.opts.Fleet.Slot / time.Second)
	final := cur - (fleetFinalAfterSlotEnds+1)*w // the newest final slot's start
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.fl
	if !f.read || f.through < from-w {
		f.closed = [NumKinds][NumBuckets]float32{}
		f.through, f.read = from-w, true
	} else if dt := t - f.closedAt; dt > 0 {
		d := float32(math.Exp(-float64(dt) / s.tau))
		for k := range NumKinds {
			for b := range NumBuckets {
				f.closed[k][b] *= d
			}
		}
	}
	f.closedAt = t
	var open [NumKinds][NumBuckets]float64
	for _, r := range rs {
		if r.Slot <= f.through {
			continue
		}
		age := float64(t - (r.Slot*1e9 + w*1e9/2))
		wt := math.Exp(-max(age, 0) / s.tau)
		for k := range NumKinds {
			for b, v := range r.N[k] {
				if v == 0 {
					continue
				}
				if r.Slot <= final {
					f.closed[k][b] += float32(wt * float64(v))
				} else {
					open[k][b] += wt * float64(v)
				}
			}
		}
	}
	if final > f.through {
		f.through = final
	}
	for b := range NumBuckets {
		g.bids[b] = float64(f.closed[kindBids][b]) + open[kindBids][b] + float64(f.pending[kindBids][b])
		g.wins[b] = float64(f.closed[kindWins][b]) + open[kindWins][b] + float64(f.pending[kindWins][b])
		g.losses[b] = float64(f.closed[kindLosses][b]) + open[kindLosses][b] + float64(f.pending[kindLosses][b])
		g.mins[b] = float64(f.closed[kindMins][b]) + open[kindMins][b] + float64(f.pending[kindMins][b])
	}
	g.lastDecay = t
	g.dirty = true
}

// Load is a starting bidder's first read of the fleet's counts: the
// segments in the store's indexes over the horizon, coarsest level first
// (the exchanges, then publishers, then formats; as many as the segment
// table holds without evicting any, so the finest are the ones left out), each level's
// estimates published as soon as it is read, so a restarted bidder shades
// from its coarse segments while the finer ones load. Call it before
// serving, with a deadline; then Sync periodically. Returns the segments
// loaded.
func (s *Shader) Load(ctx context.Context, st Store, now time.Time) (SyncStats, error) {
	var stats SyncStats
	if s == nil || s.opts.Fleet == nil {
		return stats, ErrNoFleet
	}
	s.fleetMu.Lock()
	defer s.fleetMu.Unlock()
	began := time.Now()
	s.fleetStarted(st)
	stats, err := s.load(ctx, st, now)
	s.fleetDone(true, now, time.Since(began), stats, err)
	return stats, err
}

func (s *Shader) load(ctx context.Context, st Store, now time.Time) (SyncStats, error) {
	var stats SyncStats
	t := now.UnixNano()
	cur := s.slotOf(now.Unix())
	w := int64(s.opts.Fleet.Slot / time.Second)
	hs := s.slotOf((t - int64(s.opts.Fleet.Horizon)) / 1e9)
	var slots []int64
	for sl := hs; sl <= cur; sl += w {
		slots = append(slots, sl)
	}
	ids, err := st.ShadingSegments(ctx, slots)
	if err != nil {
		return stats, fmt.Errorf("shading: load the fleet's segments: %w", err)
	}
	slices.SortFunc(ids, func(a, b SegmentID) int {
		if la, lb := a.Level(), b.Level(); la != lb {
			return la - lb
		}
		return int(int64(a) - int64(b))
	})
	ids = slices.Compact(ids)
	ids = ids[:min(len(ids), s.opts.MaxSegments)]
	for lo := 0; lo < len(ids); {
		hi := lo
		for hi < len(ids) && ids[hi].Level() == ids[lo].Level() {
			hi++
		}
		level := make([]*segment, 0, hi-lo)
		for _, id := range ids[lo:hi] {
			// A full shard keeps what it holds (coarser segments, or
			// segments this bidder has bid on since it started).
			if g := s.segmentEvict(id, t, false); g != nil {
				level = append(level, g)
			}
		}
		err := s.readFleet(ctx, st, level, t, cur, &stats)
		for _, g := range level {
			g.refresh(t, s)
		}
		if err != nil {
			return stats, err
		}
		stats.Segments += len(level)
		lo = hi
	}
	return stats, nil
}

// ErrInvalidCounts is wrapped by ValidateAdd's and ValidateSlots' errors.
var ErrInvalidCounts = errors.New("shading: invalid counts")

// ValidateAdd checks the arguments of Store.AddShading as every Store must
// before adding any: slot a non-negative unix second, every entry of that
// slot, expires after the slot's start.
func ValidateAdd(slot int64, counts []SlotCounts, expires time.Time) error {
	if slot < 0 {
		return fmt.Errorf("%w: slot %d", ErrInvalidCounts, slot)
	}
	if !expires.After(time.Unix(slot, 0)) {
		return fmt.Errorf("%w: expiry %s not after the slot's start %d", ErrInvalidCounts, expires.UTC().Format(time.RFC3339), slot)
	}
	for i := range counts {
		if counts[i].Slot != slot {
			return fmt.Errorf("%w: entry %d of slot %d in an add to slot %d", ErrInvalidCounts, i, counts[i].Slot, slot)
		}
	}
	return nil
}

// ValidateSlots checks the slots of Store.ReadShading and ShadingSegments:
// non-negative unix seconds.
func ValidateSlots(slots []int64) error {
	for _, sl := range slots {
		if sl < 0 {
			return fmt.Errorf("%w: slot %d", ErrInvalidCounts, sl)
		}
	}
	return nil
}
