package catalogtest_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/remote"
)

// TestRemoteConformance runs the suite through the remote client against
// three real catalog nodes on loopback, each serving its own Local over the
// same fixture: local and remote must answer identically.
func TestRemoteConformance(t *testing.T) {
	dir := t.TempDir()
	catalogtest.WriteFixture(t, dir)
	var addrs []string
	for i := 0; i < 3; i++ {
		l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1, MaxIDs: catalogtest.MaxIDs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		g, _ := catalog.NewGRPCServer(catalog.NewServer(l, catalog.ServerOptions{}), catalog.GRPCOptions{})
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go g.Serve(lis)
		t.Cleanup(g.Stop)
		addrs = append(addrs, lis.Addr().String())
	}
	c, err := remote.New(remote.Options{
		Target:      "static:///" + strings.Join(addrs, ","),
		CallTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	catalogtest.Run(t, c)
}
