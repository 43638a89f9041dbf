package server

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/catalog"
	"google.golang.org/grpc"
)

// The sample user of the tests (its profile is biddertest.BulkProfile).
const userBulk = biddertest.UserBulk

// specDir holds the OpenRTB sample requests.
const specDir = "../../rtb/testdata"

// bannerRequest is the sample banner request of specDir for userBulk, with
// biddertest.WithUser's top-level edits (key, value, ...).
func bannerRequest(t testing.TB, edits ...any) []byte {
	t.Helper()
	body := biddertest.ReadFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	return biddertest.WithUser(t, body, userBulk, edits...)
}

func TestMain(m *testing.M) {
	if sets := os.Getenv(configChild); sets != "" {
		os.Exit(runConfigChild(sets))
	}
	code := m.Run()
	os.RemoveAll(biddertest.CatalogDir())
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
