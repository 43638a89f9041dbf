package spend

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Adaptive pacing (pacing: even): instead of skipping auctions, a campaign
// with a daily budget bids value / (1 + mu), mu its pacing multiplier.
// Every PacerOptions.Interval the Pacer compares the spend of the interval
// just ended with its target, the budget left at the interval's start
// times the share of the day's remaining traffic the interval had
// (TrafficCurve), and moves 1 + mu by the factor exp(Gain x (spent /
// target - 1)), within [1, 1 + MaxMu]: spend running ahead of the curve
// raises mu (lower bids, fewer and cheaper wins), spend behind lowers it,
// down to 0 (the value). This is the dual descent of a budget-constrained
// bidder (Balseiro and Gur, 2019; Gaitonde et al., 2023, for first-price
// auctions), on a slower time scale than bid shading, which prices the
// paced value. Because the target is the budget left over the traffic
// left, a day that starts behind or ahead corrects itself by its end; the
// daily budget check still stops the campaign at its budget.

// Defaults of PacerOptions.
const (
	DefaultPacerInterval = time.Minute
	DefaultPacerGain     = 0.3
	DefaultPacerMaxMu    = 9
)

// PacerOptions tune a Pacer. The zero value is usable.
type PacerOptions struct {
	// Interval is how often mu moves. Default DefaultPacerInterval.
	Interval time.Duration
	// Gain is the step: 1 + mu is multiplied by exp(Gain x (spent /
	// target - 1)) per interval. Default DefaultPacerGain.
	Gain float64
	// MaxMu bounds mu: bids are at least value / (1 + MaxMu). Default
	// DefaultPacerMaxMu.
	MaxMu float64
}

func (o *PacerOptions) defaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultPacerInterval
	}
	if o.Gain <= 0 {
		o.Gain = DefaultPacerGain
	}
	if o.MaxMu <= 0 {
		o.MaxMu = DefaultPacerMaxMu
	}
}

// Pacer is one campaign's pacing multiplier. Update moves it; Multiplier
// reads it (an atomic load: no lock, no allocation). Safe for concurrent use.
type Pacer struct {
	opts PacerOptions
	mult atomic.Uint64 // math.Float64bits(1 / (1 + mu))

	mu        sync.Mutex
	muVal     float64
	day       int32 // the day of lastSpent (YYYYMMDD)
	lastAt    time.Time
	lastSpent int64
}

// NewPacer returns a Pacer at mu 0.
func NewPacer(opts PacerOptions) *Pacer {
	opts.defaults()
	p := &Pacer{opts: opts}
	p.mult.Store(math.Float64bits(1))
	return p
}

// Multiplier is 1 / (1 + mu): the factor of the campaign's value.
func (p *Pacer) Multiplier() float64 { return math.Float64frombits(p.mult.Load()) }

// Mu is the pacing multiplier mu.
func (p *Pacer) Mu() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.muVal
}

// Update moves mu when an interval has passed since the last move: now,
// the day (YYYYMMDD in the campaign's time zone) starting at dayStart and
// ending at dayEnd, daySpent (micros) of daily, and the traffic curve.
// It reports whether mu moved. Cheap when no interval has passed.
func (p *Pacer) Update(now time.Time, day int32, dayStart, dayEnd time.Time, daySpent, daily int64, tc *TrafficCurve) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if day != p.day {
		// A new day: start its first interval now, keeping mu.
		p.day, p.lastAt, p.lastSpent = day, now, daySpent
		return false
	}
	if now.Sub(p.lastAt) < p.opts.Interval {
		return false
	}
	left := daily - p.lastSpent
	share := tc.Share(p.lastAt, now)
	rest := tc.Share(p.lastAt, dayEnd)
	spent := daySpent - p.lastSpent
	p.lastAt, p.lastSpent = now, daySpent
	if left <= 0 || rest <= 0 {
		return false // the budget is spent (the daily check stops it) or the day is over
	}
	target := float64(left) * share / rest
	if target <= 0 {
		return false
	}
	r := float64(spent)/target - 1
	r = min(r, 3) // a burst counts at most as 4x the target
	m := (1 + p.muVal) * math.Exp(p.opts.Gain*r)
	p.muVal = min(max(m-1, 0), p.opts.MaxMu)
	p.mult.Store(math.Float64bits(1 / (1 + p.muVal)))
	return true
}

// TrafficCurve is the shape of a day's bid opportunities by hour of the
// day (UTC): counted as they come (Count) and folded into the curve at
// the end of each day (decayed: the days before count half as much as
// the last one), so a pacing target follows the traffic of the previous
// days; flat until a whole day has been seen. Safe for concurrent use;
// Count is an atomic add.
type TrafficCurve struct {
	today   [24]atomic.Int64
	curDay  atomic.Int64 // unix day (UTC) of today's counts
	mu      sync.Mutex
	weights atomic.Pointer[[24]float64] // relative rate per hour, mean 1; nil: flat
	hist    [24]float64
}

// Count counts one bid opportunity at now.
func (c *TrafficCurve) Count(now time.Time) {
	u := now.Unix()
	d := u / 86400
	if cur := c.curDay.Load(); cur != d {
		c.roll(d)
	}
	c.today[(u%86400)/3600].Add(1)
}

// roll folds the counts of the day that ended into the curve.
func (c *TrafficCurve) roll(d int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.curDay.Load()
	if cur == d {
		return
	}
	var n [24]float64
	var total float64
	for h := range c.today {
		n[h] = float64(c.today[h].Swap(0))
		total += n[h]
	}
	c.curDay.Store(d)
	if cur == 0 || total == 0 || d != cur+1 {
		return // the first day seen, an empty day, or a gap: not a whole day
	}
	var sum float64
	for h := range c.hist {
		c.hist[h] = c.hist[h]/2 + n[h]/total
		sum += c.hist[h]
	}
	w := new([24]float64)
	for h := range w {
		w[h] = max(c.hist[h]*24/sum, 0.01)
	}
	c.weights.Store(w)
}

// Weights are the relative traffic per UTC hour (mean 1); all 1 while
// flat.
func (c *TrafficCurve) Weights() [24]float64 {
	if w := c.weights.Load(); w != nil {
		return *w
	}
	var flat [24]float64
	for h := range flat {
		flat[h] = 1
	}
	return flat
}

// Share is the expected traffic between from and to, in days of average
// traffic (a whole day is 1); flat, it is their distance in days.
func (c *TrafficCurve) Share(from, to time.Time) float64 {
	if c == nil || !to.After(from) {
		return max(to.Sub(from).Hours()/24, 0)
	}
	w := c.weights.Load()
	if w == nil {
		return to.Sub(from).Hours() / 24
	}
	var s float64
	t := from
	for t.Before(to) {
		u := t.Unix()
		h := (u % 86400) / 3600
		next := time.Unix(u-u%3600+3600, 0)
		if next.After(to) {
			next = to
		}
		s += w[h] * next.Sub(t).Hours() / 24
		t = next
	}
	return s
}
