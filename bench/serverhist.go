package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// WatchHistogram names a Prometheus histogram that a watched server keeps
// about itself (rtbd_bidder_request_seconds: arrival to answer), read from
// its /metrics at the start and at the end of the measured phase. Set
// beside the harness's own latency it tells time spent in the server from
// time spent getting to it and back (the generator's lag, the network).
type WatchHistogram struct {
	Name   string // the server, as in the report
	URL    string // its Prometheus text endpoint, e.g. http://127.0.0.1:9090/metrics
	Metric string // a histogram; series with labels are summed
}

// ServerHistogram is a WatchHistogram's change over the measured phase.
type ServerHistogram struct {
	Name   string `json:"name"`
	Metric string `json:"metric"`
	Count  int64  `json:"count"`
	// Buckets are cumulative counts by upper bound (seconds), +Inf left
	// out (it is Count).
	Buckets []ServerBucket `json:"buckets"`
	// OverTmax counts the observations above TmaxBoundSec, the smallest
	// bucket bound at or above the run's tmax: answers the server itself
	// took longer than tmax over (at least; up to the bound's rounding).
	// -1 when the run has no tmax or no bucket reaches it.
	OverTmax     int64   `json:"over_tmax"`
	TmaxBoundSec float64 `json:"tmax_bound_sec,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// ServerBucket is one cumulative histogram bucket.
type ServerBucket struct {
	LeSec float64 `json:"le_sec"`
	Count int64   `json:"count"`
}

// histSnapshot is one reading of a histogram: cumulative counts by bound.
type histSnapshot struct {
	count   int64
	buckets map[float64]int64
}

var errNoHistogram = errors.New("no such histogram")

// readHistogram fetches url and sums the histogram metric over its series.
func readHistogram(ctx context.Context, url, metric string) (histSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return histSnapshot{}, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return histSnapshot{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return histSnapshot{}, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return parseHistogram(io.LimitReader(resp.Body, 32<<20), metric)
}

// parseHistogram reads a Prometheus text exposition and sums metric's
// histogram series.
func parseHistogram(r io.Reader, metric string) (histSnapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return histSnapshot{}, fmt.Errorf("metrics: %w", err)
	}
	f, ok := fams[metric]
	if !ok || f.GetType() != dto.MetricType_HISTOGRAM {
		return histSnapshot{}, fmt.Errorf("%w: %s", errNoHistogram, metric)
	}
	s := histSnapshot{buckets: map[float64]int64{}}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		s.count += int64(h.GetSampleCount())
		for _, b := range h.GetBucket() {
			if ub := b.GetUpperBound(); !math.IsInf(ub, 1) {
				s.buckets[ub] += int64(b.GetCumulativeCount())
			}
		}
	}
	return s, nil
}

// serverHistogram is the change from a to b, with tmax's overage.
func serverHistogram(w WatchHistogram, a, b histSnapshot, tmax time.Duration) ServerHistogram {
	h := ServerHistogram{Name: w.Name, Metric: w.Metric, Count: b.count - a.count, OverTmax: -1}
	bounds := make([]float64, 0, len(b.buckets))
	for ub := range b.buckets {
		bounds = append(bounds, ub)
	}
	slices.Sort(bounds)
	for _, ub := range bounds {
		c := b.buckets[ub] - a.buckets[ub]
		h.Buckets = append(h.Buckets, ServerBucket{LeSec: ub, Count: c})
		if tmax > 0 && h.OverTmax < 0 && ub >= tmax.Seconds()-1e-12 {
			h.OverTmax, h.TmaxBoundSec = h.Count-c, ub
		}
	}
	return h
}

// QuantileBound is the smallest bucket bound holding at least q of the
// observations (false when there are none, or the quantile lies in +Inf).
func (h ServerHistogram) QuantileBound(q float64) (float64, bool) {
	if h.Count <= 0 {
		return 0, false
	}
	need := int64(math.Ceil(q * float64(h.Count)))
	for _, b := range h.Buckets {
		if b.Count >= need {
			return b.LeSec, true
		}
	}
	return 0, false
}
