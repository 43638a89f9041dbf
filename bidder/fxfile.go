package bidder

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/rtb/money"
	"go.uber.org/zap"
)

// maxFXFileBytes bounds a currency file (Prebid's is about 10 KB).
const maxFXFileBytes = 4 << 20

// FXFile keeps a Bidder's rates current from bidder.fx_file: read at
// start, then every bidder.fx_refresh_interval; a failed read keeps the
// last good rates (logged, counted); rates older than bidder.fx_max_age
// (by dataAsOf) are used with a warning. The rtbd_fx_rates_age_seconds
// gauge shows their age.
type FXFile struct {
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

// NewFXFile reads c.FXFile (its rates over base) and registers the
// file's metrics on reg. The rates to start with are returned; an error
// names the key. Call start to refresh them.
func NewFXFile(c configs.Bidder, base money.Rates, log *zap.Logger, reg prometheus.Registerer) (*FXFile, money.Rates, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cur, _ := money.Code(c.Currency)
	w := &FXFile{path: c.FXFile, base: base, currency: cur, interval: c.FXRefreshInterval, maxAge: c.FXMaxAge,
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
func (w *FXFile) load() (money.Rates, error) {
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
func (w *FXFile) refresh(b *Bidder) {
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

// Start refreshes b's rates every interval until Close.
func (w *FXFile) Start(b *Bidder) {
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

// Close stops the refreshes and waits for one in progress. nil-safe.
func (w *FXFile) Close() {
	if w == nil {
		return
	}
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}
