package bidder

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrRates is wrapped by ParseRates errors.
var ErrRates = errors.New("bidder: invalid fx rates")

// Rates converts between currencies: each rate is the US dollars one unit
// of the currency is worth (USD itself is always 1). A Rates is immutable
// once built and safe for concurrent use; the zero value knows only USD.
type Rates struct {
	usdPer map[string]float64
}

// ParseRates parses bidder.fx_rates entries "CUR=rate" ("JPY=0.0067": one
// yen is 0.0067 USD). Codes are 3 upper-case letters; rates > 0; USD cannot
// be listed (it is 1); a code listed twice is an error.
func ParseRates(list []string) (Rates, error) {
	r := Rates{usdPer: map[string]float64{"USD": 1}}
	for i, kv := range list {
		cur, rate, ok := strings.Cut(kv, "=")
		cur, rate = strings.TrimSpace(cur), strings.TrimSpace(rate)
		f, err := strconv.ParseFloat(rate, 64)
		switch {
		case !ok || !isUpperCurrency(cur):
			return Rates{}, fmt.Errorf("%w: entry %d %q: want CUR=rate", ErrRates, i, kv)
		case err != nil || !(f > 0) || math.IsInf(f, 0):
			return Rates{}, fmt.Errorf("%w: entry %d %q: rate must be a number > 0", ErrRates, i, kv)
		case r.usdPer[cur] != 0:
			return Rates{}, fmt.Errorf("%w: entry %d: %s listed twice (or USD, which is 1)", ErrRates, i, cur)
		}
		r.usdPer[cur] = f
	}
	return r, nil
}

func isUpperCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// rate returns the USD value of one unit of cur; "" is USD (OpenRTB's
// default currency). Lower-case codes are accepted. 0 if unknown.
func (r Rates) rate(cur string) float64 {
	switch {
	case cur == "" || cur == "USD":
		return 1
	case len(cur) != 3:
		return 0
	}
	f := r.usdPer[cur]
	if f == 0 {
		var up [3]byte
		for i := 0; i < 3; i++ {
			c := cur[i]
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			up[i] = c
		}
		f = r.usdPer[string(up[:])] // no allocation: map lookup of a converted slice
	}
	return f
}

// Known reports whether cur has a rate.
func (r Rates) Known(cur string) bool { return r.rate(cur) > 0 }

// Convert converts micros of from into micros of to, rounded down (a bid is
// never raised by conversion). ok is false if either currency has no rate.
func (r Rates) Convert(micros int64, from, to string) (int64, bool) {
	v, ok := r.convert(micros, from, to)
	return int64(math.Floor(v + 1e-6)), ok
}

// ConvertUp converts like Convert but rounds up (a floor is never lowered
// by conversion).
func (r Rates) ConvertUp(micros int64, from, to string) (int64, bool) {
	v, ok := r.convert(micros, from, to)
	return int64(math.Ceil(v - 1e-6)), ok
}

func (r Rates) convert(micros int64, from, to string) (float64, bool) {
	if from == to {
		return float64(micros), true
	}
	rf, rt := r.rate(from), r.rate(to)
	if rf == 0 || rt == 0 {
		return 0, false
	}
	v := float64(micros) * rf / rt
	if v >= math.MaxInt64/2 {
		v = math.MaxInt64 / 2
	}
	return v, true
}
