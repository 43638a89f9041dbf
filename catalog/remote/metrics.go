package remote

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// numCodes is the number of gRPC status codes (OK .. Unauthenticated).
const numCodes = int(codes.Unauthenticated) + 1

// metrics are the client's Prometheus collectors. A nil *metrics is valid
// and records nothing (Options.Registerer == nil).
type metrics struct {
	calls      [numCodes]prometheus.Counter // by gRPC code, label values fixed
	seconds    prometheus.Histogram
	nodes      prometheus.Gauge
	resolvesOK prometheus.Counter
	resolvesKO prometheus.Counter
}

// newMetrics registers the collectors with reg. A collector that is already
// registered (a second Client on the same registry) is shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_calls_total",
		Help: "GetProductMasters calls made by the remote catalog client, by final gRPC status code.",
	}, []string{"code"})
	seconds := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "rtbd_catalog_client_call_seconds",
		Help:    "Duration of GetProductMasters calls made by the remote catalog client, retries included, in seconds.",
		Buckets: []float64{50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 250e-3, 1},
	})
	nodes := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rtbd_catalog_client_nodes",
		Help: "Catalog nodes in the remote client's last good resolution.",
	})
	resolves := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_resolves_total",
		Help: "Resolutions of the catalog node list, by result (ok, error).",
	}, []string{"result"})

	var err error
	calls = register(reg, calls, &err)
	seconds = register(reg, seconds, &err)
	nodes = register(reg, nodes, &err)
	resolves = register(reg, resolves, &err)
	if err != nil {
		return nil, err
	}
	m := &metrics{
		seconds:    seconds,
		nodes:      nodes,
		resolvesOK: resolves.WithLabelValues("ok"),
		resolvesKO: resolves.WithLabelValues("error"),
	}
	for c := range numCodes {
		m.calls[c] = calls.WithLabelValues(codes.Code(c).String())
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	if *errp != nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*errp = fmt.Errorf("remote: registering metrics: %w", err)
	}
	return c
}

func (m *metrics) call(code codes.Code, seconds float64) {
	if m == nil {
		return
	}
	if int(code) < numCodes {
		m.calls[code].Inc()
	} else {
		m.calls[codes.Unknown].Inc()
	}
	m.seconds.Observe(seconds)
}

func (m *metrics) resolve(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.resolvesOK.Inc()
	} else {
		m.resolvesKO.Inc()
	}
}

func (m *metrics) setNodes(n int) {
	if m == nil {
		return
	}
	m.nodes.Set(float64(n))
}
