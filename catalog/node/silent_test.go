package node_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/internal/netfaulttest"
)

// lookupWithin retries a normal lookup from a new client (from 127.0.0.1)
// until it succeeds or deadline passes, and returns the last error.
func lookupWithin(t *testing.T, addr string, deadline time.Time) error {
	t.Helper()
	cl := catalogtest.Client(t, addr)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		resp, e := cl.GetProductMasters(ctx, bulkRequest())
		cancel()
		if e == nil && len(resp.Product1S) > 0 {
			return nil
		}
		err = e
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// metric reads a counter of the node's /metrics.
func metric(t *testing.T, admin, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestNodeSilentConnections: 1,030 TCP connections that never send a byte
// (more than catalog.max_conns, 1024) do not lock a node out.
func TestNodeSilentConnections(t *testing.T) {
	const flood = 1030
	netfaulttest.RaiseFileLimit(t, 3*flood)
	// From one address: catalog.max_conns_per_addr (256) of them are held,
	// the rest closed at accept; a normal lookup from another address
	// succeeds within 6s of the flood starting.
	t.Run("one address", func(t *testing.T) {
		n, _ := startFixtureNode(t, func(c *configs.Catalog) {})
		start := time.Now()
		netfaulttest.SilentFlood(t, n.Addr(), flood, "127.0.0.2")
		if err := lookupWithin(t, n.Addr(), start.Add(6*time.Second)); err != nil {
			t.Fatalf("lookup during a flood of %d silent connections from one address: %v", flood, err)
		}
		if got := metric(t, n.AdminAddr(), "rtbd_catalog_node_conns_refused_per_addr_total"); got < flood-256 {
			t.Errorf("refused per address %v, want at least %d", got, flood-256)
		}
	})
	// From five addresses, each under the per-address limit, filling
	// catalog.max_conns: the node closes each after
	// catalog.handshake_timeout (1s here, 5s by default), and a normal
	// lookup succeeds within 6s of the flood starting.
	t.Run("many addresses", func(t *testing.T) {
		n, _ := startFixtureNode(t, func(c *configs.Catalog) { c.HandshakeTimeout = time.Second })
		start := time.Now()
		conns := netfaulttest.SilentFlood(t, n.Addr(), flood, "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6")
		if err := lookupWithin(t, n.Addr(), start.Add(6*time.Second)); err != nil {
			t.Fatalf("lookup during a flood of %d silent connections from five addresses: %v", flood, err)
		}
		// The node closed the silent ones: reading ends (EOF or reset).
		for i := 0; i < flood; i += 100 {
			conns[i].SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.Copy(io.Discard, conns[i]); isTimeout(err) { // nil: EOF
				t.Fatalf("silent connection %d still open: %v", i, err)
			}
		}
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
