package spend

import (
	"sync/atomic"
	"time"
)

// Defaults of the exposure options (BudgetOptions).
const (
	// DefaultExposureWindow is how long a bid counts as outstanding when
	// it is not billed (config spend.exposure_window).
	DefaultExposureWindow = 5 * time.Minute
	// DefaultWinRateFloor is the lowest win rate exposure assumes
	// (config spend.win_rate_floor).
	DefaultWinRateFloor = 0.01
	// winRatePrior is the number of pseudo-bids, all won, added to a
	// campaign's measured bids and bills: a campaign this bidder has just
	// started bidding on is assumed to win every bid until its own bids
	// say otherwise.
	winRatePrior = 10
)

// expBuckets is the number of time buckets of an exposure ring: a bid
// leaves the window within one bucket (window/expBuckets) of its end.
const expBuckets = 16

// exposure counts a campaign's bids made by this bidder and the bills it
// accepted, in a ring of expBuckets time buckets spanning the exposure
// window: fixed memory per campaign whatever the bid rate, no allocation,
// atomics only. A bucket is reused when its time comes round again; counts
// racing with that reset may be lost (a few per bucket and window), which
// only makes the estimate approximate.
type exposure struct {
	width   atomic.Int64 // bucket width (ns); 0 until this bidder's first bid on the campaign
	buckets [expBuckets]expBucket
}

type expBucket struct {
	slot   atomic.Int64 // unix nanos / width of the counts held
	bids   atomic.Int64
	bills  atomic.Int64
	micros atomic.Int64 // sum of the bids' charges
}

// bucket returns the bucket of at, reset when it held an older slot, or
// nil when at is older than the slot the bucket holds (out of the window).
func (e *exposure) bucket(at int64, width int64) *expBucket {
	s := at / width
	b := &e.buckets[uint64(s)%expBuckets]
	old := b.slot.Load()
	if old == s {
		return b
	}
	if old > s {
		return nil
	}
	if b.slot.CompareAndSwap(old, s) {
		b.bids.Store(0)
		b.bills.Store(0)
		b.micros.Store(0)
	}
	return b
}

// bid counts one bid of charge micros at at.
func (e *exposure) bid(at time.Time, micros int64, window time.Duration) {
	w := e.width.Load()
	if w == 0 {
		w = max(int64(window/expBuckets), 1)
		e.width.Store(w)
	}
	if b := e.bucket(at.UnixNano(), w); b != nil {
		b.bids.Add(1)
		b.micros.Add(micros)
	}
}

// billed counts one accepted bill at at (nothing before this bidder's
// first bid on the campaign).
func (e *exposure) billed(at time.Time) {
	w := e.width.Load()
	if w == 0 {
		return
	}
	if b := e.bucket(at.UnixNano(), w); b != nil {
		b.bills.Add(1)
	}
}

// sums adds up the buckets within the window ending at now; older is the
// bids of the window before the current bucket (bids old enough to have
// been billed, with notices that take less than a bucket).
func (e *exposure) sums(now time.Time) (bids, older, bills, micros int64) {
	w := e.width.Load()
	if w == 0 {
		return 0, 0, 0, 0
	}
	s := now.UnixNano() / w
	for i := range e.buckets {
		b := &e.buckets[i]
		sl := b.slot.Load()
		if sl <= s-expBuckets || sl > s {
			continue
		}
		n := b.bids.Load()
		bids += n
		if sl < s {
			older += n
		}
		bills += b.bills.Load()
		micros += b.micros.Load()
	}
	return bids, older, bills, micros
}

// estimate is the campaign's exposure at now: its outstanding bids (bids in
// the window minus bills in the window, at least 0) times its win rate
// (bills in the window per bid of the window's older buckets, with
// winRatePrior won pseudo-bids, within [floor, 1]: bids of the current
// bucket are too recent to count as lost) times its average bid charge in
// the window.
func (e *exposure) estimate(now time.Time, floor float64) (micros int64, outstanding int64, winRate float64) {
	bids, older, bills, sum := e.sums(now)
	if bids <= 0 {
		return 0, 0, 1
	}
	outstanding = max(bids-bills, 0)
	winRate = min(max(float64(bills+winRatePrior)/float64(older+winRatePrior), floor), 1)
	avg := float64(sum) / float64(bids)
	return int64(float64(outstanding)*winRate*avg + 0.5), outstanding, winRate
}

// Bid records that this bidder bid for campaignID at now, at most charge
// micros (the bid's price per impression, in the campaign's currency):
// until it is billed or leaves the exposure window, Check counts it as
// exposure (see Budgets). Call it for a bid Check allowed; a campaign
// Check has never seen is ignored. It also counts the bid in the
// campaign's CountBids (flushed with its spend). No allocation.
func (b *Budgets) Bid(campaignID string, charge int64, now time.Time) {
	cs := b.w.lookup(campaignID)
	if cs == nil {
		return
	}
	cs.count(CountBids)
	if b.opts.ExposureWindow > 0 {
		cs.exp.bid(now, charge, b.opts.ExposureWindow)
	}
}
