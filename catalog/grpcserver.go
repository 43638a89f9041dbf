package catalog

import (
	"crypto/tls"
	"runtime"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// GRPCOptions configure the gRPC server of a catalog node. Zero values take
// the defaults noted.
type GRPCOptions struct {
	// TLS, when set, serves TLS; nil serves cleartext h2c (internal traffic,
	// as in the talk).
	TLS *tls.Config
	// MaxConcurrentStreams per HTTP/2 connection; 0 = gRPC's default (no
	// limit). A stream stays counted until its answer is written, so this
	// also bounds the answers a connection whose client does not read can
	// make the server hold.
	MaxConcurrentStreams uint32
	// MaxConnAge is the age at which a connection gets GOAWAY, and
	// MaxConnAgeGrace how long its calls may still take before it is
	// closed; 0 = no limit.
	MaxConnAge, MaxConnAgeGrace time.Duration
	// KeepaliveMinTime is the shortest interval between client pings the
	// server accepts (pings without calls in flight included); a client
	// pinging faster gets GOAWAY. Default 5s.
	KeepaliveMinTime time.Duration
	// MaxSendMsgBytes bounds an answer; default 4 MiB, which is also the
	// most a gRPC client accepts by default. A larger answer is
	// RESOURCE_EXHAUSTED.
	MaxSendMsgBytes int
	// MaxRecvMsgBytes bounds a request message; default 1 MiB (1000 ids
	// take about 10 KiB). Larger messages get RESOURCE_EXHAUSTED from the
	// transport before the service sees them.
	MaxRecvMsgBytes int
	// StreamWorkers is the number of long-lived goroutines that run calls
	// (grpc.NumStreamWorkers): their stacks are already grown, where a new
	// goroutine per call grows (copies) its stack on every call. A call
	// finding no idle worker still gets its own goroutine, so this is not a
	// concurrency limit. Default DefaultStreamWorkers or 4 x GOMAXPROCS,
	// whichever is more; negative: one goroutine per call (gRPC's
	// default).
	StreamWorkers int
	// HandshakeTimeout bounds how long a new connection may take to send
	// the HTTP/2 client preface (and finish TLS), grpc.ConnectionTimeout:
	// a client that connects and says nothing holds a connection slot no
	// longer than this. Default DefaultHandshakeTimeout (gRPC's own is
	// 120s).
	HandshakeTimeout time.Duration
}

// DefaultHandshakeTimeout is GRPCOptions.HandshakeTimeout's default.
const DefaultHandshakeTimeout = 5 * time.Second

// DefaultStreamWorkers is the least GRPCOptions.StreamWorkers defaults to.
// The calls a node runs at once follow its clients (64 callers over 2
// connections is an ordinary load), not its cores: with 4 x GOMAXPROCS
// workers on 2 cores most calls found none idle and grew a fresh stack.
// An idle worker holds its stack (8-32 KiB), so 64 hold at most 2 MiB.
const DefaultStreamWorkers = 64

// The server's receive windows: static (which turns off BDP probing, so no
// client can make them grow) and small, bounding what the server buffers
// of requests it has not read yet to 64 KiB per call and 1 MiB per
// connection. A request is at most a few KiB (1000 ids take about 10 KiB).
const (
	StreamWindowBytes = 64 << 10
	ConnWindowBytes   = 1 << 20
)

// NewGRPCServer returns a grpc.Server serving s, the standard health service
// (returned, so a node can report NOT_SERVING while it drains) and server
// reflection (so grpcurl and ghz work without the .proto file).
func NewGRPCServer(s *Server, o GRPCOptions) (*grpc.Server, *health.Server) {
	if o.MaxRecvMsgBytes <= 0 {
		o.MaxRecvMsgBytes = 1 << 20
	}
	if o.MaxSendMsgBytes <= 0 {
		o.MaxSendMsgBytes = 4 << 20
	}
	if o.KeepaliveMinTime <= 0 {
		o.KeepaliveMinTime = 5 * time.Second
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	opts := []grpc.ServerOption{
		ServerCodecOption(),
		grpc.MaxRecvMsgSize(o.MaxRecvMsgBytes),
		grpc.MaxSendMsgSize(o.MaxSendMsgBytes),
		grpc.InitialWindowSize(StreamWindowBytes),
		grpc.InitialConnWindowSize(ConnWindowBytes),
		// Each connection's write buffer comes from a shared pool while
		// it is not being written, so idle connections do not hold one.
		grpc.SharedWriteBuffer(true),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: o.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.ConnectionTimeout(o.HandshakeTimeout),
	}
	if o.MaxConnAge > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionAge: o.MaxConnAge, MaxConnectionAgeGrace: o.MaxConnAgeGrace}))
	}
	if o.StreamWorkers == 0 {
		o.StreamWorkers = max(DefaultStreamWorkers, 4*runtime.GOMAXPROCS(0))
	}
	if o.StreamWorkers > 0 {
		opts = append(opts, grpc.NumStreamWorkers(uint32(o.StreamWorkers)))
	}
	if o.MaxConcurrentStreams > 0 {
		opts = append(opts, grpc.MaxConcurrentStreams(o.MaxConcurrentStreams))
	}
	if o.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	g := grpc.NewServer(opts...)
	s.Register(g)
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus(catalogpb.Catalog_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, h)
	reflection.Register(g)
	return g, h
}
