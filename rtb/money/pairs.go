package money

import (
	"errors"
	"math"
)

// Errors of Pairs.Add.
var (
	// ErrPairCode: a currency of the pair is not an ISO 4217 code (Code).
	ErrPairCode = errors.New("money: fx pair: not an ISO 4217 code")
	// ErrPairsFull: the table already holds Pairs.Max rates.
	ErrPairsFull = errors.New("money: fx pairs: table full")
)

// MaxPairs is the number of rates a Pairs holds when its Max is 0.
const MaxPairs = 128

// minRate bounds a pairwise rate from below, so that its inverse is at
// most maxRate.
const minRate = 1 / maxRate

// Pairs is a table of pairwise conversion rates as Prebid writes them
// (ext.prebid.currency.rates of a bid request, the "conversions" of a
// currency file): the rate of FROM -> TO is the units of TO one unit of
// FROM buys ({"USD":{"EUR":0.92}}: 1 USD = 0.92 EUR). Rate looks a pair
// up as Prebid Server does: direct, then inverse, then through one
// intermediate currency. The zero value is an empty table holding up to
// MaxPairs rates. A Pairs is not safe for concurrent modification; once
// built, concurrent Rate and Convert calls are safe.
type Pairs struct {
	// Max bounds the number of rates Add accepts; 0 is MaxPairs.
	Max  int
	list []pair
}

type pair struct {
	from, to string // canonical codes (slices of the package's table)
	rate     float64
}

// Reset empties p, keeping its memory and Max.
func (p *Pairs) Reset() { p.list = p.list[:0] }

// Len is the number of rates in p.
func (p *Pairs) Len() int { return len(p.list) }

// Add adds the rate of from -> to (codes in any case, as Code matches
// them). The rate must be a finite number in [1e-9, 1e9] (ErrRateValue);
// a pair of one currency with itself is accepted and ignored (Prebid's
// files carry "USD":{"USD":1}); a pair already present keeps its first
// rate. Errors: ErrPairCode, ErrRateValue, ErrPairsFull; Add makes no
// allocation once p's memory has grown to its Max.
func (p *Pairs) Add(from, to string, rate float64) error {
	f, okf := Code(from)
	t, okt := Code(to)
	switch {
	case !okf || !okt:
		return ErrPairCode
	case math.IsNaN(rate) || rate < minRate || rate > maxRate:
		return ErrRateValue
	case f == t:
		return nil
	}
	max := p.Max
	if max <= 0 {
		max = MaxPairs
	}
	if len(p.list) >= max {
		return ErrPairsFull
	}
	p.list = append(p.list, pair{from: f, to: t, rate: rate})
	return nil
}

// Rate returns the units of to one unit of from buys ("" is USD; any
// case): 1 for the same currency; else the rate of from -> to if p has
// it, else 1 / the rate of to -> from, else, through an intermediate
// currency X with rates X -> to and X -> from, their ratio (the first such
// X in the order the rates were added). ok is false when no such rate
// exists or a code is unknown. It makes no allocation.
func (p *Pairs) Rate(from, to string) (rate float64, ok bool) {
	f, okf := codeOrUSD(from)
	t, okt := codeOrUSD(to)
	switch {
	case !okf || !okt:
		return 0, false
	case f == t:
		return 1, true
	}
	inverse := 0.0
	for i := range p.list {
		e := &p.list[i]
		if e.from == f && e.to == t {
			return e.rate, true
		}
		if inverse == 0 && e.from == t && e.to == f {
			inverse = e.rate
		}
	}
	if inverse > 0 {
		return 1 / inverse, true
	}
	for i := range p.list {
		e := &p.list[i]
		if e.to != t {
			continue
		}
		for j := range p.list {
			if g := &p.list[j]; g.from == e.from && g.to == f {
				return e.rate / g.rate, true
			}
		}
	}
	return 0, false
}

// Convert converts micros of from into micros of to with Rate, rounded
// down to the micro and saturating as Rates.Convert does; ok is false when
// Rate has no rate.
func (p *Pairs) Convert(micros int64, from, to string) (int64, bool) {
	r, ok := p.Rate(from, to)
	if !ok {
		return 0, false
	}
	return applyRate(micros, r, false), true
}

// ConvertUp converts like Convert but rounds up (a floor is never lowered
// by conversion).
func (p *Pairs) ConvertUp(micros int64, from, to string) (int64, bool) {
	r, ok := p.Rate(from, to)
	if !ok {
		return 0, false
	}
	return applyRate(micros, r, true), true
}

// applyRate multiplies micros by rate, rounding as Rates.convert does (a
// float error of up to 1e-6 micro forgiven) and saturating. A rate of 1
// returns micros unchanged.
func applyRate(micros int64, rate float64, up bool) int64 {
	if rate == 1 {
		return micros
	}
	v := float64(micros) * rate
	if up {
		return saturate(math.Ceil(v - 1e-6))
	}
	return saturate(math.Floor(v + 1e-6))
}

// codeOrUSD is Code, with "" read as USD (OpenRTB's default currency).
func codeOrUSD(s string) (string, bool) {
	if s == "" {
		return "USD", true
	}
	return Code(s)
}

// WithPairs returns a copy of r with the US dollar rate of every currency
// p can convert to USD (Pairs.Rate) set or replaced, and the codes p names
// that it cannot, sorted by first appearance (nil if none). r is
// unchanged.
func (r Rates) WithPairs(p *Pairs) (Rates, []string) {
	out := Rates{usdPer: make(map[string]float64, len(r.usdPer)+p.Len())}
	for c, v := range r.usdPer {
		out.usdPer[c] = v
	}
	var missing []string
	seen := map[string]bool{"USD": true}
	for i := range p.list {
		for _, c := range [2]string{p.list[i].from, p.list[i].to} {
			if seen[c] {
				continue
			}
			seen[c] = true
			v, ok := p.Rate(c, "USD")
			if ok && v >= minRate && v <= maxRate {
				out.usdPer[c] = v
			} else {
				missing = append(missing, c)
			}
		}
	}
	return out, missing
}
