package catalog

import (
	"crypto/tls"
	"runtime"

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
	// MaxConcurrentStreams per HTTP/2 connection; 0 = gRPC's default.
	MaxConcurrentStreams uint32
	// MaxRecvMsgBytes bounds a request message; default 1 MiB (1000 ids
	// take about 10 KiB). Larger messages get RESOURCE_EXHAUSTED from the
	// transport before the service sees them.
	MaxRecvMsgBytes int
	// StreamWorkers is the number of long-lived goroutines that run calls
	// (grpc.NumStreamWorkers): their stacks are already grown, where a new
	// goroutine per call grows (copies) its stack on every call. A call
	// finding no idle worker still gets its own goroutine, so this is not a
	// concurrency limit. Default 4 x GOMAXPROCS; negative: one goroutine
	// per call (gRPC's default).
	StreamWorkers int
}

// Window sizes shared by server and client: large static windows (which
// also turn off BDP probing) so that many multiplexed calls on one
// connection are not throttled by flow control.
const (
	StreamWindowBytes = 1 << 20
	ConnWindowBytes   = 16 << 20
)

// NewGRPCServer returns a grpc.Server serving s, the standard health service
// (returned, so a node can report NOT_SERVING while it drains) and server
// reflection (so grpcurl and ghz work without the .proto file).
func NewGRPCServer(s *Server, o GRPCOptions) (*grpc.Server, *health.Server) {
	if o.MaxRecvMsgBytes <= 0 {
		o.MaxRecvMsgBytes = 1 << 20
	}
	opts := []grpc.ServerOption{
		ServerCodecOption(),
		grpc.MaxRecvMsgSize(o.MaxRecvMsgBytes),
		grpc.InitialWindowSize(StreamWindowBytes),
		grpc.InitialConnWindowSize(ConnWindowBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5e9, PermitWithoutStream: true}),
	}
	if o.StreamWorkers == 0 {
		o.StreamWorkers = 4 * runtime.GOMAXPROCS(0)
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
