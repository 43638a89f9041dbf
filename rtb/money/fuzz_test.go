package money

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"testing"
)

// grammar is the package's amount grammar, for the fuzz target's reference.
var grammar = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,6})?$`)

var million = big.NewRat(Unit, 1)

// FuzzParse compares Parse and ParseSigned with a reference: a regular
// expression for the grammar, math/big for the value and its range.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1.2345", "0", "-1", "1e3", "999999999999.999999", "1.0000001", "NaN", ".5",
		"00.000001", "5.", "-0", "1000000000000", "0000000000000000000000000000001.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSigned(s)
		u, uerr := Parse(s)
		want, ok := reference(s)
		if !ok {
			if err == nil || uerr == nil || v != 0 || u != 0 {
				t.Fatalf("accepted %q: %d %v / %d %v", s, v, err, u, uerr)
			}
			return
		}
		if err != nil || v != want {
			t.Fatalf("ParseSigned(%q) = %d, %v; want %d", s, v, err, want)
		}
		switch {
		case s[0] == '-' && (uerr != ErrNegative || u != 0):
			t.Fatalf("Parse(%q) = %d, %v; want ErrNegative", s, u, uerr)
		case s[0] != '-' && (uerr != nil || u != want):
			t.Fatalf("Parse(%q) = %d, %v; want %d", s, u, uerr, want)
		}
		if back, err := ParseSigned(Append(nil, v)); err != nil || back != v {
			t.Fatalf("Append round trip of %d: %d, %v", v, back, err)
		}
	})
}

// reference returns the micros of s by the grammar and limits, computed
// with math/big.
func reference(s string) (int64, bool) {
	if len(s) > maxTextLen || !grammar.MatchString(s) {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, false
	}
	m := new(big.Rat).Mul(r, million)
	if !m.IsInt() || new(big.Int).Abs(m.Num()).Cmp(big.NewInt(MaxText)) > 0 {
		return 0, false
	}
	return m.Num().Int64(), true
}

// FuzzFromFloat compares FromFloat with math/big: the shortest decimal of
// f, times a million, rounded up, saturated.
func FuzzFromFloat(f *testing.F) {
	for _, v := range []float64{0, 0.1, 1.2345671, 0.0000015, 1e-7, 1e12, 9223372036854.775, 1e300, -1, 2.675} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		got := FromFloat(v)
		var want int64
		switch {
		case !(v > 0):
			want = 0
		case math.IsInf(v, 1):
			want = Max
		default:
			r, _ := new(big.Rat).SetString(strconv.FormatFloat(v, 'f', -1, 64))
			m := new(big.Rat).Mul(r, million)
			q := new(big.Int).Quo(m.Num(), m.Denom())
			if !m.IsInt() {
				q.Add(q, big.NewInt(1))
			}
			if q.IsInt64() {
				want = q.Int64()
			} else {
				want = Max
			}
		}
		if got != want {
			t.Fatalf("FromFloat(%v) = %d, want %d", v, got, want)
		}
	})
}
