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

// Segment is one segment of the simulated exchange (a publisher).
type Segment struct {
	Name string
	// Median and Sigma: the highest competing bid is Median x exp(Sigma x N(0,1)), CPM.
	Median, Sigma float64
	Floor         float64 // CPM
}

// id is s's shading segment.
func (s Segment) id() shading.SegmentID {
	return shading.Segment(0, "pub-"+s.Name, shading.FormatBanner, 300, 250)
}

// segments are the landscape of the acceptance, a quarter of the auctions
// each: with the default value, one where the best bid is near the floor,
// one near the value.
var segments = []Segment{
	{Name: "near-floor", Median: 0.8, Sigma: 0.4, Floor: 1.5},
	{Name: "near-value", Median: 3.3, Sigma: 0.12, Floor: 0.5},
	{Name: "wide", Median: 2.0, Sigma: 0.5, Floor: 0.5},
	{Name: "mid", Median: 1.5, Sigma: 0.25, Floor: 0.8},
}

const (
	step       = 50 * time.Millisecond // fake time between auctions
	noticeWait = 5 * time.Second       // the exchange's: a bid without a notice is a loss after it
	window     = 2000                  // auctions: the recovery's measuring window
	fleetSlot  = 30 * time.Second      // shading.FleetOptions.Slot of the fleet runs
)

// Config is one simulation.
type Config struct {
	Value float64 // the bidder's value of an impression, CPM
	// Learn auctions first (not measured), then Measure measured ones;
	// then, when Shift and After are not 0, every segment's competition
	// is multiplied by 1 + Shift and After auctions follow (the recovery).
	Learn, Measure, After int
	Shift                 float64
	// MinToWin: notices carry m. LossNotices: the exchange sends loss
	// notices (else a bid without a win is a loss after the notice wait).
	MinToWin, LossNotices bool
	Seed                  uint64
	HalfLife              time.Duration // the shader's shading.half_life (fake time)
	// Bidders, when more than one, share Store: each auction's bid is made
	// by a random bidder and its notice lands on a random one; each bidder
	// Syncs every SyncEvery. RestartAt, when > 0, replaces bidder 1 at that
	// auction by a new one that Loads the fleet's counts before its first
	// bid (-1: in the middle of the measured auctions).
	Bidders   int
	Store     shading.Store
	SyncEvery time.Duration
	RestartAt int
	// RunPacing: PacingDays days of about PacingAuctions auctions, the last
	// measured, with a daily budget of PacingBudget times what bidding the
	// shaded value in every auction spends.
	PacingDays, PacingAuctions int
	PacingBudget               float64
}

// Defaults: the acceptance's simulation (value 4.00 CPM).
func Defaults() Config {
	return Config{
		Value: 4.0, Learn: 24_000, Measure: 16_000, After: 40_000, Shift: 0.3, MinToWin: true, Seed: 1,
		HalfLife: 5 * time.Minute, PacingDays: 3, PacingAuctions: 200_000, PacingBudget: 0.4,
	}
}

// Stats are the outcome of one way of bidding over some auctions.
type Stats struct {
	Auctions, Wins int
	Spend, Surplus float64 // CPM summed over wins
}

// CostPerWin is Spend / Wins (0 without wins).
func (s Stats) CostPerWin() float64 { return ratio(s.Spend, float64(s.Wins)) }

// add counts an auction bid at price, won when price reaches tie.
func (s *Stats) add(price, tie, value float64) {
	s.Auctions++
	if price >= tie {
		s.Wins++
		s.Spend += price
		s.Surplus += value - price
	}
}

// SegmentResult is one segment's measured auctions: bid shading, the
// oracle's bid (OraclePrice) and the value, on the same draws.
type SegmentResult struct {
	Segment
	OraclePrice           float64
	Shaded, Oracle, Value Stats
}

// Ratio is the shaded surplus over the oracle's.
func (r SegmentResult) Ratio() float64 { return ratio(r.Shaded.Surplus, r.Oracle.Surplus) }

// add counts an auction whose price to tie (the highest other bid or the
// floor) is tie: the shaded bid at price, the oracle's at oracle.
func (r *SegmentResult) add(tie, price, oracle, value float64) {
	r.Shaded.add(price, tie, value)
	r.Oracle.add(oracle, tie, value)
	r.Value.add(value, tie, value)
}

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
	// Total is the measured auctions' totals (no segment, no oracle price).
	Total SegmentResult
	// AfterRatio is the surplus ratio of each window of auctions after the
	// shift (against the shifted oracle); Recovery the auctions after the
	// shift until the end of the first window back within 0.05 of the
	// measured ratio (-1: never).
	AfterRatio []float64
	Recovery   int
	Restart    Restart
	// Err joins the errors of the fleet's store (Sync, Load), if any.
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
func (r *Result) Ratio() float64 { return r.Total.Ratio() }

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

// lognormalCDF is P(D <= x), x >= 0.
func lognormalCDF(x, median, sigma float64) float64 {
	return 0.5 * math.Erfc(-math.Log(x/median)/(sigma*math.Sqrt2))
}

// draw picks a segment and draws its highest competing bid, CPM, with the
// segment's median times scale.
func draw(scale float64, rng *splitmix.Rand) (int, float64) {
	i := int(rng.Float64() * float64(len(segments)))
	u1, u2 := 1-rng.Float64(), rng.Float64()
	normal := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2) // N(0,1), Box-Muller
	return i, segments[i].Median * scale * math.Exp(segments[i].Sigma*normal)
}

// Run plays cfg.
func Run(cfg Config) *Result {
	if cfg.Shift == 0 || cfg.After == 0 {
		cfg.Shift, cfg.After = 0, 0 // no shift
	}
	if cfg.RestartAt < 0 {
		cfg.RestartAt = cfg.Learn + cfg.Measure/2
	}
	rng := splitmix.Rand{S: cfg.Seed}
	shadeRand := splitmix.Rand{S: splitmix.Mix(cfg.Seed ^ 0x5eed)}
	lb := splitmix.Rand{S: splitmix.Mix(cfg.Seed ^ 0x1b)} // the exchange's load balancing
	opts := shading.Options{HalfLife: cfg.HalfLife, Rand: shadeRand.Float64,
		Exchanges: []shading.Exchange{{LossNotices: cfg.LossNotices, NoticeWait: noticeWait}}}
	fleet := cfg.Bidders > 1
	if fleet {
		opts.Fleet = &shading.FleetOptions{Slot: fleetSlot}
	}
	nb := max(cfg.Bidders, 1)
	now := time.Unix(1_800_000_000, 0)
	shaders, lastSync := make([]*shading.Shader, nb), make([]time.Time, nb)
	for k := range shaders {
		shaders[k] = shading.New(opts)
		lastSync[k] = now.Add(time.Duration(k) * cfg.SyncEvery / time.Duration(nb)) // staggered
	}
	var errs []error // errors.Join drops the nils
	res := &Result{Config: cfg, Recovery: -1}
	var oracles, shifted []float64 // the oracle's price before and after the shift
	for _, s := range segments {
		oracles = append(oracles, OraclePrice(cfg.Value, s.Floor, s.Median, s.Sigma))
		shifted = append(shifted, OraclePrice(cfg.Value, s.Floor, s.Median*(1+cfg.Shift), s.Sigma))
		res.Segments = append(res.Segments, SegmentResult{Segment: s, OraclePrice: oracles[len(oracles)-1]})
	}
	var win SegmentResult // the current window after the shift
	for a := range cfg.Learn + cfg.Measure + cfg.After {
		now = now.Add(step)
		if now.Nanosecond() == 0 { // every second
			for _, sh := range shaders {
				sh.Refresh(now)
			}
		}
		if fleet {
			for k, sh := range shaders {
				if now.Sub(lastSync[k]) >= cfg.SyncEvery {
					st, err := sh.Sync(context.Background(), cfg.Store, now)
					errs = append(errs, err)
					res.Syncs++
					res.Flushed += st.Flushed
					res.Fields += st.Fields
					sh.Refresh(now)
					lastSync[k] = now
				}
			}
			if cfg.RestartAt > 0 && a == cfg.RestartAt {
				shaders[1] = shading.New(opts)
				st, err := shaders[1].Load(context.Background(), cfg.Store, now)
				errs = append(errs, err)
				res.Restart.Loaded = st.Segments
				lastSync[1] = now
			}
		}
		after := a >= cfg.Learn+cfg.Measure
		scale, oraclePrices := 1.0, oracles
		if after {
			scale, oraclePrices = 1+cfg.Shift, shifted
		}
		i, d := draw(scale, &rng)
		s, oracle := segments[i], oraclePrices[i]
		if cfg.Value < s.Floor {
			continue
		}
		tie := max(d, s.Floor) // the price to tie: the highest other bid or the floor
		bi, id := lb.IntN(nb), s.id()
		dec := shaders[bi].Price(id, shading.FirstPrice, true, micros(cfg.Value), micros(s.Floor))
		price := float64(dec.Price) / 1e6
		shaders[bi].Bid(id, dec.Price, now)
		if bi == 1 && cfg.RestartAt > 0 && a >= cfg.RestartAt && time.Duration(a-cfg.RestartAt)*step < time.Second {
			res.Restart.Bids++
			res.Restart.ByHow[dec.How]++
			res.Restart.MeanShade += price / cfg.Value // a sum until the end
		}
		won := price >= tie
		if won || cfg.LossNotices {
			res.Notices++
			shaders[lb.IntN(nb)].Observe(id, dec.Price, now, won, micros(tie), cfg.MinToWin, now)
		}
		switch {
		case after:
			win.add(tie, price, oracle, cfg.Value)
			if win.Shaded.Auctions == window {
				res.AfterRatio = append(res.AfterRatio, win.Ratio())
				if res.Recovery < 0 && win.Ratio() >= res.Ratio()-0.05 {
					res.Recovery = len(res.AfterRatio) * window
				}
				win = SegmentResult{}
			}
		case a >= cfg.Learn:
			res.Segments[i].add(tie, price, oracle, cfg.Value)
			res.Total.add(tie, price, oracle, cfg.Value)
		}
	}
	res.Restart.MeanShade = ratio(res.Restart.MeanShade, float64(res.Restart.Bids))
	res.Err = errors.Join(errs...)
	return res
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
	fmt.Fprintf(w, "\n%-12s %8s %8s %8s %10s %10s %10s %8s %8s\n", "segment", "oracle", "cost/win", "value", "surplus/a", "oracle/a", "ratio", "wins", "wins@v")
	line := func(name, oracle string, s SegmentResult) {
		fmt.Fprintf(w, "%-12s %8s %8.3f %8.3f %10.4f %10.4f %10.3f %8d %8d\n", name, oracle, s.Shaded.CostPerWin(), c.Value,
			s.Shaded.Surplus/float64(max(s.Shaded.Auctions, 1)), s.Oracle.Surplus/float64(max(s.Oracle.Auctions, 1)), s.Ratio(), s.Shaded.Wins, s.Value.Wins)
	}
	for _, s := range r.Segments {
		line(s.Name, fmt.Sprintf("%.3f", s.OraclePrice), s)
	}
	line("all", "-", r.Total)
	t := r.Total
	fmt.Fprintf(w, "cost per win %.3f vs %.3f bidding the value (%.1f%% lower); wins %d vs %d\n", t.Shaded.CostPerWin(), c.Value,
		100*(1-t.Shaded.CostPerWin()/c.Value), t.Shaded.Wins, t.Value.Wins)
	if c.Shift != 0 {
		fmt.Fprintf(w, "after a %+.0f%% shift, surplus ratio per %d auctions:", 100*c.Shift, window)
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
	if c.Bidders > 1 {
		fmt.Fprintf(w, "store writes: %d syncs flushed %d segment-slot entries, %d count increments, for %d notices (%.2f per notice)\n",
			r.Syncs, r.Flushed, r.Fields, r.Notices, float64(r.Fields)/float64(max(r.Notices, 1)))
	}
}
