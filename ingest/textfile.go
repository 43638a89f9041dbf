package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The textfile: at the end of every run given -textfile PATH, ingest
// writes the run's metrics to PATH in the Prometheus text format, for
// node_exporter's textfile collector (--collector.textfile.directory; the
// name must end in .prom). It is written to a temporary file and renamed
// over PATH, so a scrape never reads half of it. The last success's time
// survives a failed run: it is carried over from the file the failed run
// replaces.

// successMetric names the time of the last successful run, which a failed
// run carries over.
const successMetric = "rtbd_ingest_last_success_timestamp_seconds"

// runMetrics are the gauges of one run, registered on a registry of their
// own (the textfile holds them and nothing else).
type runMetrics struct {
	reg                                                    *prometheus.Registry
	end, success, lastOK, duration, read, accepted, reject prometheus.Gauge
	products, generation                                   prometheus.Gauge
	runs                                                   *prometheus.GaugeVec
}

func newRunMetrics() *runMetrics {
	m := &runMetrics{
		reg:        prometheus.NewRegistry(),
		end:        prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_timestamp_seconds", Help: "When the last ingest run ended (unix seconds), whatever its outcome."}),
		success:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_success", Help: "1 if the last ingest run published its version (or was an empty delta), 0 if it failed (the live version is untouched)."}),
		lastOK:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_success_timestamp_seconds", Help: "When the last successful ingest run ended (unix seconds; carried over by failed runs, 0 if none is known)."}),
		duration:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_duration_seconds", Help: "Wall time of the last ingest run, in seconds."}),
		read:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_rows_read", Help: "Feed rows the last ingest run read."}),
		accepted:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_rows_accepted", Help: "Valid rows of the last ingest run (upserts and deletes)."}),
		reject:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_rows_rejected", Help: "Rows the last ingest run rejected (written to its reject file)."}),
		products:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_products", Help: "Products in the version the last ingest run built (an estimate for a layered delta version)."}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_ingest_generation", Help: "Generation of the data directory after the last ingest run (the live version's, as catalog nodes report it)."}),
		runs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rtbd_ingest_last_run_info", Help: "1, labelled with the last ingest run's mode (full, delta) and method (bulk, batch)."},
			[]string{"mode", "method"}),
	}
	m.reg.MustRegister(m.end, m.success, m.lastOK, m.duration, m.read, m.accepted, m.reject, m.products, m.generation, m.runs)
	return m
}

// RunResult is what the textfile says of one run.
type RunResult struct {
	// Mode ("full", "delta") and Method (MethodBulk, MethodBatch) of the run.
	Mode, Method string
	// Summary is the run's summary, nil when it failed before it began.
	Summary *Summary
	// Err is the run's error, nil when it succeeded.
	Err error
	// Start and End are when the run started and ended.
	Start, End time.Time
}

// WriteTextfile writes the metrics of run r to path (see the comment
// above).
func WriteTextfile(path string, r RunResult) error {
	m := newRunMetrics()
	m.end.Set(float64(r.End.UnixNano()) / 1e9)
	m.duration.Set(r.End.Sub(r.Start).Seconds())
	if r.Err == nil {
		m.success.Set(1)
		m.lastOK.Set(float64(r.End.UnixNano()) / 1e9)
	} else {
		prev, err := lastSuccess(path)
		if err != nil {
			return err
		}
		m.lastOK.Set(prev)
	}
	if sum := r.Summary; sum != nil {
		m.read.Set(float64(sum.RowsRead))
		m.accepted.Set(float64(sum.Accepted))
		m.reject.Set(float64(sum.RejectedTotal))
		m.products.Set(float64(sum.Products))
		m.generation.Set(float64(sum.Generation))
	}
	m.runs.WithLabelValues(r.Mode, r.Method).Set(1)
	if err := prometheus.WriteToTextfile(path, m.reg); err != nil {
		return fmt.Errorf("ingest: -textfile: %w", err)
	}
	return nil
}

// lastSuccess reads successMetric from the textfile at path: 0 when the
// file does not exist or does not have it.
func lastSuccess(path string) (float64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ingest: -textfile: %w", err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		return 0, nil // not ours, or torn by hand: start over
	}
	if mf := mfs[successMetric]; mf != nil && len(mf.GetMetric()) == 1 {
		return mf.GetMetric()[0].GetGauge().GetValue(), nil
	}
	return 0, nil
}
