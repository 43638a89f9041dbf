package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Product group ids with a special meaning for testServer.
const (
	groupOK    = 1122 // answer at once
	groupSlow  = 7    // sleep 1ms, then answer (makes concurrency visible)
	groupBlock = 99   // block until the node is torn down, ignoring ctx
)

// testNode is a real gRPC catalog node on 127.0.0.1:0 whose answer names it:
// the first product's Title is the node's name.
type testNode struct {
	name   string
	addr   string // 127.0.0.1:port
	port   int
	srv    *grpc.Server
	health *health.Server

	calls    atomic.Int64
	inflight atomic.Int64
	maxIn    atomic.Int64 // max concurrent calls seen
	failAll  atomic.Bool  // answer every call with UNAVAILABLE
	release  chan struct{}
	stopOnce sync.Once
}

type testServer struct {
	catalogpb.UnimplementedCatalogServer
	n *testNode
}

func (s testServer) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	n := s.n
	n.calls.Add(1)
	in := n.inflight.Add(1)
	defer n.inflight.Add(-1)
	for {
		m := n.maxIn.Load()
		if in <= m || n.maxIn.CompareAndSwap(m, in) {
			break
		}
	}
	switch g := req.GetProductGroupId(); {
	case n.failAll.Load():
		return nil, status.Error(codes.Unavailable, "node "+n.name+" is failing")
	case g <= 0:
		return nil, status.Errorf(codes.InvalidArgument, "product_group_id must be > 0, got %d", g)
	case g == groupSlow:
		time.Sleep(time.Millisecond)
	case g == groupBlock:
		<-n.release
		return nil, status.Error(codes.Aborted, "released")
	}
	return &catalogpb.ProductMastersResponse{Product1S: []*catalogpb.Product{{
		ProductId: 1, ProductGroupId: req.GetProductGroupId(), Title: n.name, InStock: true,
	}}}, nil
}

// startNode starts a node; it is stopped (hard) at test cleanup.
func startNode(t testing.TB, name string) *testNode {
	t.Helper()
	return startNodeOn(t, name, "127.0.0.1:0")
}

// startNodeOn starts a node listening on addr (a stopped node's address
// restarts it there).
func startNodeOn(t testing.TB, name, addr string) *testNode {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{
		name: name,
		addr: lis.Addr().String(),
		port: lis.Addr().(*net.TCPAddr).Port,
		// The catalog node's keepalive policy (catalog.NewGRPCServer).
		srv: grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime: 5 * time.Second, PermitWithoutStream: true})),
		health:  health.NewServer(),
		release: make(chan struct{}),
	}
	catalogpb.RegisterCatalogServer(n.srv, testServer{n: n})
	healthpb.RegisterHealthServer(n.srv, n.health)
	go n.srv.Serve(lis) //nolint:errcheck // returns when stopped
	t.Cleanup(n.stop)
	return n
}

// stop kills the node: listener and connections closed, no draining.
func (n *testNode) stop() {
	n.stopOnce.Do(func() {
		close(n.release)
		n.srv.Stop()
	})
}

func startNodes(t testing.TB, names ...string) []*testNode {
	nodes := make([]*testNode, len(names))
	for i, name := range names {
		nodes[i] = startNode(t, name)
	}
	return nodes
}

func addrsOf(nodes ...*testNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.addr
	}
	return out
}

func staticTarget(nodes ...*testNode) string {
	return "static:///" + strings.Join(addrsOf(nodes...), ",")
}

// writeNodeFile replaces path atomically (temp file + rename), as operators
// are told to.
func writeNodeFile(t testing.TB, path string, lines ...string) {
	t.Helper()
	tmp := path + ".tmp"
	data := "# catalog nodes\n\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func nodeFile(t testing.TB, nodes ...*testNode) (path, target string) {
	path = filepath.Join(t.TempDir(), "nodes.txt")
	writeNodeFile(t, path, addrsOf(nodes...)...)
	return path, "file://" + path
}

func newTestClient(t testing.TB, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New(%q): %v", opts.Target, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func req(group int64) *catalogpb.ProductMastersRequest {
	return &catalogpb.ProductMastersRequest{
		ProductGroupId: group, Product1QuantityAtMost: 3, Product1Ids: []int64{103, 999, 101},
		Product2QuantityAtMost: 4, Product2Ids: []int64{106, 105, 998, 104},
	}
}

// call makes one call with a generous deadline (the machine is shared and
// noisy; this is a bound, not a latency check) and returns the node name.
func call(c *Client, group int64) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.GetProductMasters(ctx, req(group))
	if err != nil {
		return "", err
	}
	if len(resp.GetProduct1S()) != 1 {
		return "", errors.New("unexpected response shape")
	}
	return resp.GetProduct1S()[0].GetTitle(), nil
}

// waitFor polls cond every 10ms until it holds or limit passes.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// warmUp calls until every node has answered at least once (all READY).
func warmUp(t testing.TB, c *Client, nodes ...*testNode) {
	t.Helper()
	waitFor(t, 10*time.Second, "every node to serve a call", func() bool {
		for range 3 * len(nodes) {
			if _, err := call(c, groupOK); err != nil {
				t.Fatalf("warm-up call: %v", err)
			}
		}
		for _, n := range nodes {
			if n.calls.Load() == 0 {
				return false
			}
		}
		return true
	})
}

func resetCalls(nodes ...*testNode) {
	for _, n := range nodes {
		n.calls.Store(0)
	}
}

// withWatchdog runs f and fails the test if it does not return within limit
// (a bound on a wait, not a timing assertion).
func withWatchdog(t testing.TB, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return within %s", what, limit)
	}
}

// establishedTo counts ESTABLISHED TCP connections whose remote end is the
// given local port, from /proc/net/tcp and /proc/net/tcp6 (parsed by
// procfs): the client side of the connections to a node listening on
// 127.0.0.1:port. The kernel does not snapshot these files (a socket can be
// listed twice or skipped when the table changes during the read), so
// connections are keyed by their address pair and two back-to-back reads
// are merged.
func establishedTo(t testing.TB, port int) int {
	t.Helper()
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	conns := map[string]bool{}
	for range 2 {
		tcp, err := fs.NetTCP()
		if err != nil {
			t.Fatalf("reading /proc/net/tcp: %v", err)
		}
		tcp6, err := fs.NetTCP6()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("reading /proc/net/tcp6: %v", err)
		}
		for _, s := range append(tcp, tcp6...) {
			if s.RemPort == uint64(port) && s.St == 0x01 { // TCP_ESTABLISHED
				conns[fmt.Sprintf("%s:%d-%s:%d", s.LocalAddr, s.LocalPort, s.RemAddr, s.RemPort)] = true
			}
		}
	}
	return len(conns)
}
