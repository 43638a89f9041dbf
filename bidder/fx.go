package bidder

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// Results of a bid request's ext.prebid.currency.rates, the result label
// of rtbd_fx_request_rates_total.
const (
	fxRatesOK        = iota // every entry used
	fxRatesInvalid          // some entries ignored: not ISO 4217 codes, or a rate not a number in [1e-9, 1e9]
	fxRatesTruncated        // more than money.MaxPairs rates: the rest ignored
	numFXRatesResults
)

var fxRatesNames = [numFXRatesResults]string{"ok", "invalid", "truncated"}

// requestRates are the conversion rates a bid request carries in
// ext.prebid.currency, as Prebid Server forwards them: rates
// {"FROM":{"TO":rate}} (units of TO per unit of FROM) and usepbsrates
// (default true). With usepbsrates true the request's rates come first
// and rtbd's own fill the gaps; with false only the request's are used, so
// a floor whose pair they lack gets no bid (Prebid Server's rule for its
// own conversions).
type requestRates struct {
	pairs  money.Pairs
	custom bool // ext.prebid.currency present
	usePBS bool // ext.prebid.currency.usepbsrates, default true
}

func (rr *requestRates) reset() {
	rr.pairs.Reset()
	rr.custom, rr.usePBS = false, true
}

// read fills rr from a bid request's ext.prebid.currency (decoded with
// the request). It returns the result to count (fxRates*) and whether
// rates were present at all. It makes no allocation once rr's table has
// grown: codes are kept as money.Code's constants, never as strings of the
// request.
func (rr *requestRates) read(c *rtb.CurrencyExt) (result int, present bool) {
	rr.reset()
	if !c.Present {
		return fxRatesOK, false
	}
	rr.custom = true
	rr.usePBS = !c.NoPBSRates
	if !c.HasRates {
		return fxRatesOK, false
	}
	result = fxRatesOK
	if c.Invalid {
		result = fxRatesInvalid
	}
	for _, r := range c.Rates {
		switch err := rr.pairs.Add(r.From, r.To, r.Rate); {
		case errors.Is(err, money.ErrPairsFull):
			return fxRatesTruncated, true
		case err != nil:
			result = fxRatesInvalid
		}
	}
	return result, true
}

// convertFloor converts a floor of micros of from into micros of to,
// rounded up: with the request's rates first (when it has
// ext.prebid.currency), then, unless usepbsrates is false, with own. A
// zero floor is no floor: 0 in any currency. ok is false when no rate
// applies (the caller's no-bid, nbr 506).
func (rr *requestRates) convertFloor(own *money.Rates, floor int64, from, to string) (int64, bool) {
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

// fxMetrics count the bid path's use of request rates.
type fxMetrics struct {
	requestRates [numFXRatesResults]prometheus.Counter
}

func newFXMetrics(reg prometheus.Registerer) (*fxMetrics, error) {
	m := &fxMetrics{}
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_fx_request_rates_total",
		Help: "Bid requests carrying ext.prebid.currency.rates, by result: ok, invalid (entries ignored: unknown codes, rates not numbers in [1e-9, 1e9]), truncated (more than 128 rates: the rest ignored)."},
		[]string{"result"})
	for i, n := range fxRatesNames {
		m.requestRates[i] = v.WithLabelValues(n)
	}
	if reg != nil {
		if err := reg.Register(v); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// rates returns rtbd's own rates (Options.Rates, or what SetRates last
// set). The value is immutable: hold the pointer for a whole request.
func (b *Bidder) rates() *money.Rates { return b.fx.Load() }

// SetRates replaces rtbd's own conversion rates (bidder.fx_rates with
// bidder.fx_file's), atomically: a request in flight finishes with the
// rates it started with. Options.Currency must keep a rate. Safe for
// concurrent use.
func (b *Bidder) SetRates(r money.Rates) error {
	if !r.Known(b.opts.Currency) {
		return fmt.Errorf("%w: bidder currency %s has no rate", ErrOptions, b.opts.Currency)
	}
	b.fx.Store(&r)
	return nil
}
