package catalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Store answers product-master requests. Local implements it; the server
// serves whatever it is given.
type Store interface {
	GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// WireStore is a Store that can also write its answer as protobuf bytes
// (Local does, from encodings its hot cache keeps): the server then sends
// those bytes instead of marshalling (and UTF-8 checking) the same
// products again on every call.
type WireStore interface {
	Store
	// AppendProductMasters appends the encoding of the response
	// GetProductMasters would return to dst, with the length of each list.
	AppendProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest, dst []byte) ([]byte, [2]int, error)
}

// Server is the Catalog gRPC service over a Store.
type Server struct {
	catalogpb.UnimplementedCatalogServer
	store Store
	wire  WireStore // store, if it is one
	log   *zap.Logger
	m     *serverMetrics
	// maxCallTime is the deadline of a call whose client gave none; 0: none.
	maxCallTime time.Duration
	unread      UnreadBudget // nil: no bound
	// perProduct is the encoded bytes per product of the latest answer
	// with products (see estimate).
	perProduct atomic.Int64
	// records: store, if it serves GetProducts and GetChanges.
	records RecordStore
	// perRecord is the encoded bytes per record of the latest GetProducts
	// answer with records (its estimate).
	perRecord       atomic.Int64
	maxChangesBytes int
	mm              *methodMetrics
}

// RecordStore is a store that also serves its stored records and the
// changes between its versions (Local does): the server's GetProducts and
// GetChanges. A server over a store that is not one answers them
// UNIMPLEMENTED.
type RecordStore interface {
	// AppendProducts appends the encoding of the ProductsResponse for req
	// to dst, with the number of records and of records with a value.
	AppendProducts(ctx context.Context, req *catalogpb.ProductsRequest, dst []byte) ([]byte, int, int, error)
	// Changes answers GetChanges for a client at version since.
	Changes(since IndexVersion) (Changes, error)
}

// UnreadBudget bounds the bytes of answers a connection holds that its
// client has not read yet. Reserve takes n bytes of the budget of ctx's
// connection, or reports false if they are not free; release gives them
// back once the answer is written or dropped.
type UnreadBudget interface {
	Reserve(ctx context.Context, n int) (release func(), ok bool)
}

// ServerOptions configure a Server. Zero values: no logging, no metrics, no
// deadline of the server's own.
type ServerOptions struct {
	Logger     *zap.Logger
	Registerer prometheus.Registerer
	// MaxCallTime is the deadline of a lookup whose client sent none
	// (catalog.max_call_time).
	MaxCallTime time.Duration
	// Unread, when set, bounds the answers each connection holds unread
	// (catalog.max_conn_unread_bytes): a call whose answer does not fit is
	// RESOURCE_EXHAUSTED (ErrUnreadAnswers) at once, holding nothing (one
	// whose expected answer does not fit, before its lookup). It covers the
	// answers of a WireStore (those of a catalog node); answers of at most
	// mem.BufferPoolingThreshold bytes are not counted
	// (max_concurrent_streams bounds them).
	Unread UnreadBudget
	// MaxChangesBytes bounds a GetChanges answer: changes whose encoding
	// is larger are answered full (the client drops what it cached) rather
	// than sent. Default 2 MiB, within the transport's 4 MiB answers.
	MaxChangesBytes int
}

// NewServer returns the Catalog service for store.
func NewServer(store Store, opts ServerOptions) *Server {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	w, _ := store.(WireStore)
	r, _ := store.(RecordStore)
	if opts.MaxChangesBytes <= 0 {
		opts.MaxChangesBytes = 2 << 20
	}
	return &Server{store: store, wire: w, log: opts.Logger, m: newServerMetrics(opts.Registerer, opts.Logger),
		maxCallTime: opts.MaxCallTime, unread: opts.Unread, records: r, maxChangesBytes: opts.MaxChangesBytes,
		mm: newMethodMetrics(opts.Registerer, opts.Logger)}
}

// GetProductMasters implements catalogpb.CatalogServer.
func (s *Server) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	start := time.Now()
	resp, err := s.store.GetProductMasters(ctx, req)
	err = toStatus(err)
	code := status.Code(err)
	s.m.observe(code, time.Since(start), len(resp.GetProduct1S()), len(resp.GetProduct2S()))
	if code == codes.Internal || code == codes.DataLoss {
		s.log.Error("catalog lookup failed", zap.Error(err))
	}
	return resp, err
}

// getWire answers req as encoded bytes (a *wireResponse, which rawCodec
// sends as is). Same statuses, metrics and logs as GetProductMasters.
//
// With an UnreadBudget, the call first reserves the size its answer is
// expected to have (see estimate) and is refused before any lookup or
// encoding if its connection cannot hold that: a client that reads
// nothing costs the node its budget and no work beyond it. Once encoded,
// the reservation becomes the answer's actual size.
func (s *Server) getWire(ctx context.Context, req *catalogpb.ProductMastersRequest) (any, error) {
	start := time.Now()
	var held int
	var release func()
	if s.unread != nil {
		if est := s.estimate(req); !mem.IsBelowBufferPoolingThreshold(est) {
			r, ok := s.unread.Reserve(ctx, est)
			if !ok {
				return nil, s.done(fmt.Errorf("%w: about %d bytes more refused", ErrUnreadAnswers, est), start, [2]int{})
			}
			held, release = est, r
		}
	}
	scratch := wireScratch.Get().(*[]byte)
	b, counts, err := s.wire.AppendProductMasters(ctx, req, (*scratch)[:0])
	if cap(b) <= 1<<20 { // keep no huge one-off buffer
		*scratch = b[:0]
		defer wireScratch.Put(scratch)
	}
	if n := counts[0] + counts[1]; s.unread != nil && err == nil && n > 0 {
		if v := int64(len(b) / n); s.perProduct.Load() != v {
			s.perProduct.Store(v)
		}
	}
	if release != nil && (err != nil || len(b) != held) {
		release()
		release = nil
	}
	if errors.Is(err, ErrInvalidUTF8) {
		// A product proto cannot marshal: answer the way the proto path
		// always has (INTERNAL from gRPC's marshal step).
		return s.GetProductMasters(ctx, req)
	}
	pool := answerBuffers
	// A buffer over the pooling threshold goes back to the pool (and so
	// to the budget) once gRPC has written it or dropped its stream.
	if err == nil && s.unread != nil && !mem.IsBelowBufferPoolingThreshold(len(b)) {
		if release == nil {
			var ok bool
			if release, ok = s.unread.Reserve(ctx, len(b)); !ok {
				err = fmt.Errorf("%w: %d bytes more refused", ErrUnreadAnswers, len(b))
			}
		}
		if err == nil {
			pool = releasingPool{BufferPool: pool, release: release}
		}
	}
	if err = s.done(err, start, counts); err != nil {
		return nil, err
	}
	out := pool.Get(len(b))
	copy(*out, b)
	return &wireResponse{buf: mem.NewBuffer(out, pool)}, nil
}

// done counts and logs a wire call's outcome and returns its status.
func (s *Server) done(err error, start time.Time, counts [2]int) error {
	err = toStatus(err)
	code := status.Code(err)
	s.m.observe(code, time.Since(start), counts[0], counts[1])
	if code == codes.Internal || code == codes.DataLoss {
		s.log.Error("catalog lookup failed", zap.Error(err))
	}
	return err
}

// estimate is the size req's answer is expected to have: the products it
// may return (its ids, at most its quantities) at the bytes per product of
// the latest answer; 0 until the server has answered with products.
func (s *Server) estimate(req *catalogpb.ProductMastersRequest) int {
	n := 0
	if q := int(req.Product1QuantityAtMost); q > 0 {
		n += min(q, len(req.Product1Ids))
	}
	if q := int(req.Product2QuantityAtMost); q > 0 {
		n += min(q, len(req.Product2Ids))
	}
	return n * int(s.perProduct.Load())
}

// releasingPool gives an answer's bytes back to its connection's
// UnreadBudget when gRPC frees the answer's buffer.
type releasingPool struct {
	mem.BufferPool
	release func()
}

func (p releasingPool) Put(b *[]byte) {
	p.BufferPool.Put(b)
	p.release()
}

// wireScratch holds the buffers responses are encoded into before they are
// copied into a gRPC pool buffer of the exact size.
var wireScratch = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// wireResponse is an encoded ProductMastersResponse on its way out.
type wireResponse struct{ buf mem.Buffer }

// toStatus maps store errors to gRPC statuses; never a bare error.
func toStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidArgument):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrDeadline), errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, ErrClosed), errors.Is(err, ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, ErrCorrupt):
		return status.Error(codes.DataLoss, err.Error())
	case errors.Is(err, ErrUnreadAnswers):
		return status.Error(codes.ResourceExhausted, err.Error())
	default:
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Internal, err.Error())
	}
}

// Register adds the Catalog service to g. It decodes requests itself so
// that a malformed message is INVALID_ARGUMENT (gRPC's stock path would
// report the client's bad bytes as INTERNAL); g must be built with
// ServerCodecOption so raw request frames reach it. Unary interceptors of g
// wrap the same path as calls without them (see handle).
func (s *Server) Register(g *grpc.Server) {
	desc := catalogpb.Catalog_ServiceDesc
	desc.HandlerType = (*catalogpb.CatalogServer)(nil)
	desc.Methods = []grpc.MethodDesc{{
		MethodName: "GetProductMasters",
		Handler:    rawHandler(catalogpb.Catalog_GetProductMasters_FullMethodName, (*Server).handle),
	}, {
		MethodName: "GetProducts",
		Handler:    rawHandler(catalogpb.Catalog_GetProducts_FullMethodName, (*Server).getProducts),
	}, {
		MethodName: "GetChanges",
		Handler:    rawHandler(catalogpb.Catalog_GetChanges_FullMethodName, (*Server).getChanges),
	}}
	g.RegisterService(&desc, s)
}

// rawHandler is the handler of one Catalog method: it decodes the request
// itself (bytes that are not a Req are INVALID_ARGUMENT) and answers with
// serve, through g's unary interceptors when g has any.
func rawHandler[Req any, P interface {
	*Req
	proto.Message
}](fullMethod string, serve func(*Server, context.Context, P) (any, error)) grpc.MethodHandler {
	name := P(new(Req)).ProtoReflect().Descriptor().Name()
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		var raw rawFrame
		if err := dec(&raw); err != nil {
			return nil, err
		}
		req := P(new(Req))
		var err error
		if pm, ok := any(req).(*catalogpb.ProductMastersRequest); ok {
			err = decodeRequest(raw.b, pm) // the hot call: no reflection
		} else {
			err = proto.Unmarshal(raw.b, req)
		}
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "catalog: malformed %s: %v", name, err)
		}
		s := srv.(*Server)
		if interceptor == nil {
			return serve(s, ctx, req)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}
		return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return serve(s, ctx, req.(P))
		})
	}
}

// handle answers one call, with or without interceptors: from the store's
// encoded answer when the store is a WireStore (the response an interceptor
// then sees is that encoding, not a *catalogpb.ProductMastersResponse),
// else through GetProductMasters. A call without a deadline gets the
// server's own (ServerOptions.MaxCallTime).
func (s *Server) handle(ctx context.Context, req *catalogpb.ProductMastersRequest) (any, error) {
	if _, ok := ctx.Deadline(); !ok && s.maxCallTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.maxCallTime)
		defer cancel()
	}
	if s.wire != nil {
		return s.getWire(ctx, req)
	}
	return s.GetProductMasters(ctx, req)
}

// rawFrame receives a request's undecoded bytes.
type rawFrame struct{ b []byte }

// rawCodec is the proto codec, except that it hands raw frames through.
type rawCodec struct{ encoding.CodecV2 }

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawFrame); ok {
		r.b = data.Materialize()
		return nil
	}
	return c.CodecV2.Unmarshal(data, v)
}

// Marshal sends an encoded response's bytes as they are; gRPC frees the
// buffer (back to its pool) once written.
func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*wireResponse); ok {
		return mem.BufferSlice{r.buf}, nil
	}
	return c.CodecV2.Marshal(v)
}

// ServerCodecOption is the grpc.ServerOption Register needs.
func ServerCodecOption() grpc.ServerOption {
	return grpc.ForceServerCodecV2(rawCodec{encoding.GetCodecV2("proto")})
}

type serverMetrics struct {
	byCode   [codes.Unauthenticated + 1]prometheus.Counter
	products [2]prometheus.Counter
	latency  prometheus.Observer
}

func newServerMetrics(r prometheus.Registerer, log *zap.Logger) *serverMetrics {
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_server_requests_total",
		Help: "GetProductMasters calls served, by gRPC status code.",
	}, []string{"code"})
	prods := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_catalog_server_products_returned_total",
		Help: "Products returned, by list (product1 = viewed, product2 = recommended).",
	}, []string{"list"})
	lat := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "rtbd_catalog_server_request_seconds",
		Help:    "GetProductMasters handling time inside the server (transport excluded).",
		Buckets: []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3},
	})
	m := &serverMetrics{latency: lat}
	for c := range m.byCode {
		m.byCode[c] = reqs.WithLabelValues(codes.Code(c).String())
	}
	m.products[0] = prods.WithLabelValues("product1")
	m.products[1] = prods.WithLabelValues("product2")
	if r != nil {
		for _, c := range []prometheus.Collector{reqs, prods, lat} {
			if err := r.Register(c); err != nil {
				log.Warn("catalog metric not registered", zap.Error(err))
			}
		}
	}
	return m
}

func (m *serverMetrics) observe(c codes.Code, d time.Duration, n1, n2 int) {
	if int(c) < len(m.byCode) {
		m.byCode[c].Inc()
	}
	m.latency.Observe(d.Seconds())
	if n1 > 0 {
		m.products[0].Add(float64(n1))
	}
	if n2 > 0 {
		m.products[1].Add(float64(n2))
	}
}

var _ catalogpb.CatalogServer = (*Server)(nil)

// String helps logs.
func (s *Server) String() string { return fmt.Sprintf("catalog.Server(%T)", s.store) }
