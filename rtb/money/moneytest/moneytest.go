// Package moneytest holds the table of amounts that every path turning
// text or a float into micros must agree on: campaign bids and budgets,
// notice prices, feed prices (text) and imp and deal floors (floats). Each
// path's tests feed the table through the path and compare with it, so
// every path gives the same micros and saturates the same way as rtb/money
// and so as each other.
package moneytest

import (
	"math"

	"github.com/rtbd/rtbd/rtb/money"
)

// Amount is one amount, as text and as the float an OpenRTB field would
// carry, and what every path must make of each.
type Amount struct {
	// Text is the amount as a campaign file, a feed or a notice's p= writes it.
	Text string
	// Micros is what every text path gives when Err is nil.
	Micros int64
	// Err is the money error every text path rejects Text with (nil: it is
	// accepted): one of money's sentinels; paths report it in their own words.
	Err error
	// Float is the same amount as a float64 of currency units.
	Float float64
	// FloatMicros is what every float path gives for Float (money.FromFloat).
	FloatMicros int64
}

// JSON reports whether Float can be written in JSON, as a bid request's
// bidfloor: whether it is finite.
func (a Amount) JSON() bool { return !math.IsNaN(a.Float) && !math.IsInf(a.Float, 0) }

// Amounts covers zero, tiny fractions, float rounding edges, the largest
// text amount, amounts that saturate, negatives, NaN and infinities, and
// malformed text.
var Amounts = []Amount{
	{"0", 0, nil, 0, 0},
	{"0.000001", 1, nil, 0.000001, 1},
	{"0.01", 10_000, nil, 0.01, 10_000},
	{"0.03", 30_000, nil, 0.03, 30_000},
	{"0.1", 100_000, nil, 0.1, 100_000},
	{"1", 1_000_000, nil, 1, 1_000_000},
	{"1.1", 1_100_000, nil, 1.1, 1_100_000},
	{"1.25", 1_250_000, nil, 1.25, 1_250_000},
	{"2.675", 2_675_000, nil, 2.675, 2_675_000}, // the float is 2.67499999...
	{"19.99", 19_990_000, nil, 19.99, 19_990_000},
	{"1.234567", 1_234_567, nil, 1.234567, 1_234_567},
	{"007.50", 7_500_000, nil, 7.5, 7_500_000},
	{"1980", 1_980_000_000, nil, 1980, 1_980_000_000},
	{"123456789.123456", 123_456_789_123_456, nil, 123456789.123456, 123_456_789_123_456},
	{"999999999999.999999", money.MaxText, nil, 999999999999.999999, 1_000_000_000_000_000_000}, // the float is 1e12
	// Finer than a micro: text rejects, floats round up.
	{"1.2345671", 0, money.ErrPrecision, 1.2345671, 1_234_568},
	{"1.2345679", 0, money.ErrPrecision, 1.2345679, 1_234_568},
	{"0.0000005", 0, money.ErrPrecision, 0.0000005, 1},
	{"0.0000015", 0, money.ErrPrecision, 0.0000015, 2},
	{"1.0000000", 0, money.ErrPrecision, 1, 1_000_000},
	// Too large for text; floats saturate at money.Max once above 2^63 micros.
	{"1000000000000", 0, money.ErrRange, 1e12, 1_000_000_000_000_000_000},
	{"9223372036854.775807", 0, money.ErrRange, 9223372036854.775807, 9_223_372_036_854_775_000},
	{"9223372036855", 0, money.ErrRange, 9223372036855, money.Max},
	{"99999999999999999999", 0, money.ErrRange, 99999999999999999999, money.Max},
	{"1e300", 0, money.ErrTrailing, 1e300, money.Max},
	{"Inf", 0, money.ErrSyntax, math.Inf(1), money.Max},
	// Negative, NaN: text rejects, floats are 0.
	{"-1", 0, money.ErrNegative, -1, 0},
	{"-0.000001", 0, money.ErrNegative, -0.000001, 0},
	{"-0", 0, money.ErrNegative, math.Copysign(0, -1), 0},
	{"-Inf", 0, money.ErrSyntax, math.Inf(-1), 0},
	{"NaN", 0, money.ErrSyntax, math.NaN(), 0},
	// Malformed text (the float is what was meant).
	{"", 0, money.ErrEmpty, 0, 0},
	{".5", 0, money.ErrSyntax, 0.5, 500_000},
	{"5.", 0, money.ErrNoFraction, 5, 5_000_000},
	{"+1", 0, money.ErrSyntax, 1, 1_000_000},
	{" 1", 0, money.ErrSyntax, 1, 1_000_000},
	{"1 ", 0, money.ErrTrailing, 1, 1_000_000},
	{"1,5", 0, money.ErrTrailing, 1.5, 1_500_000},
	{"1.2.3", 0, money.ErrTrailing, 1.2, 1_200_000},
	{"0x10", 0, money.ErrTrailing, 16, 16_000_000},
	{"１２", 0, money.ErrSyntax, 12, 12_000_000},
}
