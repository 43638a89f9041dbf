package catalogtest

import (
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/configs"
)

// Serve serves g on a free 127.0.0.1 port, stopped when tb ends, and
// returns its address.
func Serve(tb testing.TB, g *grpc.Server) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go g.Serve(lis)
	tb.Cleanup(g.Stop)
	return lis.Addr().String()
}

// ServeStore serves store as a catalog node does (catalog.NewServer with
// so, catalog.NewGRPCServer with gro) on a free 127.0.0.1 port, stopped
// when tb ends, and returns its address.
func ServeStore(tb testing.TB, store catalog.Store, so catalog.ServerOptions, gro catalog.GRPCOptions) string {
	tb.Helper()
	g, _ := catalog.NewGRPCServer(catalog.NewServer(store, so), gro)
	return Serve(tb, g)
}

// ServeLocal opens the catalog in dir with o, closed when tb ends, serves
// it with the default server options and returns the address.
func ServeLocal(tb testing.TB, dir string, o catalog.LocalOptions) string {
	tb.Helper()
	l, err := catalog.OpenLocal(dir, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return ServeStore(tb, l, catalog.ServerOptions{}, catalog.GRPCOptions{})
}

// Conn returns a plaintext gRPC connection to addr (a node or server on
// loopback), closed when tb ends.
func Conn(tb testing.TB, addr string) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// NodeConfig is the configuration of a catalog node serving dir, its gRPC
// and admin listeners on free 127.0.0.1 ports, draining for at most 5s.
func NodeConfig(tb testing.TB, dir string) *configs.Config {
	tb.Helper()
	cfg, err := configs.Default()
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Mode = configs.ModeCatalog
	cfg.Catalog.Data = dir
	cfg.Catalog.GRPCListen = "127.0.0.1:0"
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Catalog.GracefulTimeout = 5 * time.Second
	return cfg
}
