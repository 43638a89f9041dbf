// Package fasthist is a Prometheus histogram of durations in seconds that
// is cheaper to observe than client_golang's, for the bid path, which
// observes several per request.
//
// An observation is two atomic adds: its bucket's count
// and the sum, kept in whole nanoseconds (client_golang's Histogram makes
// four atomic updates, one of them a compare-and-swap loop on a float sum,
// to keep count, buckets and sum consistent under concurrent scrapes). The
// count is the sum of the bucket counts, read in one pass at scrape time,
// so count and buckets always agree; the sum may miss an observation being
// made during the scrape, which the next scrape has.
//
// The exposition is that of a client_golang histogram with the same name,
// help, buckets and label (Vec implements prometheus.Collector), and every
// label value's series exists from the start, at zero.
package fasthist

import (
	"math"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Histogram is one series. Observe is safe for concurrent use.
type Histogram struct {
	bounds []float64       // upper bounds, seconds, ascending
	counts []atomic.Uint64 // per bucket, the last for +Inf
	sumNs  atomic.Int64
}

// Observe adds one observation of v seconds. It implements
// prometheus.Observer. NaN is ignored.
func (h *Histogram) Observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(int64(v * 1e9))
}

// snapshot returns the count, the sum in seconds and the cumulative
// bucket counts.
func (h *Histogram) snapshot() (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(h.bounds))
	for i, b := range h.bounds {
		count += h.counts[i].Load()
		buckets[b] = count
	}
	count += h.counts[len(h.bounds)].Load()
	return count, float64(h.sumNs.Load()) / 1e9, buckets
}

// Vec is a histogram family with one series per value of one label (or a
// single series without a label). Register it like any collector.
type Vec struct {
	desc   *prometheus.Desc
	values []string // label values, one per series; nil without a label
	series []*Histogram
}

// NewVec returns the family name (help, buckets in seconds, ascending)
// with one series per value of the label named label; with label "" it
// has one series and no label (values must then be empty).
func NewVec(name, help string, buckets []float64, label string, values ...string) *Vec {
	var labels []string
	if label != "" {
		labels = []string{label}
	}
	v := &Vec{desc: prometheus.NewDesc(name, help, labels, nil), values: values}
	n := len(values)
	if label == "" {
		n, v.values = 1, nil
	}
	for range n {
		v.series = append(v.series, &Histogram{bounds: buckets, counts: make([]atomic.Uint64, len(buckets)+1)})
	}
	return v
}

// At returns the series of the i-th label value (0 without a label).
func (v *Vec) At(i int) *Histogram { return v.series[i] }

// Describe implements prometheus.Collector.
func (v *Vec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector.
func (v *Vec) Collect(ch chan<- prometheus.Metric) {
	for i, h := range v.series {
		count, sum, buckets := h.snapshot()
		var lv []string
		if v.values != nil {
			lv = []string{v.values[i]}
		}
		ch <- prometheus.MustNewConstHistogram(v.desc, count, sum, buckets, lv...)
	}
}
