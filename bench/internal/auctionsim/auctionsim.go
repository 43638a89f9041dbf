package auctionsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/internal/splitmix"
)

// Segment is one segment of the simulated exchange.
type Segment struct {
	Name string
	// Median and Sigma: the highest competing bid is Median x exp(Sigma x N(0,1)), CPM.
	Median, Sigma float64
	// Floor is the segment's floor, CPM.
	Floor float64
	// Weight is its share of the auctions (relative).
	Weight float64
}

// Config is one simulation.
type Config struct {
	Segments []Segment
	// Value is the bidder's value of an impression, CPM.
	Value float64
	// Learn auctions first (not measured), then Measure measured ones;
	// then, when Shift is not 0, every segment's competition is multiplied
	// by 1 + Shift and After auctions follow (the recovery).
	Learn, Measure, After int
	Shift                 float64
	// MinToWin: notices carry m. LossNotices: the exchange sends loss
	// notices (else a bid without a win is a loss after the notice wait).
	MinToWin, LossNotices bool
	// Step is the fake time between auctions; NoticeWait the exchange's.
	Step, NoticeWait time.Duration
	// Window is the recovery's measuring window, in auctions.
	Window int
	Seed   uint64
	// Shading tunes the Shader (Rand and Exchanges are set by Run).
	Shading shading.Options
	// Bidders, when more than one, share Store (shading.Options.Fleet:
	// FleetSlot wide slots): each auction's bid is made by a random bidder
	// and its notice lands on a random one; each bidder Syncs every
	// SyncEvery. RestartAt, when > 0, replaces bidder 1 at that auction by
	// a new one that Loads the fleet's counts before its first bid.
	Bidders   int
	Store     shading.Store
	SyncEvery time.Duration
	FleetSlot time.Duration
	RestartAt int
}

// Defaults: the landscape of the acceptance (value 4.00 CPM, four
// segments, one where the best bid is near the floor, one near the value).
func Defaults() Config {
	return Config{
		Segments: []Segment{
			{Name: "near-floor", Median: 0.8, Sigma: 0.4, Floor: 1.5, Weight: 1},
			{Name: "near-value", Median: 3.3, Sigma: 0.12, Floor: 0.5, Weight: 1},
			{Name: "wide", Median: 2.0, Sigma: 0.5, Floor: 0.5, Weight: 1},
			{Name: "mid", Median: 1.5, Sigma: 0.25, Floor: 0.8, Weight: 1},
		},
		Value: 4.0, Learn: 24_000, Measure: 16_000, After: 40_000, Shift: 0.3,
		MinToWin: true, Step: 50 * time.Millisecond, NoticeWait: 5 * time.Second, Window: 2000, Seed: 1,
		Shading: shading.Options{HalfLife: 5 * time.Minute},
	}
}

// Stats are the outcome of one way of bidding over some auctions.
type Stats struct {
	Auctions, Wins int
	Spend, Surplus float64 // CPM summed over wins
}

// CostPerWin is Spend / Wins (0 without wins).
func (s Stats) CostPerWin() float64 {
	if s.Wins == 0 {
		return 0
	}
	return s.Spend / float64(s.Wins)
}

func (s *Stats) add(won bool, price, value float64) {
	s.Auctions++
	if won {
		s.Wins++
		s.Spend += price
		s.Surplus += value - price
	}
}

// SegmentResult is one segment's measured auctions.
type SegmentResult struct {
	Segment
	OraclePrice           float64
	Shaded, Oracle, Value Stats
}

// Ratio is the shaded surplus over the oracle's.
func (r SegmentResult) Ratio() float64 { return ratio(r.Shaded.Surplus, r.Oracle.Surplus) }

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// Result is a simulation's outcome.
type Result struct {
	Config   Config
	Segments []SegmentResult
	// Shaded, Oracle and Value are the measured auctions' totals.
	Shaded, Oracle, Value Stats
	// AfterRatio is the surplus ratio of each Window of auctions after the
	// shift (against the shifted oracle); Recovery the auctions after the
	// shift until the end of the first window back within 0.05 of the
	// measured ratio (-1: never).
	AfterRatio []float64
	Recovery   int
	// Restart is what the restarted bidder did in its first second
	// (Config.RestartAt).
	Restart Restart
	// Err is the first error of the fleet's store (Sync, Load), if any.
	Err error
	// Notices are the notices told to the bidders (wins, and losses when
	// the exchange sends them); Syncs, Flushed and Fields what the fleet's
	// Syncs wrote: entries (segment x slot) and their non-zero counts.
	Notices, Syncs, Flushed, Fields int
}

// Restart is the first second of a restarted bidder: its bids by how
// they were priced, and its mean price over the value.
type Restart struct {
	Loaded    int // segments Load read
	Bids      int
	ByHow     [shading.NumHow]int
	MeanShade float64
}

// Ratio is the measured surplus over the oracle's.
func (r *Result) Ratio() float64 { return ratio(r.Shaded.Surplus, r.Oracle.Surplus) }

// OraclePrice is the bid in [floor, value] maximising (value - p) x
// P(D <= p) for a lognormal D of the given median and sigma.
func OraclePrice(value, floor, median, sigma float64) float64 {
	best, bestS := value, 0.0
	const n = 20_000
	for i := 0; i <= n; i++ {
		p := floor + (value-floor)*float64(i)/n
		if s := (value - p) * lognormalCDF(p, median, sigma); s > bestS {
			best, bestS = p, s
		}
	}
	return best
}

func lognormalCDF(x, median, sigma float64) float64 {
	if x <= 0 {
		return 0
	}
	return 0.5 * math.Erfc(-math.Log(x/median)/(sigma*math.Sqrt2))
}

// normal draws N(0,1) (Box-Muller).
func normal(r *splitmix.Rand) float64 {
	u1 := 1 - r.Float64()
	u2 := r.Float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// segmentIDs are the shading segments of segs (a publisher each) and
// their total weight.
func segmentIDs(segs []Segment) (ids []shading.SegmentID, total float64) {
	for _, s := range segs {
		ids = append(ids, shading.Segment(0, "pub-"+s.Name, shading.FormatBanner, 300, 250))
		total += s.Weight
	}
	return ids, total
}

// draw picks a segment by weight and draws its highest competing bid,
// CPM, with the segment's median times scale.
func draw(segs []Segment, total, scale float64, rng *splitmix.Rand) (int, float64) {
	x := rng.Float64() * total
	i := 0
	for i < len(segs)-1 && x >= segs[i].Weight {
		x -= segs[i].Weight
		i++
	}
	return i, segs[i].Median * scale * math.Exp(segs[i].Sigma*normal(rng))
}

// Run plays cfg.
func Run(cfg Config) *Result {
	rng := splitmix.Rand{S: cfg.Seed}
	shadeRand := splitmix.Rand{S: splitmix.Mix(cfg.Seed ^ 0x5eed)}
	opts := cfg.Shading
	opts.Rand = shadeRand.Float64
	opts.Exchanges = []shading.Exchange{{LossNotices: cfg.LossNotices, NoticeWait: cfg.NoticeWait}}
	fleet := cfg.Bidders > 1 && cfg.Store != nil
	if fleet {
		opts.Fleet = &shading.FleetOptions{Slot: cfg.FleetSlot}
	}
	nb := max(cfg.Bidders, 1)
	shaders := make([]*shading.Shader, nb)
	for k := range shaders {
		shaders[k] = shading.New(opts)
	}
	lb := splitmix.Rand{S: splitmix.Mix(cfg.Seed ^ 0x1b)} // the exchange's load balancing
	ctx := context.Background()
	var errs []error
	lastSync := make([]time.Time, nb)

	res := &Result{Config: cfg, Recovery: -1}
	ids, total := segmentIDs(cfg.Segments)
	shifted := make([]float64, len(cfg.Segments)) // the oracle's price after the shift
	for i, s := range cfg.Segments {
		res.Segments = append(res.Segments, SegmentResult{Segment: s, OraclePrice: OraclePrice(cfg.Value, s.Floor, s.Median, s.Sigma)})
		shifted[i] = OraclePrice(cfg.Value, s.Floor, s.Median*(1+cfg.Shift), s.Sigma)
	}
	value := micros(cfg.Value)
	now := time.Unix(1_800_000_000, 0)
	lastRefresh := now
	n := cfg.Learn + cfg.Measure
	if cfg.Shift != 0 {
		n += cfg.After
	}
	for k := range lastSync {
		lastSync[k] = now.Add(time.Duration(k) * cfg.SyncEvery / time.Duration(nb)) // staggered
	}
	var win Stats
	var winOracle float64
	var restarted time.Time
	var shadeSum float64
	for a := range n {
		now = now.Add(cfg.Step)
		if now.Sub(lastRefresh) >= time.Second {
			for _, sh := range shaders {
				sh.Refresh(now)
			}
			lastRefresh = now
		}
		if fleet {
			for k, sh := range shaders {
				if now.Sub(lastSync[k]) >= cfg.SyncEvery {
					st, err := sh.Sync(ctx, cfg.Store, now)
					errs = append(errs, err) // errors.Join drops the nils
					res.Syncs++
					res.Flushed += st.Flushed
					res.Fields += st.Fields
					sh.Refresh(now)
					lastSync[k] = now
				}
			}
			if cfg.RestartAt > 0 && a == cfg.RestartAt {
				shaders[1] = shading.New(opts)
				st, err := shaders[1].Load(ctx, cfg.Store, now)
				errs = append(errs, err)
				res.Restart.Loaded = st.Segments
				restarted, lastSync[1] = now, now
			}
		}
		after := cfg.Shift != 0 && a >= cfg.Learn+cfg.Measure
		scale := 1.0
		if after {
			scale = 1 + cfg.Shift
		}
		i, d := draw(cfg.Segments, total, scale, &rng)
		s, op := cfg.Segments[i], res.Segments[i].OraclePrice
		if after {
			op = shifted[i]
		}
		tie := max(d, s.Floor) // the price to tie: the highest other bid or the floor
		if cfg.Value < s.Floor {
			continue
		}
		bi := lb.IntN(nb)
		sh := shaders[bi]
		dec := sh.Price(ids[i], shading.FirstPrice, true, value, micros(s.Floor))
		price := float64(dec.Price) / 1e6
		sh.Bid(ids[i], dec.Price, now)
		if bi == 1 && !restarted.IsZero() && now.Sub(restarted) < time.Second {
			res.Restart.Bids++
			res.Restart.ByHow[dec.How]++
			shadeSum += price / cfg.Value
		}
		won := price >= tie
		m := micros(tie)
		if won || cfg.LossNotices {
			res.Notices++
			shaders[lb.IntN(nb)].Observe(ids[i], dec.Price, now, won, m, cfg.MinToWin, now)
		}
		switch {
		case a >= cfg.Learn && !after:
			r := &res.Segments[i]
			r.Shaded.add(won, price, cfg.Value)
			r.Oracle.add(op >= tie, op, cfg.Value)
			r.Value.add(cfg.Value >= tie, cfg.Value, cfg.Value)
		case after:
			win.add(won, price, cfg.Value)
			if op >= tie {
				winOracle += cfg.Value - op
			}
			if win.Auctions == cfg.Window {
				res.AfterRatio = append(res.AfterRatio, ratio(win.Surplus, winOracle))
				win, winOracle = Stats{}, 0
			}
		}
	}
	for _, r := range res.Segments {
		res.Shaded.merge(r.Shaded)
		res.Oracle.merge(r.Oracle)
		res.Value.merge(r.Value)
	}
	if res.Restart.Bids > 0 {
		res.Restart.MeanShade = shadeSum / float64(res.Restart.Bids)
	}
	res.Err = errors.Join(errs...)
	for k, rr := range res.AfterRatio {
		if rr >= res.Ratio()-0.05 {
			res.Recovery = (k + 1) * cfg.Window
			break
		}
	}
	return res
}

func (s *Stats) merge(b Stats) {
	s.Auctions, s.Wins, s.Spend, s.Surplus = s.Auctions+b.Auctions, s.Wins+b.Wins, s.Spend+b.Spend, s.Surplus+b.Surplus
}

func micros(cpm float64) int64 { return int64(math.Round(cpm * 1e6)) }

// Print writes r as a table.
func (r *Result) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "first-price exchange: value %.2f CPM, %d auctions to learn, %d measured, m: %v, loss notices: %v",
		c.Value, c.Learn, c.Measure, c.MinToWin, c.LossNotices)
	if c.Bidders > 1 {
		fmt.Fprintf(w, ", %d bidders sharing one store (sync every %s)", c.Bidders, c.SyncEvery)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-12s %8s %8s %8s %10s %10s %10s %8s %8s\n", "segment", "oracle", "cost/win", "value", "surplus/a", "oracle/a", "ratio", "wins", "wins@v")
	line := func(name, op string, sh, or, v Stats) {
		fmt.Fprintf(w, "%-12s %8s %8.3f %8.3f %10.4f %10.4f %10.3f %8d %8d\n", name, op, sh.CostPerWin(), c.Value,
			sh.Surplus/float64(max(sh.Auctions, 1)), or.Surplus/float64(max(or.Auctions, 1)), ratio(sh.Surplus, or.Surplus), sh.Wins, v.Wins)
	}
	for _, s := range r.Segments {
		line(s.Name, fmt.Sprintf("%.3f", s.OraclePrice), s.Shaded, s.Oracle, s.Value)
	}
	line("all", "-", r.Shaded, r.Oracle, r.Value)
	fmt.Fprintf(w, "cost per win %.3f vs %.3f bidding the value (%.1f%% lower); wins %d vs %d\n", r.Shaded.CostPerWin(), c.Value,
		100*(1-r.Shaded.CostPerWin()/c.Value), r.Shaded.Wins, r.Value.Wins)
	if c.Shift != 0 {
		fmt.Fprintf(w, "after a %+.0f%% shift, surplus ratio per %d auctions:", 100*c.Shift, c.Window)
		for _, x := range r.AfterRatio {
			fmt.Fprintf(w, " %.3f", x)
		}
		fmt.Fprintf(w, "\nrecovered within 0.05 of %.3f after %d auctions\n", r.Ratio(), r.Recovery)
	}
	if c.RestartAt > 0 {
		rs := r.Restart
		fmt.Fprintf(w, "bidder 1 restarted at auction %d, loaded %d segments; its first second: %d bids:", c.RestartAt, rs.Loaded, rs.Bids)
		for h, k := range rs.ByHow {
			if k > 0 {
				fmt.Fprintf(w, " %s %d", shading.How(h), k)
			}
		}
		fmt.Fprintf(w, "; mean price %.3f of the value\n", rs.MeanShade)
	}
	if c.Bidders > 1 && c.Store != nil {
		fmt.Fprintf(w, "store writes: %d syncs flushed %d segment-slot entries, %d count increments, for %d notices (%.2f per notice)\n",
			r.Syncs, r.Flushed, r.Fields, r.Notices, float64(r.Fields)/float64(max(r.Notices, 1)))
	}
}
