// Package fx is the bidder's currency conversion: the rates a bid request
// carries (ext.prebid.currency) and rtbd's own rates kept current from
// bidder.fx_file.
package fx

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// Results of a bid request's ext.prebid.currency.rates, the result label
// of rtbd_fx_request_rates_total.
const (
	RatesOK        = iota // every entry used
	RatesInvalid          // some entries ignored: not ISO 4217 codes, or a rate not a number in [1e-9, 1e9]
	RatesTruncated        // more than money.MaxPairs rates: the rest ignored
	NumRatesResults
)

// RatesNames are the result labels, by result.
var RatesNames = [NumRatesResults]string{"ok", "invalid", "truncated"}

// RequestRates are the conversion rates a bid request carries in
// ext.prebid.currency, as Prebid Server forwards them: rates
// {"FROM":{"TO":rate}} (units of TO per unit of FROM) and usepbsrates
// (default true). With usepbsrates true the request's rates come first
// and rtbd's own fill the gaps; with false only the request's are used, so
// a floor whose pair they lack gets no bid (Prebid Server's rule for its
// own conversions).
type RequestRates struct {
	pairs  money.Pairs
	custom bool // ext.prebid.currency present
	usePBS bool // ext.prebid.currency.usepbsrates, default true
}

// Reset empties rr for the next request.
func (rr *RequestRates) Reset() {
	rr.pairs.Reset()
	rr.custom, rr.usePBS = false, true
}

// Read fills rr from a bid request's ext.prebid.currency (decoded with
// the request). It returns the result to count (Rates*) and whether
// rates were present at all. It makes no allocation once rr's table has
// grown: codes are kept as money.Code's constants, never as strings of the
// request.
func (rr *RequestRates) Read(c *rtb.CurrencyExt) (result int, present bool) {
	rr.Reset()
	if !c.Present {
		return RatesOK, false
	}
	rr.custom = true
	rr.usePBS = !c.NoPBSRates
	if !c.HasRates {
		return RatesOK, false
	}
	result = RatesOK
	if c.Invalid {
		result = RatesInvalid
	}
	for _, r := range c.Rates {
		switch err := rr.pairs.Add(r.From, r.To, r.Rate); {
		case errors.Is(err, money.ErrPairsFull):
			return RatesTruncated, true
		case err != nil:
			result = RatesInvalid
		}
	}
	return result, true
}

// ConvertFloor converts a floor of micros of from into micros of to,
// rounded up: with the request's rates first (when it has
// ext.prebid.currency), then, unless usepbsrates is false, with own. A
// zero floor is no floor: 0 in any currency. ok is false when no rate
// applies (the caller's no-bid, nbr 506).
func (rr *RequestRates) ConvertFloor(own *money.Rates, floor int64, from, to string) (int64, bool) {
	if floor <= 0 {
		return 0, true
	}
	if rr.custom {
		if v, ok := rr.pairs.ConvertUp(floor, from, to); ok {
			return v, true
		}
		if !rr.usePBS {
			return 0, false
		}
	}
	return own.ConvertUp(floor, from, to)
}

// RequestOnly reports whether only the request's rates apply
// (ext.prebid.currency with usepbsrates false).
func (rr *RequestRates) RequestOnly() bool { return rr.custom && !rr.usePBS }

// Metrics count the bid path's use of request rates.
type Metrics struct {
	RequestRates [NumRatesResults]prometheus.Counter // by Rates* result
}

// NewMetrics registers the request rates' counters on reg (none when nil).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{}
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_fx_request_rates_total",
		Help: "Bid requests carrying ext.prebid.currency.rates, by result: ok, invalid (entries ignored: unknown codes, rates not numbers in [1e-9, 1e9]), truncated (more than 128 rates: the rest ignored)."},
		[]string{"result"})
	for i, n := range RatesNames {
		m.RequestRates[i] = v.WithLabelValues(n)
	}
	if reg != nil {
		if err := reg.Register(v); err != nil {
			return nil, err
		}
	}
	return m, nil
}
