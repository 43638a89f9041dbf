package money

import (
	"math"
	"strconv"
)

// Max is the saturation value of every conversion through a float: the
// largest int64, above MaxText.
const Max = math.MaxInt64

// two63 is 2^63 as a float64: the first float no int64 holds.
const two63 = float64(1 << 63)

// saturate is the package's one saturation rule for an amount in micros
// computed as a float (already rounded): NaN and v <= 0 give 0, v >= 2^63
// gives Max.
func saturate(v float64) int64 {
	switch {
	case !(v > 0):
		return 0
	case v >= two63:
		return Max
	}
	return int64(v)
}

// FromFloat converts an OpenRTB amount in currency units (imp.bidfloor,
// deal.bidfloor: a float64) to micros. It reads f as the decimal it was
// written as (the shortest decimal that gives f, as strconv formats it), so
// 0.1 is 100000 micros exactly, and rounds anything finer than a micro up:
// a floor of 1.2345671 is 1234568 micros, never below what the exchange
// sent. Saturation: NaN, -Inf and f <= 0 give 0; 2^63 micros or more (and
// +Inf) give Max. (Above about 4e9 units two amounts a micro apart can be
// the same float; the result is then the shortest decimal's.) It makes no
// allocation.
func FromFloat(f float64) int64 {
	switch {
	case !(f > 0):
		return 0
	case f >= 1e13: // 1e19 micros, above Max
		return Max
	case f < 1.0/Unit:
		return 1 // less than a micro, more than nothing
	}
	// Below 2^31 units a float's spacing is under half a micro, so at most
	// one whole number of micros gives f, and f*Unit rounds to it.
	if r := math.Round(f * Unit); f < 1<<31 && r/Unit == f {
		return int64(r) // a whole number of micros as written
	}
	// More than 6 decimals, or too large for the float to hold micros
	// exactly: round the shortest decimal up. 1e-6 <= f < 1e13, so the text
	// has at most 13 integer digits and 17 significant ones: it fits the
	// buffer, and units*Unit+frac fits a uint64.
	var buf [40]byte
	b := strconv.AppendFloat(buf[:0], f, 'f', -1, 64)
	var units, frac uint64
	i := 0
	for ; i < len(b) && b[i] != '.'; i++ {
		units = units*10 + uint64(b[i]-'0')
	}
	up := false
	if i < len(b) {
		i++ // '.'
		for n := 0; n < 6; n++ {
			frac *= 10
			if i < len(b) {
				frac += uint64(b[i] - '0')
				i++
			}
		}
		for ; i < len(b); i++ {
			if b[i] != '0' {
				up = true
			}
		}
	}
	m := units*Unit + frac
	if up {
		m++
	}
	if m > Max {
		return Max
	}
	return int64(m)
}

// Float converts micros to a float64 of currency units, for OpenRTB's
// bid.price: the float nearest the exact decimal, which encoders print as
// that decimal (1250000 -> 1.25).
func Float(micros int64) float64 { return float64(micros) / Unit }

// Scale returns micros times factor (a bid multiplier), rounded to the
// nearest micro (halves away from zero), saturating by the package's rule:
// NaN and results <= 0 are 0, results >= 2^63 micros are Max.
func Scale(micros int64, factor float64) int64 {
	return saturate(math.Round(float64(micros) * factor))
}

// PerImpression converts a CPM amount (the price of 1000 impressions, the
// unit of OpenRTB prices) to the amount of one impression, rounded half up
// to a whole micro: 1500000 (1.50 CPM) -> 1500 (0.0015). It never
// overflows.
func PerImpression(cpm int64) int64 {
	q, r := cpm/1000, cpm%1000
	if r >= 500 {
		q++
	}
	return q
}
