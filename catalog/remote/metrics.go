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

	methodCalls  [numMethods]prometheus.Counter
	lookups      [3]prometheus.Counter // hit, hit_absent, miss
	ncEntries    prometheus.Gauge
	ncBytes      prometheus.Gauge
	evictions    prometheus.Counter
	retired      [numCauses]prometheus.Counter
	changes      [2]prometheus.Counter // delta, full
	retriesAfter prometheus.Counter    // GetProducts attempts retried after their own timeout
	refreshes    [numRefreshResults]prometheus.Counter
}

// Results of a refresh ahead of expiry (metrics label values).
const (
	refreshOK = iota
	refreshError
	refreshDropped
	numRefreshResults
)

var refreshResultNames = [numRefreshResults]string{"ok", "error", "dropped"}

// Methods, in the order of metricsMethodNames.
const (
	methodGetProductMasters = iota
	methodGetProducts
	methodGetChanges
	numMethods
)

var methodNames = [numMethods]string{"GetProductMasters", "GetProducts", "GetChanges"}

// newMetrics registers the collectors with reg. A collector that is already
// registered (a second Client on the same registry) is shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	var err error
	calls := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_calls_total",
		Help: "Calls made by the remote catalog client (every method), by final gRPC status code.",
	}, []string{"code"}), &err)
	seconds := register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "rtbd_catalog_client_call_seconds",
		Help:    "Duration of calls made by the remote catalog client (every method), retries included, in seconds.",
		Buckets: []float64{50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 250e-3, 1},
	}), &err)
	nodes := register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rtbd_catalog_client_nodes",
		Help: "Catalog nodes in the remote client's last good resolution.",
	}), &err)
	resolves := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_resolves_total",
		Help: "Resolutions of the catalog node list, by result (ok, error).",
	}, []string{"result"}), &err)

	methodCalls := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_method_calls_total",
		Help: "Calls made by the remote catalog client, by method (GetProductMasters, GetProducts, GetChanges).",
	}, []string{"method"}), &err)
	lookups := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_near_cache_lookups_total",
		Help: "Product lookups in the remote client's near cache, by result: hit (a product), hit_absent (a cached absence), miss (asked of a node).",
	}, []string{"result"}), &err)
	ncEntries := register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rtbd_catalog_client_near_cache_entries",
		Help: "Entries (products and absences) in the remote client's near cache.",
	}), &err)
	ncBytes := register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rtbd_catalog_client_near_cache_bytes",
		Help: "Bytes the remote client's near cache counts for its entries (decoded products and overhead).",
	}), &err)
	evictions := register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_near_cache_evictions_total",
		Help: "Near-cache entries evicted to make room.",
	}), &err)
	retired := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_near_cache_retired_total",
		Help: "Near-cache entries no longer served, by cause: delta (a newer index changed the product), epoch (a full index change, spread over near_cache_grace), max_age.",
	}, []string{"cause"}), &err)
	changes := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_index_changes_total",
		Help: "Newer index versions the remote client adopted, by kind: delta (the changed products listed) or full (every entry retired over near_cache_grace).",
	}, []string{"kind"}), &err)
	retries := register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_deadline_retries_total",
		Help: "GetProducts attempts that timed out and were retried on another node within the caller's deadline.",
	}), &err)

	refreshes := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_client_near_cache_refreshes_total",
		Help: "Near-cache entries hit in the last eighth of their max age and refreshed from a node in the background, by result: ok (answered), error (the call failed; a later hit queues it again), dropped (the refresh queue was full).",
	}, []string{"result"}), &err)

	if err != nil {
		return nil, err
	}
	m := &metrics{
		seconds:    seconds,
		nodes:      nodes,
		resolvesOK: resolves.WithLabelValues("ok"),
		resolvesKO: resolves.WithLabelValues("error"),
		ncEntries:  ncEntries, ncBytes: ncBytes, evictions: evictions, retriesAfter: retries,
	}
	labelled(m.methodCalls[:], methodCalls, methodNames[:]...)
	labelled(m.lookups[:], lookups, "hit", "hit_absent", "miss")
	labelled(m.retired[:], retired, causeNames[:]...)
	labelled(m.changes[:], changes, "delta", "full")
	labelled(m.refreshes[:], refreshes, refreshResultNames[:]...)
	for c := range numCodes {
		m.calls[c] = calls.WithLabelValues(codes.Code(c).String())
	}
	return m, nil
}

// labelled sets dst[i] to the series of vec for values[i].
func labelled(dst []prometheus.Counter, vec *prometheus.CounterVec, values ...string) {
	for i, v := range values {
		dst[i] = vec.WithLabelValues(v)
	}
}

// register registers c with reg unless *errp holds an error already. A
// collector of c's kind registered before under the same description is
// returned in c's place; any other error is set in *errp.
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
	m.callMethod(methodGetProductMasters, code, seconds)
}

func (m *metrics) callMethod(method int, code codes.Code, seconds float64) {
	if m == nil {
		return
	}
	m.methodCalls[method].Inc()
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

func (m *metrics) lookupsAdd(hits, absentHits, misses int64) {
	if m == nil {
		return
	}
	for i, n := range [3]int64{hits, absentHits, misses} {
		if n != 0 {
			m.lookups[i].Add(float64(n))
		}
	}
}

func (m *metrics) setNear(entries, bytes int64) {
	if m == nil {
		return
	}
	m.ncEntries.Set(float64(entries))
	m.ncBytes.Set(float64(bytes))
}

func (m *metrics) evict() {
	if m != nil {
		m.evictions.Inc()
	}
}

func (m *metrics) retire(cause int) {
	if m != nil {
		m.retired[cause].Inc()
	}
}

func (m *metrics) change(full bool) {
	if m == nil {
		return
	}
	if full {
		m.changes[1].Inc()
	} else {
		m.changes[0].Inc()
	}
}

func (m *metrics) deadlineRetry() {
	if m != nil {
		m.retriesAfter.Inc()
	}
}

func (m *metrics) refreshed(result int) { m.refreshedN(result, 1) }

func (m *metrics) refreshedN(result, n int) {
	if m != nil {
		m.refreshes[result].Add(float64(n))
	}
}
