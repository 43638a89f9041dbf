package spend

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of a Writer and its Budgets. Label sets are fixed.
type metrics struct {
	adds          prometheus.Counter
	addsRejected  prometheus.Counter
	flushOK       prometheus.Counter
	flushErr      prometheus.Counter
	flushDeltas   prometheus.Counter
	duplicates    prometheus.Counter
	flushSeconds  prometheus.Observer
	readOK        prometheus.Counter
	readErr       prometheus.Counter
	kicks         prometheus.Counter
	queueFull     prometheus.Counter
	checkOK       prometheus.Counter
	checkDaily    prometheus.Counter
	checkTotal    prometheus.Counter
	checkPacing   prometheus.Counter
	checkUnread   prometheus.Counter
	freqOK        prometheus.Counter
	freqCapped    prometheus.Counter
	collectorsReg []prometheus.Collector
}

func newMetrics(reg prometheus.Registerer, w *Writer) *metrics {
	flushes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_spend_flushes_total",
		Help: "Store.Flush calls by result (ok, error). Each call is one store round trip.",
	}, []string{"result"})
	reads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_spend_reads_total",
		Help: "Store.Read calls (fleet total refresh) by result (ok, error).",
	}, []string{"result"})
	checks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_spend_budget_checks_total",
		Help: "Budgets.Check answers by result (ok, daily_budget, total_budget, pacing, totals_unread).",
	}, []string{"result"})
	freq := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_spend_freq_checks_total",
		Help: "Budgets.FreqOK answers by result (ok, capped).",
	}, []string{"result"})
	adds := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_spend_adds_total",
		Help: "Writer.Add calls by result (ok, rejected).",
	}, []string{"result"})
	deltas := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_spend_flush_deltas_total",
		Help: "Deltas sent to the store (successful flushes only).",
	})
	dups := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_spend_duplicate_notices_total",
		Help: "Notices the store had already charged (a replay to another bidder, after a restart, or a retried flush) and so did not charge again.",
	})
	kicks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_spend_threshold_flushes_total",
		Help: "Campaigns queued for an early flush by a threshold (queued), or left for the timer because the queue was full (queue_full).",
	}, []string{"result"})
	dur := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "rtbd_spend_flush_seconds",
		Help:    "Duration of Store.Flush calls in seconds.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5},
	})
	unflushed := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rtbd_spend_unflushed_micros",
		Help: "Spend (micros, all campaigns and currencies) accepted by this bidder and not yet confirmed by the store.",
	}, func() float64 { return float64(w.unflushedMicros()) })
	retrying := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rtbd_spend_retrying_campaigns",
		Help: "Campaigns whose last flush failed and that hold deltas waiting for a retry.",
	}, func() float64 { return float64(w.retrying()) })
	unread := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rtbd_spend_unread_campaigns",
		Help: "Budgeted campaigns paused because this bidder has not read their fleet totals yet (store unreachable since start, or a campaign just added).",
	}, func() float64 { return float64(w.unreadCampaigns()) })
	m := &metrics{
		adds:         adds.WithLabelValues("ok"),
		addsRejected: adds.WithLabelValues("rejected"),
		flushOK:      flushes.WithLabelValues("ok"),
		flushErr:     flushes.WithLabelValues("error"),
		flushDeltas:  deltas,
		duplicates:   dups,
		flushSeconds: dur,
		readOK:       reads.WithLabelValues("ok"),
		readErr:      reads.WithLabelValues("error"),
		kicks:        kicks.WithLabelValues("queued"),
		queueFull:    kicks.WithLabelValues("queue_full"),
		checkOK:      checks.WithLabelValues("ok"),
		checkDaily:   checks.WithLabelValues("daily_budget"),
		checkTotal:   checks.WithLabelValues("total_budget"),
		checkPacing:  checks.WithLabelValues("pacing"),
		checkUnread:  checks.WithLabelValues("totals_unread"),
		freqOK:       freq.WithLabelValues("ok"),
		freqCapped:   freq.WithLabelValues("capped"),
	}
	m.collectorsReg = []prometheus.Collector{flushes, reads, checks, freq, adds, deltas, dups, kicks, dur, unflushed, retrying, unread}
	if reg != nil {
		for _, c := range m.collectorsReg {
			if err := reg.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					w.log.Sugar().Warnf("spend: register metric: %v", err)
				}
			}
		}
	}
	return m
}
