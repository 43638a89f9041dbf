package shading

import "math"

// minWins is the fewest decayed wins a wins-and-losses estimate needs.
const minWins = 5

// estimate builds the segment's curve from its settled counts, or returns
// nil when they are too few. g.mu held.
//
// With enough minimum bids to win (uncensored: each is the price that
// would have tied), P(win | p) is their empirical distribution function,
// linear within a bucket. Otherwise each bucket's bids are trials and its
// wins successes (explicit losses stand for the trials when the exchange
// sends loss notices; without them a bid with no win within the notice
// wait is a loss), the per-bucket win rates are made non-decreasing in
// price by pool-adjacent-violators (weighted by trials), and the curve
// runs linearly between bucket centres, from 0 at the lower edge of the
// cheapest bucket with data, flat above the dearest.
func (g *segment) estimate(minObs float64) *curve {
	var mTotal float64
	for _, v := range g.mins {
		mTotal += v
	}
	if mTotal >= minObs {
		c := &curve{source: SourceMinToWin, obs: mTotal}
		var cum float64
		for b := range NumBuckets {
			cum += g.mins[b]
			c.p[b+1] = float32(min(cum/mTotal, 1))
		}
		return c
	}
	var trials, rate, weight [NumBuckets]float64
	var tTotal, wTotal float64
	for b := range NumBuckets {
		n := g.bids[b]
		if g.lossNotices {
			n = g.wins[b] + g.losses[b]
		}
		w := min(g.wins[b], n)
		trials[b] = n
		tTotal += n
		wTotal += w
		if n > 0 {
			rate[b] = w / n
		}
	}
	if tTotal < minObs || wTotal < minWins {
		return nil
	}
	// Pool adjacent violators over the buckets with data.
	var idx [NumBuckets]int
	k := 0
	for b := range NumBuckets {
		if trials[b] < 0.05 {
			continue
		}
		idx[k], rate[k], weight[k] = b, rate[b], trials[b]
		// blocks: rate[k] is the block's mean, weight[k] its weight, and
		// starts[k] its first index into idx.
		k++
	}
	type block struct {
		mean, w    float64
		start, end int // idx[start:end]
	}
	var blocks [NumBuckets]block
	nb := 0
	for i := range k {
		blocks[nb] = block{mean: rate[i], w: weight[i], start: i, end: i + 1}
		nb++
		for nb > 1 && blocks[nb-2].mean > blocks[nb-1].mean {
			a, b := blocks[nb-2], blocks[nb-1]
			w := a.w + b.w
			blocks[nb-2] = block{mean: (a.mean*a.w + b.mean*b.w) / w, w: w, start: a.start, end: b.end}
			nb--
		}
	}
	var fit [NumBuckets]float64 // by position in idx
	for _, bl := range blocks[:nb] {
		for i := bl.start; i < bl.end; i++ {
			fit[i] = bl.mean
		}
	}
	c := &curve{source: SourceWins, obs: tTotal}
	// Curve at each edge: interpolate between bucket centres.
	first, last := idx[0], idx[k-1]
	j := 0 // the first data point whose centre is >= the edge
	for e := 0; e <= NumBuckets; e++ {
		x := edges[e]
		for j < k && centre(idx[j]) < x {
			j++
		}
		var p float64
		switch {
		case e <= first:
			p = 0 // below the cheapest bucket with data (its lower edge: 0)
		case j == k:
			p = fit[k-1]
		case j == 0:
			lo, hi := edges[first], centre(first)
			p = fit[0] * (x - lo) / (hi - lo)
		default:
			x0, x1 := centre(idx[j-1]), centre(idx[j])
			p = fit[j-1] + (fit[j]-fit[j-1])*(x-x0)/(x1-x0)
		}
		_ = last
		c.p[e] = float32(min(max(p, 0), 1))
	}
	return c
}

// centre is the geometric centre of bucket b.
func centre(b int) float64 { return math.Sqrt(edges[b] * edges[b+1]) }

// at is P(win | p), p in micros CPM.
func (c *curve) at(p float64) float64 {
	b := int(Bucket(int64(p)))
	e0, e1 := edges[b], edges[b+1]
	a0, a1 := float64(c.p[b]), float64(c.p[b+1])
	if p <= e0 {
		return a0
	}
	return a0 + (a1-a0)*min((p-e0)/(e1-e0), 1)
}

// best returns the price in [floor, value] that maximises the expected
// surplus (value - p) x P(win | p) and its P(win); the value when no
// price has any expected surplus. On each bucket the curve is linear, so
// the surplus is a parabola: its ends and its top are the candidates. No
// allocation.
func (c *curve) best(value, floor float64) (float64, float64) {
	lo, hi := max(floor, 1), value
	if lo >= hi {
		return hi, c.at(hi)
	}
	bestP, bestS, bestW := hi, 0.0, c.at(hi)
	b1 := int(Bucket(int64(hi)))
	for b := int(Bucket(int64(lo))); b <= b1; b++ {
		e0, e1 := edges[b], edges[b+1]
		a0 := float64(c.p[b])
		s := (float64(c.p[b+1]) - a0) / (e1 - e0)
		x0, x1 := max(e0, lo), min(e1, hi)
		for k := range 3 {
			x := x0
			switch k {
			case 1:
				x = x1
			case 2:
				if s <= 0 {
					continue
				}
				// The top of (value - x)(a0 + s(x - e0)).
				if x = (value + e0 - a0/s) / 2; x <= x0 || x >= x1 {
					continue
				}
			}
			w := a0 + s*(x-e0)
			if sur := (value - x) * w; sur > bestS {
				bestP, bestS, bestW = x, sur, w
			}
		}
	}
	return bestP, bestW
}
