package records

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Sink names: the sink label of the metrics. SinkJournal is the charge
// export log of the bidder's journal (a charge it could not keep for
// export is dropped there).
const (
	SinkFile    = "file"
	SinkKafka   = "kafka"
	SinkJournal = "journal"
)

var sinkNames = []string{SinkFile, SinkKafka, SinkJournal}

// Metrics are the records' Prometheus metrics, shared by the Recorder,
// the sinks and the charge exporters: rtbd_records_written_total{kind,sink},
// rtbd_records_dropped_total{kind,sink}, rtbd_records_errors_total{sink}.
// Labels are fixed (kinds and sink names). A nil *Metrics counts nothing.
type Metrics struct {
	sinks map[string]*SinkMetrics
}

// NewMetrics makes the metrics and registers them with reg (nil: not
// registered). Errors are logged to log every logEvery (default 1m): a
// failing sink logs once per interval, however many records it fails.
func NewMetrics(reg prometheus.Registerer, log *zap.Logger, logEvery time.Duration) (*Metrics, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if logEvery <= 0 {
		logEvery = time.Minute
	}
	written := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_records_written_total",
		Help: "Log-level records a sink wrote, by kind and sink (file: in a completed file; kafka: acknowledged by the brokers)."},
		[]string{"kind", "sink"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_records_dropped_total",
		Help: "Log-level records dropped, by kind and sink (file, kafka, journal): the sink's buffer (records.buffer_bytes) was full, the sink failed (disk full, directory gone, brokers down), or, for charge records, the journal's export log was full (records.charge_max_pending)."},
		[]string{"kind", "sink"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_records_errors_total",
		Help: "Failed writes of a records sink (logged once per minute per sink)."},
		[]string{"sink"})
	m := &Metrics{sinks: map[string]*SinkMetrics{}}
	for _, s := range sinkNames {
		sm := &SinkMetrics{name: s, errs: errs.WithLabelValues(s), log: log, every: logEvery}
		for k := KindBid; k < numKinds; k++ {
			sm.written[k] = written.WithLabelValues(k.String(), s)
			sm.dropped[k] = dropped.WithLabelValues(k.String(), s)
		}
		m.sinks[s] = sm
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{written, dropped, errs} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Sink returns the counters of sink name (SinkFile, SinkKafka,
// SinkJournal); nil (counting nothing) for another name or a nil m.
func (m *Metrics) Sink(name string) *SinkMetrics {
	if m == nil {
		return nil
	}
	return m.sinks[name]
}

// SinkMetrics are one sink's counters. Methods are nil-safe and safe for
// concurrent use.
type SinkMetrics struct {
	name             string
	written, dropped [numKinds]prometheus.Counter
	errs             prometheus.Counter
	log              *zap.Logger
	every            time.Duration

	mu      sync.Mutex
	lastLog time.Time
	muted   int
}

// Written counts n records of kind k written.
func (s *SinkMetrics) Written(k Kind, n int) {
	if s != nil && k.Valid() && n > 0 {
		s.written[k].Add(float64(n))
	}
}

// Dropped counts n records of kind k dropped.
func (s *SinkMetrics) Dropped(k Kind, n int) {
	if s != nil && k.Valid() && n > 0 {
		s.dropped[k].Add(float64(n))
	}
}

// Fail counts a failed write and logs err, at most once per interval
// (saying how many failures were not logged since).
func (s *SinkMetrics) Fail(err error) {
	if s == nil || err == nil {
		return
	}
	s.errs.Inc()
	s.mu.Lock()
	now := time.Now()
	if now.Sub(s.lastLog) < s.every {
		s.muted++
		s.mu.Unlock()
		return
	}
	muted := s.muted
	s.lastLog, s.muted = now, 0
	s.mu.Unlock()
	s.log.Error("records: sink failing; records other than charges are dropped meanwhile",
		zap.String("sink", s.name), zap.Int("failures_not_logged", muted), zap.Error(err))
}
