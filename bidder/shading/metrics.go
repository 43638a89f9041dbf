package shading

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the rtbd_shading_* metrics of a bidder. They exist (at 0)
// without shading too, so a dashboard finds its series either way.
type Metrics struct {
	bids     [NumHow]prometheus.Counter
	minToWin [NumBadMinToWin]prometheus.Counter
	observed [2]prometheus.Counter    // loss, win
	fleet    [2][2]prometheus.Counter // load, sync x error, ok
}

// NewMetrics returns the metrics of sh (nil: no shading), registered with
// reg (nil: none).
func NewMetrics(reg prometheus.Registerer, sh *Shader) (*Metrics, error) {
	bids := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_bids_total",
		Help: "Bids made, by how their price was set: off (bid_shading: off), second_price, fixed_price, no_data (first price, no estimate yet: the value), shaded, explored, explored_cold."},
		[]string{"how"})
	mtw := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_min_to_win_total",
		Help: "The m (minimum bid to win) of win and loss notices that teach bid shading, by result: ok, or why it was not used (absent, macro, not_price, negative, above_bid, below_bid, absurd)."},
		[]string{"result"})
	obs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_observations_total",
		Help: "Wins and losses bid shading learned from (once per bid and bidder)."},
		[]string{"outcome"})
	fleet := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_shading_fleet_total",
		Help: "Reads and writes of the fleet's shading counts in the spend store: op load (at start) or sync (flush and read, every shading.fleet_interval), result ok or error."},
		[]string{"op", "result"})
	segs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_shading_segments",
		Help: "Bid shading segments held (all levels)."}, func() float64 { return float64(sh.Len()) })
	m := &Metrics{}
	for h := range NumHow {
		m.bids[h] = bids.WithLabelValues(h.String())
	}
	for r := range NumBadMinToWin {
		m.minToWin[r] = mtw.WithLabelValues(r.String())
	}
	m.observed[0], m.observed[1] = obs.WithLabelValues("loss"), obs.WithLabelValues("win")
	for i, op := range []string{"load", "sync"} {
		m.fleet[i][0], m.fleet[i][1] = fleet.WithLabelValues(op, "error"), fleet.WithLabelValues(op, "ok")
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{bids, mtw, obs, fleet, segs} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Bid counts a bid made, by how its price was set.
func (m *Metrics) Bid(how How) { m.bids[how].Inc() }

// Learned counts a win (or a loss) learned from a notice, and the result
// of the notice's m.
func (m *Metrics) Learned(win bool, r BadMinToWin) {
	m.minToWin[r].Inc()
	if win {
		m.observed[1].Inc()
	} else {
		m.observed[0].Inc()
	}
}

// Fleet counts one read or write of the fleet's counts in the store: a
// load (at start) or a sync, ok or not.
func (m *Metrics) Fleet(load, ok bool) {
	op, r := 1, 0
	if load {
		op = 0
	}
	if ok {
		r = 1
	}
	m.fleet[op][r].Inc()
}
