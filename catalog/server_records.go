package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// The two calls of a near-cache client (catalog/remote): GetProducts
// (stored records, unchanged bytes) and GetChanges (what changed since a
// version). Like GetProductMasters on a node, both answer with bytes
// written directly (wireResponse), under the same unread-answers budget
// and call deadline.

// Methods with their own metric series (rtbd_catalog_server_method_*).
const (
	methodGetProducts = iota
	methodGetChanges
	methods
)

var methodNames = [methods]string{"GetProducts", "GetChanges"}

// GetProducts implements catalogpb.CatalogServer for a server registered
// without Register (the stock generated path): the same answer, decoded.
func (s *Server) GetProducts(ctx context.Context, req *catalogpb.ProductsRequest) (*catalogpb.ProductsResponse, error) {
	resp := new(catalogpb.ProductsResponse)
	return resp, s.decodeAnswer(s.getProducts(ctx, req))(resp)
}

// GetChanges implements catalogpb.CatalogServer, like GetProducts.
func (s *Server) GetChanges(ctx context.Context, req *catalogpb.ChangesRequest) (*catalogpb.ChangesResponse, error) {
	resp := new(catalogpb.ChangesResponse)
	return resp, s.decodeAnswer(s.getChanges(ctx, req))(resp)
}

// decodeAnswer unmarshals an encoded answer into a message and frees it.
func (s *Server) decodeAnswer(out any, err error) func(proto.Message) error {
	return func(m proto.Message) error {
		if err != nil {
			return err
		}
		w := out.(*wireResponse)
		defer w.buf.Free()
		if err := proto.Unmarshal(w.buf.ReadOnlyData(), m); err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		return nil
	}
}

// withCallTime gives a call without a deadline the server's own.
func (s *Server) withCallTime(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); !ok && s.maxCallTime > 0 {
		return context.WithTimeout(ctx, s.maxCallTime)
	}
	return ctx, func() {}
}

// getProducts answers GetProducts with the store's encoded records. With
// an UnreadBudget it first reserves the answer's expected size (ids times
// the bytes per record of the latest answer) and is refused before any
// read if that does not fit, like getWire.
func (s *Server) getProducts(ctx context.Context, req *catalogpb.ProductsRequest) (any, error) {
	start := time.Now()
	if s.records == nil {
		return nil, s.methodDone(methodGetProducts, status.Error(codes.Unimplemented, "catalog: this store does not serve GetProducts"), start, 0, 0)
	}
	ctx, cancel := s.withCallTime(ctx)
	defer cancel()
	var held int
	var release func()
	if s.unread != nil {
		ids := 0
		for _, g := range req.Groups {
			ids += len(g.ProductIds)
		}
		if est := ids * int(s.perRecord.Load()); !mem.IsBelowBufferPoolingThreshold(est) {
			r, ok := s.unread.Reserve(ctx, est)
			if !ok {
				return nil, s.methodDone(methodGetProducts, fmt.Errorf("%w: about %d bytes more refused", ErrUnreadAnswers, est), start, 0, 0)
			}
			held, release = est, r
		}
	}
	scratch := wireScratch.Get().(*[]byte)
	b, n, found, err := s.records.AppendProducts(ctx, req, (*scratch)[:0])
	if cap(b) <= 1<<20 {
		*scratch = b[:0]
		defer wireScratch.Put(scratch)
	}
	if err == nil && n > 0 {
		if v := int64(len(b) / n); s.perRecord.Load() != v {
			s.perRecord.Store(v)
		}
	}
	out, err := s.answer(ctx, b, err, held, release)
	return out, s.methodDone(methodGetProducts, err, start, n, found)
}

// getChanges answers GetChanges; changes larger than MaxChangesBytes are
// answered full.
func (s *Server) getChanges(ctx context.Context, req *catalogpb.ChangesRequest) (any, error) {
	start := time.Now()
	if s.records == nil {
		return nil, s.methodDone(methodGetChanges, status.Error(codes.Unimplemented, "catalog: this store does not serve GetChanges"), start, 0, 0)
	}
	ctx, cancel := s.withCallTime(ctx)
	defer cancel()
	since := IndexVersion{Generation: req.GetSince().GetGeneration(), ContentHash: req.GetSince().GetContentHash()}
	c, err := s.records.Changes(since)
	if err != nil {
		return nil, s.methodDone(methodGetChanges, err, start, 0, 0)
	}
	if req.GetSince() == nil { // a client with no version: everything is new to it
		c.Full, c.Keys = true, nil
	}
	scratch := wireScratch.Get().(*[]byte)
	b := AppendChanges((*scratch)[:0], c)
	if len(b) > s.maxChangesBytes {
		c.Full, c.Keys = true, nil
		b = AppendChanges(b[:0], c)
	}
	if cap(b) <= 1<<20 {
		*scratch = b[:0]
		defer wireScratch.Put(scratch)
	}
	full := 0
	if c.Full {
		full = 1
	}
	out, err := s.answer(ctx, b, nil, 0, nil)
	return out, s.methodDone(methodGetChanges, err, start, len(c.Keys), full)
}

// answer turns an encoded answer b (or the store's err) into what rawCodec
// sends, holding its bytes in the connection's UnreadBudget until gRPC has
// written them. held bytes are already reserved (release), or none.
func (s *Server) answer(ctx context.Context, b []byte, err error, held int, release func()) (any, error) {
	if release != nil && (err != nil || len(b) != held) {
		release()
		release = nil
	}
	if err != nil {
		return nil, err
	}
	var pool mem.BufferPool = mem.DefaultBufferPool()
	if s.unread != nil && !mem.IsBelowBufferPoolingThreshold(len(b)) {
		if release == nil {
			var ok bool
			if release, ok = s.unread.Reserve(ctx, len(b)); !ok {
				return nil, fmt.Errorf("%w: %d bytes more refused", ErrUnreadAnswers, len(b))
			}
		}
		pool = releasingPool{BufferPool: pool, release: release}
	}
	out := pool.Get(len(b))
	copy(*out, b)
	return &wireResponse{buf: mem.NewBuffer(out, pool)}, nil
}

// methodDone counts and logs a call of method and returns its status. n
// is the records (GetProducts) or keys (GetChanges) answered; x the
// records with a value (GetProducts) or 1 for a full answer (GetChanges).
func (s *Server) methodDone(method int, err error, start time.Time, n, x int) error {
	err = toStatus(err)
	code := status.Code(err)
	s.mm.observe(method, code, time.Since(start), n, x)
	if code == codes.Internal || code == codes.DataLoss {
		s.log.Error("catalog call failed", zap.String("method", methodNames[method]), zap.Error(err))
	}
	return err
}

// methodMetrics are the series of GetProducts and GetChanges, with a fixed
// method label (GetProductMasters keeps its rtbd_catalog_server_request*
// and products_returned series).
type methodMetrics struct {
	byCode  [methods][codes.Unauthenticated + 1]prometheus.Counter
	latency [methods]prometheus.Observer
	// records returned by GetProducts: with a value, and empty (absent).
	records [2]prometheus.Counter
	// GetChanges answers: keys listed, and full answers.
	keys, full prometheus.Counter
}

func newMethodMetrics(r prometheus.Registerer, log *zap.Logger) *methodMetrics {
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_server_method_requests_total",
		Help: "GetProducts and GetChanges calls served, by method and gRPC status code.",
	}, []string{"method", "code"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rtbd_catalog_server_method_request_seconds",
		Help:    "GetProducts and GetChanges handling time inside the server (transport excluded), by method.",
		Buckets: []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3},
	}, []string{"method"})
	recs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_server_records_returned_total",
		Help: "GetProducts records returned: with the stored value (found) or empty (absent).",
	}, []string{"value"})
	keys := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_catalog_server_changed_keys_returned_total",
		Help: "Changed products listed by GetChanges answers.",
	})
	full := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_catalog_server_changes_full_total",
		Help: "GetChanges answers that could not list the changes (full: the client drops what it cached).",
	})
	m := &methodMetrics{keys: keys, full: full}
	for i, name := range methodNames {
		for c := range m.byCode[i] {
			m.byCode[i][c] = reqs.WithLabelValues(name, codes.Code(c).String())
		}
		m.latency[i] = lat.WithLabelValues(name)
	}
	m.records[0] = recs.WithLabelValues("found")
	m.records[1] = recs.WithLabelValues("absent")
	if r != nil {
		for _, c := range []prometheus.Collector{reqs, lat, recs, keys, full} {
			if err := r.Register(c); err != nil {
				log.Warn("catalog metric not registered", zap.Error(err))
			}
		}
	}
	return m
}

func (m *methodMetrics) observe(method int, c codes.Code, d time.Duration, n, x int) {
	if int(c) < len(m.byCode[method]) {
		m.byCode[method][c].Inc()
	}
	m.latency[method].Observe(d.Seconds())
	switch method {
	case methodGetProducts:
		if x > 0 {
			m.records[0].Add(float64(x))
		}
		if n > x {
			m.records[1].Add(float64(n - x))
		}
	case methodGetChanges:
		if n > 0 {
			m.keys.Add(float64(n))
		}
		if x > 0 {
			m.full.Inc()
		}
	}
}
