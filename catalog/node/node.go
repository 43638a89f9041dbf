// Package node runs a catalog node (rtbd -mode=catalog): the local index of
// a data directory served over gRPC, with health, reflection, metrics, a
// graceful stop, and limits (connections, streams, unread answers,
// connection age, pings, call time: the catalog.max_* keys) that bound what
// clients can make it hold.
package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rtbd/rtbd/admin"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/configs"
)

// Node is a running catalog node.
type Node struct {
	cfg    *configs.Config
	log    *zap.Logger
	local  *catalog.Local
	admin  *admin.Server
	ln     net.Listener
	served chan error
	health interface {
		SetServingStatus(string, healthpb.HealthCheckResponse_ServingStatus)
		Shutdown()
	}
	grpcStop, grpcGraceful func()
}

// Start opens the index and starts serving gRPC and the admin listener. A
// missing or unreadable data directory is an error naming the path.
func Start(cfg *configs.Config, log *zap.Logger) (*Node, error) {
	return StartRegistry(cfg, log, prometheus.NewRegistry())
}

// Registry is where a Node registers its metrics and what its admin
// listener's /metrics serves (a *prometheus.Registry).
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// StartRegistry is Start with the metrics in reg, a registry of the
// caller's with nothing registered yet (Start makes a new one).
func StartRegistry(cfg *configs.Config, log *zap.Logger, reg Registry) (*Node, error) {
	if log == nil {
		log = zap.NewNop()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	lo := catalog.LocalOptionsFromConfig(cfg.Catalog, log, reg)
	lo.WireCache = true // answers are built from the products' encodings
	local, err := catalog.OpenLocal(cfg.Catalog.Data, lo)
	if err != nil {
		return nil, fmt.Errorf("catalog node: %w", err)
	}
	c := cfg.Catalog
	gopts := catalog.GRPCOptions{MaxConcurrentStreams: c.MaxConcurrentStreams, MaxConnAge: c.MaxConnAge,
		MaxConnAgeGrace: c.MaxConnAgeGrace, KeepaliveMinTime: c.KeepaliveMinTime, HandshakeTimeout: c.HandshakeTimeout}
	if t := cfg.Catalog.TLS; t.Enabled() {
		if gopts.TLS, err = catalog.ServerTLS(t.CertFile, t.KeyFile, t.CAFile); err != nil {
			local.Close()
			return nil, err
		}
	}
	tcp, err := net.Listen("tcp", cfg.Catalog.GRPCListen)
	if err != nil {
		local.Close()
		return nil, fmt.Errorf("catalog node: catalog.grpc_listen %s: %w", cfg.Catalog.GRPCListen, err)
	}
	lim := newLimitListener(tcp, c.MaxConns, c.MaxConnsPerAddr, c.MaxConnUnreadBytes, reg)
	srv := catalog.NewServer(local, catalog.ServerOptions{Logger: log, Registerer: reg, MaxCallTime: c.MaxCallTime, Unread: lim})
	g, h := catalog.NewGRPCServer(srv, gopts)
	var ln net.Listener = lim
	n := &Node{cfg: cfg, log: log, local: local, ln: ln, served: make(chan error, 1), health: h,
		grpcStop: g.Stop, grpcGraceful: g.GracefulStop}
	n.admin = admin.New(admin.Options{Addr: cfg.AdminListen(), Logger: log, Gatherer: reg, NoPprof: !cfg.Admin.Pprof})
	if err := n.admin.Start(); err != nil {
		ln.Close()
		local.Close()
		return nil, fmt.Errorf("catalog node: admin.listen: %w", err)
	}
	go func() { n.served <- g.Serve(ln) }()
	log.Info("catalog node serving", zap.String("grpc", ln.Addr().String()), zap.String("admin", n.admin.Addr()),
		zap.String("data", cfg.Catalog.Data), zap.String("version", local.Version()), zap.Bool("tls", gopts.TLS != nil))
	return n, nil
}

// Addr is the gRPC listen address.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// AdminAddr is the admin listen address.
func (n *Node) AdminAddr() string { return n.admin.Addr() }

// AdminRoutes returns the patterns the admin listener serves
// ("GET /healthz", "GET /metrics", ...).
func (n *Node) AdminRoutes() []string { return n.admin.Patterns() }

// Local is the index the node serves.
func (n *Node) Local() *catalog.Local { return n.local }

// Shutdown drains the node: health says NOT_SERVING (clients route new calls
// elsewhere), readiness fails, in-flight calls finish within
// catalog.graceful_timeout (then are cut), the index is closed cleanly.
func (n *Node) Shutdown(ctx context.Context) error {
	n.health.Shutdown() // every service NOT_SERVING, watchers told
	n.admin.SetNotReady("shutting down")
	// Give clients' health watches a moment to take this node out of
	// rotation before connections get GOAWAY.
	select {
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
	}
	done := make(chan struct{})
	go func() { n.grpcGraceful(); close(done) }()
	t := time.NewTimer(n.cfg.Catalog.GracefulTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		n.log.Warn("graceful stop timed out; closing remaining calls", zap.Duration("timeout", n.cfg.Catalog.GracefulTimeout))
		n.grpcStop()
		<-done
	case <-ctx.Done():
		n.grpcStop()
		<-done
	}
	actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	aerr := n.admin.Shutdown(actx)
	cerr := n.local.Close()
	n.log.Info("catalog node stopped")
	return errors.Join(aerr, cerr)
}

// Run serves until ctx is cancelled (SIGTERM/SIGINT in main), then shuts
// down gracefully.
func Run(ctx context.Context, cfg *configs.Config, log *zap.Logger) error {
	n, err := Start(cfg, log)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-n.served:
		n.Shutdown(context.Background())
		return fmt.Errorf("catalog node: grpc server stopped: %w", err)
	}
	return n.Shutdown(context.Background())
}
