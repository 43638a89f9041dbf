package spend

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rtbd/rtbd/bidder/campaign"
)

// Pacing is how a campaign spends its daily budget.
type Pacing uint8

const (
	// PacingEven spreads the daily budget over the day's traffic: the
	// campaign bids value / (1 + mu), its pacing multiplier (see Pacer and
	// Budgets.PaceMultiplier) raised when spend runs ahead of the target
	// curve and lowered when behind; it never skips an auction for pacing.
	PacingEven Pacing = iota
	// PacingASAP bids whenever budget is left.
	PacingASAP
)

// CampaignBudget is what the spend package needs to know of a campaign.
// It is a comparable value; build it once per campaign reload (FromCampaign).
type CampaignBudget struct {
	ID string
	// Loc is the campaign's time zone: its days (daily budget, day keys in
	// the store) run from midnight to midnight there. nil means UTC.
	Loc *time.Location
	// DailyMicros and TotalMicros are the budgets in micros of the
	// campaign's currency; 0 means unlimited.
	DailyMicros, TotalMicros int64
	Pacing                   Pacing
	// FreqCap is the most impressions per user per FreqPeriod; 0 = no cap.
	// Windows are fixed and aligned to the unix epoch (see FreqOK).
	FreqCap    int
	FreqPeriod time.Duration
}

func (c *CampaignBudget) location() *time.Location {
	if c.Loc == nil {
		return time.UTC
	}
	return c.Loc
}

// FromCampaign builds the CampaignBudget of a parsed campaign.
func FromCampaign(c *campaign.Campaign) CampaignBudget {
	b := CampaignBudget{
		ID:          c.ID,
		Loc:         c.TimeZone,
		DailyMicros: c.DailyBudgetMicros,
		TotalMicros: c.TotalBudgetMicros,
		FreqCap:     c.FrequencyCap.Impressions,
		FreqPeriod:  c.FrequencyCap.Period,
	}
	if c.Pacing == campaign.PacingASAP {
		b.Pacing = PacingASAP
	}
	return b
}

// Reason says why Check refused a bid.
type Reason uint8

// Values of Reason.
const (
	ReasonNone        Reason = iota // bidding
	ReasonDailyBudget               // today's spend reached the daily budget
	ReasonTotalBudget               // lifetime spend reached the total budget
	ReasonPacing                    // not answered any more: even pacing lowers the price (PaceMultiplier) instead
	// ReasonUnread: a budgeted campaign whose fleet totals this bidder has
	// not read yet (BudgetOptions.WaitForTotals), paused until it has.
	ReasonUnread
)

var reasonNames = [...]string{"ok", "daily_budget", "total_budget", "pacing", "totals_unread"}

// String is a fixed, metric-safe name ("ok", "daily_budget", ...).
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Defaults of BudgetOptions.
const (
	DefaultPacingSlack = 0.01
	DefaultPacingWidth = 0.05
)

// BudgetOptions tunes Budgets. The zero value is usable.
type BudgetOptions struct {
	// PacingSlack is added to the elapsed fraction of the day: even pacing
	// lets spend run up to daily * (elapsed + PacingSlack) before
	// throttling. Default 0.01 (config spend.pacing_slack).
	PacingSlack float64
	// PacingWidth is the overshoot, as a fraction of the daily budget, at
	// which even pacing's bid probability reaches 0; it falls linearly from
	// 1 at the curve. Default 0.05 (config spend.pacing_width).
	PacingWidth float64
	// Rand returns a uniform float in [0, 1) for pacing's throttle; it must
	// be safe for concurrent use if Check is called concurrently. Default
	// math/rand/v2's Float64. Tests pass a seeded source.
	Rand func() float64
	// WaitForTotals pauses every budgeted campaign (daily or total budget)
	// until this bidder has read its fleet totals from the store (Check
	// answers ReasonUnread), and starts the background loop that reads
	// them (see ReadTotals). Unbudgeted campaigns are not paused. A bidder
	// sets it; off by default, when Check trusts local spend until the
	// first refresh.
	WaitForTotals bool
	// ExposureWindow is how long one of this bidder's bids counts as
	// outstanding while it is not billed (see Budgets: exposure). Default
	// 5m (config spend.exposure_window); negative disables exposure.
	ExposureWindow time.Duration
	// WinRateFloor is the lowest win rate exposure assumes, in (0, 1].
	// Default 0.01 (config spend.win_rate_floor).
	WinRateFloor float64
	// Pacer tunes even pacing's multiplier (see Pacer). The zero value is
	// its defaults.
	Pacer PacerOptions
}

// Budgets answers, on the bid path, whether a campaign may bid: budgets,
// pacing and frequency caps, from the Writer's memory only (no store round
// trip, no allocation once a campaign has been seen).
//
// What is fleet-wide and what is local: spend is the fleet total as last
// returned by a flush or a refresh read (at most about one flush interval
// old) plus this bidder's own unconfirmed spend, which is exact. Frequency
// counts are this bidder's own (exact) plus, for users this bidder has
// served in the window, the fleet count returned by its last flush of that
// user: what other bidders served the user since then, or at all when this
// bidder has never served the user in the window, is not seen. So a user
// gets at most FreqCap impressions per window from each bidder that serves
// them, fewer as bidders learn each other's counts: with B bidders the
// bound is B x FreqCap per window, and a user pinned to one bidder (the
// usual case with sticky load balancing) gets exactly FreqCap.
//
// Exposure: billing notices arrive seconds to minutes after the bid, so
// Check also counts, as spend, this bidder's outstanding bids on the
// campaign (bids recorded by Bid within ExposureWindow minus bills accepted
// within it) times the campaign's recent win rate (bills in the window per
// bid older than the window's current bucket, within [WinRateFloor, 1])
// times its average bid charge in the window. See the package
// documentation for what it bounds and what it does not.
//
// Safe for concurrent use.
type Budgets struct {
	w    *Writer
	opts BudgetOptions
	wake chan struct{} // the gate loop's (WaitForTotals)

	traffic TrafficCurve // this bidder's bid opportunities by hour (CountOpportunity)
	pacers  sync.Map     // campaign id -> *Pacer (even pacing with a daily budget)
}

// NewBudgets returns the budget view of w.
func NewBudgets(w *Writer, opts BudgetOptions) *Budgets {
	if opts.PacingSlack == 0 {
		opts.PacingSlack = DefaultPacingSlack
	}
	if opts.PacingWidth <= 0 {
		opts.PacingWidth = DefaultPacingWidth
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.ExposureWindow == 0 {
		opts.ExposureWindow = DefaultExposureWindow
	}
	if !(opts.WinRateFloor > 0 && opts.WinRateFloor <= 1) {
		opts.WinRateFloor = DefaultWinRateFloor
	}
	b := &Budgets{w: w, opts: opts, wake: make(chan struct{}, 1)}
	if opts.WaitForTotals {
		b.startGate()
	}
	return b
}

// register returns c's state, creating it or updating its settings when
// they changed (allocates only then).
func (b *Budgets) register(c *CampaignBudget) *campState {
	cs := b.w.lookup(c.ID)
	if cs == nil {
		cc := *c
		return b.w.insert(c.ID, &cc)
	}
	if old := cs.set.Load(); old == nil || *old != *c {
		cc := *c
		cs.set.Store(&cc)
	}
	if !cs.active.Load() {
		cs.active.Store(true)
	}
	return cs
}

// Check reports whether campaign c may bid at now, and if not why: the
// total budget, the daily budget (today in c's time zone), or
// (WaitForTotals) fleet totals not read yet. Spend is the
// last known fleet total plus this bidder's unconfirmed spend plus its
// exposure (see Budgets). A campaign seen for the first time is registered
// (its totals are read at once under WaitForTotals, else by the Writer's
// refresh loop within one flush interval, until when only local spend is
// known).
func (b *Budgets) Check(c CampaignBudget, now time.Time) (ok bool, reason Reason) {
	cs := b.register(&c)
	ok, reason, _ = b.check(cs, &c, now, true)
	switch reason {
	case ReasonNone:
		b.w.m.checkOK.Inc()
	case ReasonDailyBudget:
		b.w.m.checkDaily.Inc()
	case ReasonTotalBudget:
		b.w.m.checkTotal.Inc()
	case ReasonPacing:
		b.w.m.checkPacing.Inc()
	case ReasonUnread:
		b.w.m.checkUnread.Inc()
	}
	return ok, reason
}

// check computes the answer; with draw false it never throttles at random
// and reports the bid probability instead.
func (b *Budgets) check(cs *campState, c *CampaignBudget, now time.Time, draw bool) (bool, Reason, float64) {
	loc := c.location()
	t := now.In(loc)
	y, mo, d := t.Date()
	today := int32(y*10000 + int(mo)*100 + d)
	if !c.budgeted() {
		return true, ReasonNone, 1
	}
	if b.opts.WaitForTotals && cs.fleet.Load() == nil {
		b.wakeGate()
		return false, ReasonUnread, 0
	}
	daySpent, totalSpent := cs.spent(today)
	if e, _, _ := cs.exp.estimate(now, b.opts.WinRateFloor); e > 0 {
		daySpent += e
		totalSpent += e
	}
	if c.TotalMicros > 0 && totalSpent >= c.TotalMicros {
		return false, ReasonTotalBudget, 0
	}
	if c.DailyMicros <= 0 {
		return true, ReasonNone, 1
	}
	if daySpent >= c.DailyMicros {
		return false, ReasonDailyBudget, 0
	}
	// Even pacing lowers the price (PaceMultiplier), it skips no auction.
	_ = draw
	return true, ReasonNone, 1
}

// CountOpportunity counts a bid opportunity (a bid request) at now: the
// traffic curve even pacing's target follows. An atomic add.
func (b *Budgets) CountOpportunity(now time.Time) { b.traffic.Count(now) }

// PaceMultiplier is the factor of campaign c's value at now: 1 / (1 + mu)
// for even pacing with a daily budget (its Pacer moved first when an
// interval has passed: see Pacer), 1 otherwise and for a campaign Check
// has not seen yet. The spend it compares with the target is the fleet's
// as last known plus this bidder's unconfirmed. No allocation once the
// campaign's Pacer exists.
func (b *Budgets) PaceMultiplier(c *CampaignBudget, now time.Time) float64 {
	if c.Pacing != PacingEven || c.DailyMicros <= 0 {
		return 1
	}
	cs := b.w.lookup(c.ID)
	if cs == nil {
		return 1
	}
	v, ok := b.pacers.Load(c.ID)
	if !ok {
		v, _ = b.pacers.LoadOrStore(c.ID, NewPacer(b.opts.Pacer))
	}
	p := v.(*Pacer)
	loc := c.location()
	y, mo, d := now.In(loc).Date()
	today := int32(y*10000 + int(mo)*100 + d)
	daySpent, _ := cs.spent(today)
	start := time.Date(y, mo, d, 0, 0, 0, 0, loc)
	p.Update(now, today, start, time.Date(y, mo, d+1, 0, 0, 0, 0, loc), daySpent, c.DailyMicros, &b.traffic)
	return p.Multiplier()
}

// pacingTarget is even pacing's target spend of c by now: the daily
// budget times the share of the day's traffic gone.
func (b *Budgets) pacingTarget(c *CampaignBudget, now time.Time) int64 {
	loc := c.location()
	y, mo, d := now.In(loc).Date()
	start, end := time.Date(y, mo, d, 0, 0, 0, 0, loc), time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
	all := b.traffic.Share(start, end)
	if all <= 0 {
		return 0
	}
	return int64(float64(c.DailyMicros) * b.traffic.Share(start, now) / all)
}

// ThrottleProbability is the bid probability of pacing by throttling (the
// way even pacing worked before its multiplier; the harness compares the
// two): 1
// while spent is under daily x (frac + slack), frac the elapsed fraction
// of the day, then falling linearly to 0 at width x daily above that.
func ThrottleProbability(daily, spent int64, frac, slack, width float64) float64 {
	allowed := float64(daily) * (frac + slack)
	if float64(spent) < allowed {
		return 1
	}
	over := (float64(spent) - allowed) / (float64(daily) * width)
	return max(0, 1-over)
}

// dayFraction is the elapsed fraction of the day y-mo-d in loc at now
// (days of 23 or 25 hours at DST changes are handled).
func dayFraction(now time.Time, y int, mo time.Month, d int, loc *time.Location) float64 {
	start := time.Date(y, mo, d, 0, 0, 0, 0, loc)
	end := time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
	f := float64(now.Sub(start)) / float64(end.Sub(start))
	return min(max(f, 0), 1)
}

// spent is today's and the lifetime spend as this bidder knows them.
func (cs *campState) spent(today int32) (day, total int64) {
	// A confirmed flush updates the fleet view, then takes its counts out
	// of the unconfirmed ones. Reading the unconfirmed counts between two
	// loads of the same fleet view pairs them consistently: a flush that
	// lands in between changes the view, and the read is taken again.
	for {
		f := cs.fleet.Load()
		uTotal, uDay := cs.unflTotal.Load(), int64(0)
		if dc := cs.day.Load(); dc != nil && dc.day == today {
			uDay = dc.micros.Load()
		}
		if cs.fleet.Load() != f {
			continue
		}
		day, total = uDay, uTotal
		if f != nil {
			total += f.totalMicros
			if f.day == today {
				day += f.dayMicros
			}
		}
		return day, total
	}
}

// FreqOK reports whether userID may see campaign c once more at now: its
// count in the current cap window (fixed windows of c.FreqPeriod aligned to
// the unix epoch) is below c.FreqCap. True when c has no cap or userID is
// empty. The count is this bidder's own plus the fleet count learned at its
// last flush of that user (see Budgets for the bound). No allocation.
func (b *Budgets) FreqOK(c CampaignBudget, userID string, now time.Time) bool {
	if c.FreqCap <= 0 || c.FreqPeriod <= 0 || userID == "" {
		return true
	}
	n := b.FreqCount(c, userID, now)
	if n < int64(c.FreqCap) {
		b.w.m.freqOK.Inc()
		return true
	}
	b.w.m.freqCapped.Inc()
	return false
}

// FreqCount is the impressions of userID for c in the current cap window as
// this bidder knows them (see FreqOK).
func (b *Budgets) FreqCount(c CampaignBudget, userID string, now time.Time) int64 {
	if c.FreqPeriod <= 0 || userID == "" {
		return 0
	}
	cs := b.w.lookup(c.ID)
	if cs == nil {
		return 0
	}
	win, _ := windowOf(now, c.FreqPeriod)
	sh := &cs.shards[hashString(userID)&cs.mask]
	sh.mu.Lock()
	var n int64
	if e := sh.freq[freqKey{user: userID, window: win}]; e != nil {
		n = e.fleet + e.pending + e.inflight
	}
	sh.mu.Unlock()
	return n
}

// Status is a campaign's budget state for the admin endpoint. Money in
// micros of the campaign's currency.
type Status struct {
	Campaign string `json:"campaign"`
	// Day is today in the campaign's time zone.
	Day string `json:"day"`
	// DayMicros and TotalMicros are the spend: fleet + local. Check adds
	// ExposureMicros to both.
	DayMicros   int64 `json:"day_micros"`
	TotalMicros int64 `json:"total_micros"`
	// ExposureMicros is this bidder's expected charge of its outstanding
	// bids: OutstandingBids x WinRate x their average charge (see Budgets).
	ExposureMicros  int64   `json:"exposure_micros"`
	OutstandingBids int64   `json:"outstanding_bids"`
	WinRate         float64 `json:"win_rate"`
	// TotalsRead is false until this bidder has learned the campaign's
	// fleet totals (a read or a flush); with WaitForTotals a budgeted
	// campaign does not bid until then (Reason "totals_unread").
	TotalsRead bool `json:"totals_read"`
	// Fleet* are the fleet totals as last read (FleetAt; zero if never).
	FleetDayMicros   int64     `json:"fleet_day_micros"`
	FleetTotalMicros int64     `json:"fleet_total_micros"`
	FleetAt          time.Time `json:"fleet_at"`
	// Unflushed* are this bidder's accepted spend not yet confirmed by the store.
	UnflushedDayMicros   int64  `json:"unflushed_day_micros"`
	UnflushedTotalMicros int64  `json:"unflushed_total_micros"`
	DailyBudgetMicros    int64  `json:"daily_budget_micros"`
	TotalBudgetMicros    int64  `json:"total_budget_micros"`
	Pacing               string `json:"pacing"`
	// PacingAllowedMicros is even pacing's target spend by now: the daily
	// budget times the share of the day's traffic gone (0 for asap).
	PacingAllowedMicros int64 `json:"pacing_allowed_micros"`
	// PacingMultiplier is even pacing's factor of the campaign's value,
	// 1 / (1 + mu) (1 for asap and without a daily budget).
	PacingMultiplier float64 `json:"pacing_multiplier"`
	// BidProbability is 1 when bidding, 0 when stopped.
	BidProbability float64 `json:"bid_probability"`
	Bidding        bool    `json:"bidding"`
	// Reason is why not bidding, or throttled ("ok" otherwise).
	Reason string `json:"reason"`
	// Retrying is true when a failed flush waits for its retry.
	Retrying   bool          `json:"retrying"`
	FreqCap    int           `json:"freq_cap"`
	FreqPeriod time.Duration `json:"freq_period_ns"`
}

// Status reports c's budget state at now without drawing from Rand.
func (b *Budgets) Status(c CampaignBudget, now time.Time) Status {
	cs := b.register(&c)
	loc := c.location()
	y, mo, d := now.In(loc).Date()
	today := int32(y*10000 + int(mo)*100 + d)
	day, total := cs.spent(today)
	s := Status{
		Campaign: c.ID, Day: dayString(today),
		DayMicros: day, TotalMicros: total,
		UnflushedTotalMicros: cs.unflTotal.Load(),
		DailyBudgetMicros:    c.DailyMicros, TotalBudgetMicros: c.TotalMicros,
		Pacing:   "even",
		Retrying: cs.hasRetry.Load(),
		FreqCap:  c.FreqCap, FreqPeriod: c.FreqPeriod,
	}
	if c.Pacing == PacingASAP {
		s.Pacing = "asap"
	} else if c.DailyMicros > 0 {
		s.PacingAllowedMicros = b.pacingTarget(&c, now)
	}
	s.PacingMultiplier = b.PaceMultiplier(&c, now)
	if f := cs.fleet.Load(); f != nil {
		s.FleetTotalMicros = f.totalMicros
		if f.day == today {
			s.FleetDayMicros = f.dayMicros
		}
		s.FleetAt = time.Unix(0, f.at)
		s.TotalsRead = true
	}
	s.ExposureMicros, s.OutstandingBids, s.WinRate = cs.exp.estimate(now, b.opts.WinRateFloor)
	if dc := cs.day.Load(); dc != nil && dc.day == today {
		s.UnflushedDayMicros = dc.micros.Load()
	}
	ok, r, p := b.check(cs, &c, now, false)
	s.Bidding, s.Reason, s.BidProbability = ok, r.String(), p
	return s
}
