// Package metrictest reads metric values out of a Prometheus registry, for
// the bidder's tests.
package metrictest

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value returns the value of the first series of metric family name in g
// whose labels include every pair in labels (given as name, value, name,
// value, ...): a counter's or gauge's value, a histogram's sample count.
// It is 0 when no series matches. A failing Gather fails t.
func Value(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, _ := find(t, g, name, labels)
	return v
}

// Must is Value, failing t when no series matches.
func Must(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, ok := find(t, g, name, labels)
	if !ok {
		t.Fatalf("metric %s%q not found", name, labels)
	}
	return v
}

// Sum is the sum of the values (as Value reads them) of every series of
// name in g whose labels include labels; 0 when none does.
func Sum(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	var n float64
	for _, m := range series(t, g, name, labels) {
		n += value(m)
	}
	return n
}

func find(t testing.TB, g prometheus.Gatherer, name string, labels []string) (float64, bool) {
	t.Helper()
	ms := series(t, g, name, labels)
	if len(ms) == 0 {
		return 0, false
	}
	return value(ms[0]), true
}

// series returns the series of name in g that carry every label pair.
func series(t testing.TB, g prometheus.Gatherer, name string, labels []string) []*dto.Metric {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("metric %s: labels %q are not name, value pairs", name, labels)
	}
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue metric
				}
			}
			out = append(out, m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// Text is the value of the sample name (with its labels, as exposed) in a
// Prometheus text exposition, -1 when absent.
func Text(text, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}
