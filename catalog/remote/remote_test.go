package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/catalog"
)

// Test 1: every target form resolves, and round-robin spreads the calls.
func TestTargetsResolveAndRoundRobin(t *testing.T) {
	nodes := startNodes(t, "a", "b", "c")
	_, fileTarget := nodeFile(t, nodes...)
	for _, tc := range []struct{ name, target string }{
		{"static", staticTarget(nodes...)},
		{"file", fileTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, Options{Target: tc.target})
			if got, want := c.Nodes(), normalize(addrsOf(nodes...)); !slices.Equal(got, want) {
				// Nodes may be empty for an instant before the first resolution.
				waitFor(t, 5*time.Second, "Nodes() to list the 3 nodes", func() bool { return slices.Equal(c.Nodes(), want) })
			}
			warmUp(t, c, nodes...)
			resetCalls(nodes...)
			const calls = 300
			seen := map[string]int{}
			for range calls {
				name, err := call(c, groupOK)
				if err != nil {
					t.Fatal(err)
				}
				seen[name]++
			}
			t.Logf("%s: calls per node %v", tc.name, seen)
			for _, n := range nodes {
				// Round-robin over READY nodes gives ~100 each; demand a fair share.
				if seen[n.name] < calls/3/2 {
					t.Errorf("node %s served %d of %d calls, want >= %d: %v", n.name, seen[n.name], calls, calls/3/2, seen)
				}
				if int64(seen[n.name]) != n.calls.Load() {
					t.Errorf("node %s: client saw %d answers, server counted %d calls", n.name, seen[n.name], n.calls.Load())
				}
			}
		})
	}
	t.Run("dns", func(t *testing.T) {
		n := nodes[0]
		c := newTestClient(t, Options{Target: fmt.Sprintf("dns:///localhost:%d", n.port)})
		waitFor(t, 5*time.Second, "dns resolution", func() bool { return len(c.Nodes()) > 0 })
		if !slices.Contains(c.Nodes(), n.addr) {
			t.Fatalf("Nodes() = %v, want it to contain %s", c.Nodes(), n.addr)
		}
		name, err := call(c, groupOK)
		if err != nil {
			t.Fatal(err)
		}
		if name != n.name {
			t.Fatalf("served by %q, want %q", name, n.name)
		}
	})
}

// Test 4: errors map to the catalog sentinels and keep the gRPC status.
func TestErrors(t *testing.T) {
	n := startNode(t, "a")

	t.Run("invalid argument", func(t *testing.T) {
		c := newTestClient(t, Options{Target: staticTarget(n)})
		_, err := call(c, 0)
		wantErr(t, err, catalog.ErrInvalidArgument, codes.InvalidArgument)
		if !strings.Contains(err.Error(), "product_group_id must be > 0, got 0") {
			t.Errorf("err = %q, want the server's message kept", err)
		}
		if _, err := c.GetProductMasters(context.Background(), nil); !errors.Is(err, catalog.ErrInvalidArgument) {
			t.Errorf("nil request: err = %v, want catalog.ErrInvalidArgument", err)
		}
	})

	t.Run("caller deadline", func(t *testing.T) {
		c := newTestClient(t, Options{Target: staticTarget(n), CallTimeout: time.Hour})
		warmUp(t, c, n)
		var err error
		// The server blocks until the test ends: only the client's deadline
		// can end this call.
		withWatchdog(t, 10*time.Second, "a call past its 50ms deadline", func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err = c.GetProductMasters(ctx, req(groupBlock))
		})
		wantErr(t, err, catalog.ErrDeadline, codes.DeadlineExceeded)
	})

	t.Run("CallTimeout when ctx has no deadline", func(t *testing.T) {
		c := newTestClient(t, Options{Target: staticTarget(n), CallTimeout: 30 * time.Millisecond})
		warmUp(t, c, n)
		var err error
		withWatchdog(t, 10*time.Second, "a call past CallTimeout", func() {
			_, err = c.GetProductMasters(context.Background(), req(groupBlock))
		})
		if !errors.Is(err, catalog.ErrDeadline) {
			t.Fatalf("err = %v, want catalog.ErrDeadline", err)
		}
	})

	t.Run("cancelled ctx", func(t *testing.T) {
		c := newTestClient(t, Options{Target: staticTarget(n)})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.GetProductMasters(ctx, req(groupOK)); !errors.Is(err, catalog.ErrDeadline) {
			t.Fatalf("err = %v, want catalog.ErrDeadline", err)
		}
	})

	t.Run("empty node file fails fast", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nodes.txt")
		writeNodeFile(t, path /* no nodes */)
		c := newTestClient(t, Options{Target: "file://" + path})
		c.Refresh() // the first resolution has surely finished after this
		if got := c.Nodes(); len(got) != 0 {
			t.Fatalf("Nodes() = %v, want none", got)
		}
		var err error
		// A 1h deadline: only failing fast can end the call in time.
		withWatchdog(t, 10*time.Second, "a call with zero nodes", func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			_, err = c.GetProductMasters(ctx, req(groupOK))
		})
		if !errors.Is(err, catalog.ErrUnavailable) {
			t.Fatalf("err = %v, want catalog.ErrUnavailable", err)
		}
	})

	t.Run("every node down fails fast", func(t *testing.T) {
		// A port that was free a moment ago: connection refused.
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := lis.Addr().String()
		lis.Close()
		c := newTestClient(t, Options{Target: "static:///" + dead})
		withWatchdog(t, 10*time.Second, "a call with every node down", func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			_, err = c.GetProductMasters(ctx, req(groupOK))
		})
		wantErr(t, err, catalog.ErrUnavailable, codes.Unavailable)
	})

	t.Run("closed", func(t *testing.T) {
		c := newTestClient(t, Options{Target: staticTarget(n)})
		warmUp(t, c, n)
		// A call in flight when Close runs.
		inflight := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			_, err := c.GetProductMasters(ctx, req(groupBlock))
			inflight <- err
		}()
		waitFor(t, 5*time.Second, "the blocking call to reach the node", func() bool { return n.inflight.Load() > 0 })
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		select {
		case err := <-inflight:
			if !errors.Is(err, catalog.ErrClosed) {
				t.Errorf("in-flight call: err = %v, want catalog.ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("in-flight call did not end at Close")
		}
		if _, err := call(c, groupOK); !errors.Is(err, catalog.ErrClosed) {
			t.Errorf("call after Close: err = %v, want catalog.ErrClosed", err)
		}
		c.Refresh() // must not block or panic
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string // must appear in the error
	}{
		{Options{Target: ""}, "Target: empty"},
		{Options{Target: "localhost:7070"}, `"localhost:7070": missing scheme`},
		{Options{Target: "http:///x:1"}, `scheme "http" not supported`},
		{Options{Target: "static:///"}, "lists no addresses"},
		{Options{Target: "static:///127.0.0.1:1,127.0.0.1"}, `address 2 "127.0.0.1": missing port`},
		{Options{Target: "static:///127.0.0.1:http"}, `port "http"`},
		{Options{Target: "static:///127.0.0.1:70000"}, `port "70000"`},
		{Options{Target: "static:///:80"}, `":80": empty host`},
		{Options{Target: "dns:///catalog.internal"}, `dns name "catalog.internal": missing port`},
		{Options{Target: "dns://8.8.8.8/catalog.internal:7070"}, `authority "8.8.8.8"`},
		{Options{Target: "file://nodes.txt"}, `authority "nodes.txt"`},
		{Options{Target: "file:///"}, "has no path"},
		{Options{Target: "static:///127.0.0.1:1", ConnsPerNode: -1}, "ConnsPerNode: must be 1..64"},
		{Options{Target: "static:///127.0.0.1:1", RefreshInterval: -time.Second}, "RefreshInterval: must be > 0"},
		{Options{Target: "static:///127.0.0.1:1", CallTimeout: -time.Millisecond}, "CallTimeout: must be > 0"},
	} {
		c, err := New(tc.opts)
		if err == nil {
			c.Close()
			t.Errorf("New(%+v) succeeded, want an error containing %q", tc.opts, tc.want)
			continue
		}
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q): err = %q, want ErrInvalidOptions containing %q", tc.opts.Target, err, tc.want)
		}
	}
	// Every problem is reported at once.
	_, err := New(Options{Target: "nope", ConnsPerNode: -3, CallTimeout: -1})
	for _, want := range []string{"Target", "ConnsPerNode", "CallTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
}

// Test 5: a node reporting NOT_SERVING gets no new calls, and gets them back
// once SERVING again.
func TestHealthNotServingGetsNoCalls(t *testing.T) {
	nodes := startNodes(t, "a", "b", "c")
	a, b, cn := nodes[0], nodes[1], nodes[2]
	c := newTestClient(t, Options{Target: staticTarget(nodes...)})
	warmUp(t, c, nodes...)

	b.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	// The status reaches the client asynchronously: wait (bounded) for a run
	// of calls that avoids b.
	waitFor(t, 10*time.Second, "node b to be taken out", func() bool {
		before := b.calls.Load()
		for range 60 {
			if _, err := call(c, groupOK); err != nil {
				t.Fatal(err)
			}
		}
		return b.calls.Load() == before
	})
	resetCalls(nodes...)
	for range 300 {
		if _, err := call(c, groupOK); err != nil {
			t.Fatalf("call while b is NOT_SERVING: %v", err)
		}
	}
	t.Logf("with b NOT_SERVING: a=%d b=%d c=%d", a.calls.Load(), b.calls.Load(), cn.calls.Load())
	if b.calls.Load() != 0 || a.calls.Load() == 0 || cn.calls.Load() == 0 {
		t.Fatalf("calls a=%d b=%d c=%d, want b=0 and a, c > 0", a.calls.Load(), b.calls.Load(), cn.calls.Load())
	}

	b.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	waitFor(t, 10*time.Second, "node b to get calls again", func() bool {
		for range 30 {
			if _, err := call(c, groupOK); err != nil {
				t.Fatal(err)
			}
		}
		return b.calls.Load() > 0
	})
}

// UNAVAILABLE from one node is retried on another inside the deadline.
func TestRetriesUnavailableOnAnotherNode(t *testing.T) {
	nodes := startNodes(t, "a", "bad", "c")
	c := newTestClient(t, Options{Target: staticTarget(nodes...)})
	warmUp(t, c, nodes...)
	nodes[1].failAll.Store(true)
	resetCalls(nodes...)
	for i := range 100 {
		name, err := call(c, groupOK)
		if err != nil {
			t.Fatalf("call %d: %v (want it retried on a healthy node)", i, err)
		}
		if name == "bad" {
			t.Fatalf("call %d answered by the failing node", i)
		}
	}
	if nodes[1].calls.Load() == 0 {
		t.Fatal("the failing node was never tried; the test proves nothing")
	}
	t.Logf("failing node tried %d times in 100 calls, all retried", nodes[1].calls.Load())

	// With every node failing, the caller gets ErrUnavailable.
	for _, n := range nodes {
		n.failAll.Store(true)
	}
	if _, err := call(c, groupOK); !errors.Is(err, catalog.ErrUnavailable) || status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want catalog.ErrUnavailable with code Unavailable", err)
	}
}

// Refresh re-reads the node file at once; a missing or broken file keeps the
// last good list.
func TestFileRefreshAndLastGood(t *testing.T) {
	nodes := startNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	path, target := nodeFile(t, a)
	c := newTestClient(t, Options{Target: target, RefreshInterval: time.Hour})
	c.Refresh()
	if got := c.Nodes(); !slices.Equal(got, []string{a.addr}) {
		t.Fatalf("Nodes() = %v, want [%s]", got, a.addr)
	}

	writeNodeFile(t, path, a.addr, b.addr+"  # the new one")
	c.Refresh() // no waiting for the hourly tick
	want := normalize([]string{a.addr, b.addr})
	if got := c.Nodes(); !slices.Equal(got, want) {
		t.Fatalf("after Refresh: Nodes() = %v, want %v", got, want)
	}
	warmUp(t, c, a, b)

	writeNodeFile(t, path, a.addr, "not-a-host-port")
	c.Refresh()
	if got := c.Nodes(); !slices.Equal(got, want) {
		t.Fatalf("bad line: Nodes() = %v, want the last good %v", got, want)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c.Refresh()
	if got := c.Nodes(); !slices.Equal(got, want) {
		t.Fatalf("missing file: Nodes() = %v, want the last good %v", got, want)
	}
	if _, err := call(c, groupOK); err != nil {
		t.Fatalf("call with the last good list: %v", err)
	}

	writeNodeFile(t, path /* empty */)
	c.Refresh()
	if got := c.Nodes(); len(got) != 0 {
		t.Fatalf("empty file: Nodes() = %v, want none", got)
	}
	if _, err := call(c, groupOK); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("empty file: err = %v, want catalog.ErrUnavailable", err)
	}

	writeNodeFile(t, path, b.addr)
	c.Refresh()
	resetCalls(a, b)
	waitFor(t, 10*time.Second, "b to serve again after the empty file", func() bool {
		name, err := call(c, groupOK)
		return err == nil && name == "b"
	})
	if a.calls.Load() != 0 {
		t.Errorf("node a (removed from the file) got %d calls", a.calls.Load())
	}
}

// A node file missing at start: no nodes, calls fail fast, and the file is
// picked up once it appears.
func TestFileMissingAtStart(t *testing.T) {
	n := startNode(t, "a")
	path := filepath.Join(t.TempDir(), "nodes.txt")
	c := newTestClient(t, Options{Target: "file://" + path, RefreshInterval: time.Hour})
	c.Refresh()
	withWatchdog(t, 10*time.Second, "a call before any resolution succeeded", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if _, err := c.GetProductMasters(ctx, req(groupOK)); !errors.Is(err, catalog.ErrUnavailable) {
			t.Errorf("err = %v, want catalog.ErrUnavailable", err)
		}
	})
	writeNodeFile(t, path, n.addr)
	c.Refresh()
	waitFor(t, 10*time.Second, "the node to serve", func() bool {
		name, err := call(c, groupOK)
		return err == nil && name == "a"
	})
}

func TestMetrics(t *testing.T) {
	nodes := startNodes(t, "a", "b")
	reg := prometheus.NewRegistry()
	c := newTestClient(t, Options{Target: staticTarget(nodes...), Registerer: reg})
	warmUp(t, c, nodes...)
	// A second client on the same registry shares the collectors.
	c2 := newTestClient(t, Options{Target: staticTarget(nodes...), Registerer: reg})
	c2.Refresh()

	okBefore := counterValue(t, reg, "rtbd_catalog_client_calls_total", "code", "OK")
	for range 10 {
		if _, err := call(c, groupOK); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := call(c, 0); !errors.Is(err, catalog.ErrInvalidArgument) {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "rtbd_catalog_client_calls_total", "code", "OK") - okBefore; got != 10 {
		t.Errorf("calls_total{code=OK} grew by %v, want 10", got)
	}
	if got := counterValue(t, reg, "rtbd_catalog_client_calls_total", "code", "InvalidArgument"); got != 1 {
		t.Errorf("calls_total{code=InvalidArgument} = %v, want 1", got)
	}
	if got := counterValue(t, reg, "rtbd_catalog_client_resolves_total", "result", "ok"); got < 2 {
		t.Errorf("resolves_total{result=ok} = %v, want >= 2", got)
	}
	if got := gaugeValue(t, reg, "rtbd_catalog_client_nodes"); got != 2 {
		t.Errorf("nodes = %v, want 2", got)
	}
	if got := histogramCount(t, reg, "rtbd_catalog_client_call_seconds"); got < 11 {
		t.Errorf("call_seconds count = %d, want >= 11", got)
	}
}

func findFamily(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("metric %s not registered", name)
	return nil
}

func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	for _, m := range findFamily(t, reg, name).GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return findFamily(t, reg, name).GetMetric()[0].GetGauge().GetValue()
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	return findFamily(t, reg, name).GetMetric()[0].GetHistogram().GetSampleCount()
}

func TestParseNodeFile(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"# only a comment\n\n   \n", nil, ""},
		{"10.0.0.2:7070\n10.0.0.1:7070 # primary\n10.0.0.1:7070\n", []string{"10.0.0.1:7070", "10.0.0.2:7070"}, ""},
		{"\r\n[::1]:7070\r\ncatalog-3.internal:7070\r\n", []string{"[::1]:7070", "catalog-3.internal:7070"}, ""},
		{"10.0.0.1:7070\n10.0.0.2\n", nil, `line 2 "10.0.0.2": missing port`},
		{"10.0.0.1:7070 10.0.0.2:7070\n", nil, "line 1"},
	} {
		got, err := parseNodeFile([]byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseNodeFile(%q) err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseNodeFile(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTargetForms(t *testing.T) {
	tg, err := parseTarget("static:///10.0.0.2:1, 10.0.0.1:1,[::1]:2")
	if err != nil || tg.scheme != schemeStatic || !slices.Equal(tg.addrs, []string{"10.0.0.1:1", "10.0.0.2:1", "[::1]:2"}) {
		t.Errorf("static: %+v, %v", tg, err)
	}
	tg, err = parseTarget("dns:///catalog.internal:7070")
	if err != nil || tg.scheme != schemeDNS || tg.host != "catalog.internal" || tg.port != "7070" {
		t.Errorf("dns: %+v, %v", tg, err)
	}
	tg, err = parseTarget("file:///etc/rtbd/nodes 100%.txt")
	if err != nil || tg.scheme != schemeFile || tg.path != "/etc/rtbd/nodes 100%.txt" {
		t.Errorf("file: %+v, %v", tg, err)
	}
}

// wantErr fails t unless err is want (errors.Is) and carries the gRPC
// status code.
func wantErr(t *testing.T, err, want error, code codes.Code) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if status.Code(err) != code {
		t.Errorf("status.Code(err) = %v, want %v", status.Code(err), code)
	}
}
