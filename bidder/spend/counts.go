package spend

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/rtbd/rtbd/rtb"
)

// Counter indexes of Counts: a campaign's auction outcomes, counted in
// memory by each bidder and flushed with its spend (Writer.Count), summed
// fleet-wide by the store.
const (
	// CountBids: bids made (Budgets.Bid).
	CountBids = iota
	// CountWins: bids won, as this bidder learned it (the first accepted
	// win or billing notice of a bid).
	CountWins
	// CountLosses is the first loss counter: loss notices of reason r count
	// in CountLosses + int(r) (rtb.LossReason).
	CountLosses
)

// NumCounts is the number of counters of Counts.
const NumCounts = CountLosses + rtb.NumLossReasons

// Counts are a campaign's lifetime outcome counters, indexed by the Count*
// constants.
type Counts [NumCounts]int64

// Losses is the sum of the loss counters.
func (c *Counts) Losses() int64 {
	var n int64
	for _, v := range c[CountLosses:] {
		n += v
	}
	return n
}

// IsZero reports whether every counter is 0.
func (c *Counts) IsZero() bool { return *c == Counts{} }

// countNames are the names stores keep the counters under (a Redis hash
// field, an Aerospike bin: at most 15 bytes): "b", "w", then "l" and the
// loss reason's code, "lo" for rtb.LossOther, "lx" for
// rtb.LossExchangeSpecific.
var countNames = func() (n [NumCounts]string) {
	n[CountBids], n[CountWins] = "b", "w"
	for r := range rtb.NumLossReasons {
		switch lr := rtb.LossReason(r); lr {
		case rtb.LossOther:
			n[CountLosses+r] = "lo"
		case rtb.LossExchangeSpecific:
			n[CountLosses+r] = "lx"
		default:
			n[CountLosses+r] = "l" + strconv.FormatInt(lr.Code(), 10)
		}
	}
	return n
}()

// CountName returns the name a store keeps counter i under. The names are
// stable: they are what the stores hold.
func CountName(i int) string { return countNames[i] }

// CountIndex returns the counter named name, or -1.
func CountIndex(name string) int {
	for i, n := range countNames {
		if n == name {
			return i
		}
	}
	return -1
}

func validateCounts(d *Delta) error {
	if d.Counts == nil {
		return nil
	}
	if len(d.Notices) > 0 {
		return fmt.Errorf("a delta with notices cannot carry counts")
	}
	for i, v := range d.Counts {
		if v < 0 {
			return fmt.Errorf("count %s: negative", CountName(i))
		}
	}
	return nil
}

// campCounts is one campaign's counters in a Writer: pending (not drained
// into a batch) and unconfirmed (not yet confirmed by the store: pending
// and in flight), and the fleet's as last learned.
type campCounts struct {
	pending [NumCounts]atomic.Int64
	unconf  [NumCounts]atomic.Int64
	any     atomic.Int64 // sum of pending (may dip below 0 briefly)
	fleet   atomic.Pointer[Counts]
}

// Count adds one to counter (a Count* index) of campaignID. Counts are kept
// in memory and flushed with the campaign's spend, as deltas without
// notices (see Delta.Counts): no store write per count. No allocation for a
// campaign already seen. It returns ErrClosed once Close has begun and an
// error wrapping ErrInvalid for a bad id or counter; nothing is counted
// then. Counts are not journaled: a crash loses the ones not yet flushed.
func (w *Writer) Count(campaignID string, counter int) error {
	if counter < 0 || counter >= NumCounts || !ValidID(campaignID) {
		return fmt.Errorf("%w: count: campaign %q, counter %d", ErrInvalid, campaignID, counter)
	}
	w.active.Add(1)
	defer w.active.Add(-1)
	if w.closed.Load() {
		return ErrClosed
	}
	w.campaign(campaignID).count(counter)
	return nil
}

func (cs *campState) count(counter int) {
	cs.counts.unconf[counter].Add(1)
	cs.counts.pending[counter].Add(1)
	cs.counts.any.Add(1)
}

// Counts returns campaignID's counters: the fleet's as last learned (a
// flush or a read) plus this bidder's not yet confirmed.
func (w *Writer) Counts(campaignID string) Counts {
	var c Counts
	cs := w.lookup(campaignID)
	if cs == nil {
		return c
	}
	if f := cs.counts.fleet.Load(); f != nil {
		c = *f
	}
	for i := range c {
		c[i] += cs.counts.unconf[i].Load()
	}
	return c
}

// drainCounts moves cs's pending counters into a delta (without notices,
// micros or impressions), or reports false when there are none. Its Total
// from the store is used for the counters only (apply).
func (w *Writer) drainCounts(cs *campState) (Delta, int32, bool) {
	if cs.counts.any.Load() == 0 {
		return Delta{}, 0, false
	}
	var c Counts
	var sum int64
	for i := range c {
		c[i] = cs.counts.pending[i].Swap(0)
		sum += c[i]
	}
	cs.counts.any.Add(-sum)
	if sum == 0 {
		return Delta{}, 0, false
	}
	// The campaign's latest day seen (the counters are lifetime only; the
	// day just makes a valid delta), else today.
	var day int32
	if dc := cs.day.Load(); dc != nil {
		day = dc.day
	} else {
		day = dayOf(w.opts.Now(), cs.location())
	}
	return Delta{ID: w.nextID(), Campaign: cs.id, Day: dayString(day), Origin: w.opts.InstanceID, Counts: &c}, day, true
}

// confirmCounts records that the store has d's counts, with t the store's
// counters after the add.
func (cs *campState) confirmCounts(d *Delta) {
	if d.Counts == nil {
		return
	}
	for i, v := range d.Counts {
		if v != 0 {
			cs.counts.unconf[i].Add(-v)
		}
	}
}

// mergeFleetCounts keeps the larger of each counter (they only grow, and
// flushes may return out of order).
func (cs *campState) mergeFleetCounts(t *Counts) {
	if t.IsZero() {
		return
	}
	for {
		old := cs.counts.fleet.Load()
		n := *t
		if old != nil {
			for i := range n {
				n[i] = max(n[i], old[i])
			}
		}
		if cs.counts.fleet.CompareAndSwap(old, &n) {
			return
		}
	}
}
