package biddertest

import (
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/rtbd/rtbd/catalog"
)

// StartCatalogNode serves store over gRPC on 127.0.0.1:0 (a real catalog
// node's server) until tb ends, and returns its address.
func StartCatalogNode(tb testing.TB, store catalog.Store) (string, error) {
	srv := catalog.NewServer(store, catalog.ServerOptions{})
	g, _ := catalog.NewGRPCServer(srv, catalog.GRPCOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go g.Serve(ln)
	tb.Cleanup(func() { stopGRPC(g) })
	return ln.Addr().String(), nil
}

// stopGRPC stops g gracefully, or at once after 2s.
func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		g.Stop()
	}
}
