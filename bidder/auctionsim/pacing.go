package auctionsim

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/internal/splitmix"
)

const peakToTrough = 5.0 // the traffic's peak over its trough

// PacingRun is one way of pacing on the measured day.
type PacingRun struct {
	Name        string
	Spend       float64 // currency units (CPM / 1000 per impression)
	Impressions int
	Hourly      [24]float64
	// MaxHourlyError is the largest |hourly spend - target| / target,
	// the target being the budget times the hour's share of the day's traffic.
	MaxHourlyError float64
	// Overshoot is the most the day's spend went above the budget, and
	// MaxFlushCharges the most charged within one flush interval.
	Overshoot, MaxFlushCharges float64
	MuEnd                      float64
}

// PacingResult is a pacing simulation's outcome.
type PacingResult struct {
	Config         Config
	Budget         float64
	Target         [24]float64
	Adaptive, Even PacingRun
}

type pacedBidder struct {
	run       PacingRun
	sh        *shading.Shader
	pacer     *spend.Pacer // nil: throttled
	rng       splitmix.Rand
	daySpent  float64 // as charged
	seenSpent float64 // as of the last flush
}

func newPacedBidder(name string, pacer *spend.Pacer, seed uint64) *pacedBidder {
	sr := splitmix.Rand{S: splitmix.Mix(seed)}
	sh := shading.New(shading.Options{HalfLife: 30 * time.Minute, Rand: sr.Float64,
		Exchanges: []shading.Exchange{{LossNotices: true, NoticeWait: noticeWait}}})
	return &pacedBidder{run: PacingRun{Name: name}, sh: sh, pacer: pacer, rng: splitmix.Rand{S: seed}}
}

// RunPacing plays cfg's pacing days, the spend seen as of the last flush
// (every second), two ways side by side on the same auctions: adaptive
// (bid value / (1 + mu), spend.Pacer, its target following the traffic
// curve of the previous days) and throttled (bid the value with
// spend.ThrottleProbability against the clock's fraction of the day).
func RunPacing(cfg Config) *PacingResult {
	res := &PacingResult{Config: cfg}
	// The budget: a share of what shaded bids at the value spend in a day
	// (the default landscape's learn and measure, no shift, loss notices).
	probeCfg := Defaults()
	probeCfg.Value, probeCfg.Seed, probeCfg.Shift, probeCfg.LossNotices = cfg.Value, cfg.Seed, 0, true
	probe := Run(probeCfg).Total.Shaded
	res.Budget = cfg.PacingBudget * (probe.Spend / float64(probe.Auctions) / 1000) * float64(cfg.PacingAuctions)
	budgetMicros := int64(res.Budget * 1e6)

	var tc spend.TrafficCurve
	bidders := []*pacedBidder{newPacedBidder("adaptive (value / (1 + mu))", spend.NewPacer(spend.PacerOptions{}), cfg.Seed+1),
		newPacedBidder("throttled even", nil, cfg.Seed+2)}
	rng := splitmix.Rand{S: cfg.Seed}
	start := time.Unix(1_800_000_000-1_800_000_000%86400, 0) // a UTC midnight
	// Auctions per second at rate 1: the day's mean traffic is (1 + peakToTrough) / 2.
	perSec := float64(cfg.PacingAuctions) / 86400 / ((1 + peakToTrough) / 2)
	var acc, tsum float64
	var hourTraffic [24]float64 // of the measured day, and tsum their total
	for day := range cfg.PacingDays {
		measured := day == cfg.PacingDays-1
		dayStart := start.Add(time.Duration(day) * 24 * time.Hour)
		for _, pb := range bidders {
			pb.daySpent, pb.seenSpent = 0, 0
		}
		for sec := range 86400 {
			now := dayStart.Add(time.Duration(sec) * time.Second)
			for _, pb := range bidders { // a flush every second
				if measured {
					pb.run.MaxFlushCharges = max(pb.run.MaxFlushCharges, pb.daySpent-pb.seenSpent)
				}
				pb.seenSpent = pb.daySpent
				pb.sh.Refresh(now)
				if pb.pacer != nil {
					pb.pacer.Update(now, int32(day+1), dayStart, dayStart.Add(24*time.Hour), int64(pb.seenSpent*1e6), budgetMicros, &tc)
				}
			}
			// The relative auction rate: 1 at midnight, peakToTrough at noon.
			rate := (1 + (peakToTrough-1)/2*(1-math.Cos(2*math.Pi*float64(sec)/86400))) * perSec
			if measured {
				hourTraffic[sec/3600] += rate
				tsum += rate
			}
			acc += rate
			for acc >= 1 {
				acc--
				tc.Count(now)
				i, d := draw(1, &rng)
				for _, pb := range bidders {
					pb.auction(now, segments[i], micros(cfg.Value), max(d, segments[i].Floor), budgetMicros, float64(sec)/86400, measured)
				}
			}
		}
	}
	for h := range res.Target {
		res.Target[h] = res.Budget * hourTraffic[h] / tsum
		for _, pb := range bidders {
			pb.run.MaxHourlyError = max(pb.run.MaxHourlyError, math.Abs(pb.run.Hourly[h]-res.Target[h])/res.Target[h])
		}
	}
	for _, pb := range bidders {
		pb.run.Spend, pb.run.Overshoot = pb.daySpent, max(pb.daySpent-res.Budget, 0)
		if pb.pacer != nil {
			pb.run.MuEnd = pb.pacer.Mu()
		}
	}
	res.Adaptive, res.Even = bidders[0].run, bidders[1].run
	return res
}

// auction is one auction for pb: the budget check on the spend seen, the
// pacing, shading, the outcome and its notices.
func (pb *pacedBidder) auction(now time.Time, s Segment, value int64, tie float64, budget int64, frac float64, measured bool) {
	seen := int64(pb.seenSpent * 1e6)
	if seen >= budget {
		return
	}
	v := value
	if pb.pacer != nil {
		v = int64(float64(value) * pb.pacer.Multiplier())
	} else if p := spend.ThrottleProbability(budget, seen, frac, spend.DefaultPacingSlack, spend.DefaultPacingWidth); p < 1 && pb.rng.Float64() >= p {
		return
	}
	id, floor := s.id(), micros(s.Floor)
	if v < floor {
		return
	}
	d := pb.sh.Price(id, shading.FirstPrice, true, v, floor)
	pb.sh.Bid(id, d.Price, now)
	price := float64(d.Price) / 1e6
	won := price >= tie
	pb.sh.Observe(id, d.Price, now, won, micros(tie), true, now)
	if won {
		pb.daySpent += price / 1000
		if measured {
			pb.run.Impressions++
			pb.run.Hourly[now.Unix()%86400/3600] += price / 1000
		}
	}
}

// Print writes r as a table.
func (r *PacingResult) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "pacing: %d days of about %d auctions, traffic %.0fx peak to trough, daily budget %.2f (%.0f%% of bidding the shaded value everywhere), day %d measured\n",
		c.PacingDays, c.PacingAuctions, peakToTrough, r.Budget, 100*c.PacingBudget, c.PacingDays)
	fmt.Fprintf(w, "%-28s %10s %9s %12s %9s %10s %10s %8s\n", "pacing", "spend", "of budget", "impressions", "cpm paid", "max hr err", "overshoot", "mu")
	for _, p := range []PacingRun{r.Adaptive, r.Even} {
		fmt.Fprintf(w, "%-28s %10.3f %8.2f%% %12d %9.3f %9.1f%% %10.4f %8.3f\n", p.Name, p.Spend, 100*p.Spend/r.Budget, p.Impressions,
			1000*p.Spend/float64(max(p.Impressions, 1)), 100*p.MaxHourlyError, p.Overshoot, p.MuEnd)
	}
	fmt.Fprintf(w, "impressions per unit of spend: adaptive %+.1f%% against throttled\n", 100*(r.ImpressionGain()-1))
	fmt.Fprintf(w, "%-6s %10s %10s %10s\n", "hour", "target", "adaptive", "throttled")
	for h := range r.Target {
		fmt.Fprintf(w, "%-6d %10.3f %10.3f %10.3f\n", h, r.Target[h], r.Adaptive.Hourly[h], r.Even.Hourly[h])
	}
}

// ImpressionGain is the adaptive run's impressions per unit of spend over
// the throttled run's.
func (r *PacingResult) ImpressionGain() float64 {
	a := float64(r.Adaptive.Impressions) / r.Adaptive.Spend
	e := float64(r.Even.Impressions) / r.Even.Spend
	return a / e
}
