package bidder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/configs"
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

// maxFXFileBytes bounds a currency file (Prebid's is about 10 KB).
const maxFXFileBytes = 4 << 20

// fxFile keeps a Bidder's rates current from bidder.fx_file: read at
// start, then every bidder.fx_refresh_interval; a failed read keeps the
// last good rates (logged, counted); rates older than bidder.fx_max_age
// (by dataAsOf) are used with a warning. The rtbd_fx_rates_age_seconds
// gauge shows their age.
type fxFile struct {
	path     string
	base     money.Rates // bidder.fx_rates: the file's rates go over them
	currency string      // bidder.currency: must keep a rate
	interval time.Duration
	maxAge   time.Duration
	log      *zap.Logger
	now      func() time.Time

	asOf      atomic.Int64 // dataAsOf of the rates in use, Unix nanoseconds
	refreshes [2]prometheus.Counter
	stop      chan struct{}
	wg        sync.WaitGroup
	stopOnce  sync.Once
}

// Results of a read of bidder.fx_file (rtbd_fx_refresh_total).
const (
	fxRefreshOK = iota
	fxRefreshError
)

// newFXFile reads c.FXFile (its rates over base) and registers the
// file's metrics on reg. The rates to start with are returned; an error
// names the key. Call start to refresh them.
func newFXFile(c configs.Bidder, base money.Rates, log *zap.Logger, reg prometheus.Registerer) (*fxFile, money.Rates, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cur, _ := money.Code(c.Currency)
	w := &fxFile{path: c.FXFile, base: base, currency: cur, interval: c.FXRefreshInterval, maxAge: c.FXMaxAge,
		log: log, now: time.Now, stop: make(chan struct{})}
	r, err := w.load()
	if err != nil {
		return nil, money.Rates{}, fmt.Errorf("bidder: bidder.fx_file: %w", err)
	}
	refreshes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_fx_refresh_total",
		Help: "Reads of bidder.fx_file after the first, by result: ok (rates replaced), error (unreadable or invalid: the last good rates kept)."},
		[]string{"result"})
	w.refreshes[fxRefreshOK] = refreshes.WithLabelValues("ok")
	w.refreshes[fxRefreshError] = refreshes.WithLabelValues("error")
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_fx_rates_age_seconds",
		Help: "Age of the rates of bidder.fx_file in use: now minus their dataAsOf, in seconds."},
		func() float64 { return w.now().Sub(time.Unix(0, w.asOf.Load())).Seconds() })
	if reg != nil {
		for _, col := range []prometheus.Collector{refreshes, age} {
			if err := reg.Register(col); err != nil {
				return nil, money.Rates{}, fmt.Errorf("bidder: metrics: %w", err)
			}
		}
	}
	return w, r, nil
}

// load reads and parses the file and returns its rates over w.base,
// recording their dataAsOf and warning when they are stale.
func (w *fxFile) load() (money.Rates, error) {
	fh, err := os.Open(w.path)
	if err != nil {
		return money.Rates{}, err
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxFXFileBytes+1))
	fh.Close()
	switch {
	case err != nil:
		return money.Rates{}, fmt.Errorf("%s: %w", w.path, err)
	case len(data) > maxFXFileBytes:
		return money.Rates{}, fmt.Errorf("%s: larger than %d bytes", w.path, maxFXFileBytes)
	}
	f, err := money.ParseFXFile(data)
	if err != nil {
		return money.Rates{}, fmt.Errorf("%s: %w", w.path, err)
	}
	r, missing := w.base.WithPairs(&f.Pairs)
	if !r.Known(w.currency) {
		return money.Rates{}, fmt.Errorf("%s: bidder.currency %s has no rate in it nor in bidder.fx_rates", w.path, w.currency)
	}
	if len(f.Skipped) > 0 || len(missing) > 0 {
		w.log.Info("bidder.fx_file: some rates left out", zap.String("file", w.path),
			zap.Strings("unknown_currencies", f.Skipped), zap.Strings("no_usd_rate", missing))
	}
	w.asOf.Store(f.AsOf.UnixNano())
	if age := w.now().Sub(f.AsOf); age > w.maxAge {
		w.log.Warn("bidder.fx_file: rates older than bidder.fx_max_age, used anyway", zap.String("file", w.path),
			zap.Time("data_as_of", f.AsOf), zap.Duration("age", age), zap.Duration("fx_max_age", w.maxAge))
	}
	return r, nil
}

// refresh reads the file again and gives b its rates; on failure b keeps
// its rates, and the failure is counted and logged.
func (w *fxFile) refresh(b *Bidder) {
	r, err := w.load()
	if err == nil {
		err = b.SetRates(r)
	}
	if err != nil {
		w.refreshes[fxRefreshError].Inc()
		w.log.Warn("bidder.fx_file: refresh failed, last good rates kept", zap.Error(err))
		return
	}
	w.refreshes[fxRefreshOK].Inc()
}

// start refreshes b's rates every interval until close.
func (w *fxFile) start(b *Bidder) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(w.interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.refresh(b)
			}
		}
	}()
}

// close stops the refreshes and waits for one in progress. nil-safe.
func (w *fxFile) close() {
	if w == nil {
		return
	}
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}
