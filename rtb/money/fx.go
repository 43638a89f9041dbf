package money

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Errors of ParseRate and ParseRates.
var (
	// ErrRates is wrapped by every ParseRates error.
	ErrRates = errors.New("money: invalid fx rates")
	// ErrRateSyntax: an entry is not CUR=rate.
	ErrRateSyntax = errors.New("money: fx rate: want CUR=rate")
	// ErrRateCode: the currency of an entry is not an ISO 4217 code (Code).
	ErrRateCode = errors.New("money: fx rate: not an ISO 4217 code")
	// ErrRateValue: the rate is not a number in (0, 1e9].
	ErrRateValue = errors.New("money: fx rate: rate must be a number > 0 and <= 1e9")
	// ErrRateUSD: an entry sets USD, the base (rate 1).
	ErrRateUSD = errors.New("money: fx rate: USD is the base (rate 1) and cannot be set")
)

// maxRate bounds a rate: no currency is worth a billion dollars a unit.
const maxRate = 1e9

// ParseRate parses one rate entry "CUR=rate" ("JPY=0.0067": one yen is
// 0.0067 US dollars), spaces around either side ignored, the code in any
// case ("jpy=0.0067"). cur is the canonical (upper-case) code, not USD;
// usdPer is in (0, 1e9]. Errors: ErrRateSyntax, ErrRateCode, ErrRateValue,
// ErrRateUSD.
func ParseRate(entry string) (cur string, usdPer float64, err error) {
	c, rate, ok := strings.Cut(entry, "=")
	c, rate = strings.TrimSpace(c), strings.TrimSpace(rate)
	f, ferr := strconv.ParseFloat(rate, 64)
	code, known := Code(c)
	switch {
	case !ok:
		return "", 0, ErrRateSyntax
	case !known:
		return "", 0, ErrRateCode
	case ferr != nil || !(f > 0) || f > maxRate:
		return "", 0, ErrRateValue
	case code == "USD":
		return "", 0, ErrRateUSD
	}
	return code, f, nil
}

// Rates converts between currencies: each rate is the US dollars one unit
// of the currency is worth (USD itself is always 1). A Rates is immutable
// once built and safe for concurrent use; the zero value knows only USD.
type Rates struct {
	usdPer map[string]float64 // canonical code -> USD per unit; never "USD"
}

// ParseRates builds Rates from rate entries (see ParseRate), such as the
// bidder's bidder.fx_rates; a currency listed twice is an error. Errors
// wrap ErrRates and the entry's ParseRate error.
func ParseRates(list []string) (Rates, error) {
	r := Rates{usdPer: make(map[string]float64, len(list))}
	for i, kv := range list {
		cur, f, err := ParseRate(kv)
		if err != nil {
			return Rates{}, fmt.Errorf("%w: entry %d %q: %w", ErrRates, i, kv, err)
		}
		if r.usdPer[cur] != 0 {
			return Rates{}, fmt.Errorf("%w: entry %d: %s listed twice", ErrRates, i, cur)
		}
		r.usdPer[cur] = f
	}
	return r, nil
}

// rate returns the USD value of one unit of cur; "" is USD (OpenRTB's
// default currency). Codes are matched as Code matches them. 0 if unknown.
func (r Rates) rate(cur string) float64 {
	if cur == "" || cur == "USD" {
		return 1
	}
	code, ok := Code(cur)
	switch {
	case !ok:
		return 0
	case code == "USD":
		return 1
	}
	return r.usdPer[code]
}

// Known reports whether cur ("" is USD; any case) has a rate.
func (r Rates) Known(cur string) bool { return r.rate(cur) > 0 }

// Convert converts micros of from into micros of to, rounded down to the
// micro (a bid is never raised by conversion); a float error of up to 1e-6
// micro is forgiven, so an exact result is not lowered by one. The result
// saturates by the package's rule (0..Max). ok is false if either currency
// has no rate. The same currency (or two spellings of it) returns micros
// unchanged.
func (r Rates) Convert(micros int64, from, to string) (int64, bool) {
	return r.convert(micros, from, to, false)
}

// ConvertUp converts like Convert but rounds up (a floor is never lowered
// by conversion), forgiving a float error of up to 1e-6 micro the other way.
func (r Rates) ConvertUp(micros int64, from, to string) (int64, bool) {
	return r.convert(micros, from, to, true)
}

func (r Rates) convert(micros int64, from, to string, up bool) (int64, bool) {
	rf, rt, ok := r.pair(from, to)
	switch {
	case !ok:
		return 0, false
	case rf == rt:
		return micros, true
	}
	v := float64(micros) * rf / rt
	if up {
		return saturate(math.Ceil(v - 1e-6)), true
	}
	return saturate(math.Floor(v + 1e-6)), true
}

// pair returns the rates of from and to; ok is false if either is unknown.
func (r Rates) pair(from, to string) (rf, rt float64, ok bool) {
	if from == to {
		return 1, 1, true
	}
	rf, rt = r.rate(from), r.rate(to)
	return rf, rt, rf > 0 && rt > 0
}
