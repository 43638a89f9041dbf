package server

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/catalog"
	"google.golang.org/grpc"
)

// The sample user of the tests (its profile is bulkProfile).
const userBulk = biddertest.UserBulk

// The fixtures shared with the tests of bidder (bidder/internal/biddertest),
// by the short names these tests use.
var (
	testKey     = biddertest.Key
	bulkProfile = biddertest.BulkProfile
	catalogDir  = biddertest.CatalogDir
	readFile    = biddertest.ReadFile
	withUser    = biddertest.WithUser
	editJSON    = biddertest.EditJSON
	waitFor     = biddertest.WaitFor
	load        = biddertest.Load
)

// specDir holds the OpenRTB sample requests.
const specDir = "../../rtb/testdata"

func TestMain(m *testing.M) {
	if sets := os.Getenv(configChild); sets != "" {
		os.Exit(runConfigChild(sets))
	}
	code := m.Run()
	os.RemoveAll(catalogDir())
	os.Exit(code)
}

// startCatalogNode serves store over gRPC on 127.0.0.1:0 (a real catalog
// node's server) until b ends.
func startCatalogNode(b testing.TB, store catalog.Store) (string, error) {
	srv := catalog.NewServer(store, catalog.ServerOptions{})
	g, _ := catalog.NewGRPCServer(srv, catalog.GRPCOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go g.Serve(ln)
	b.Cleanup(func() { stopGRPC(g) })
	return ln.Addr().String(), nil
}

func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		g.Stop()
	}
}
