package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/node"
	"github.com/rtbd/rtbd/internal/childproc"
)

func TestNodeBadDataDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	corrupt := t.TempDir()
	os.WriteFile(filepath.Join(corrupt, "CURRENT"), []byte("garbage/../\n"), 0o644)
	for _, dir := range []string{missing, corrupt} {
		_, err := node.Start(catalogtest.NodeConfig(t, dir), zap.NewNop())
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("start on %s: %v, want an error naming the path", dir, err)
		}
	}
}

func TestNodeServesThenDrains(t *testing.T) {
	dir := t.TempDir()
	catalogtest.WriteFixture(t, dir)
	n, err := node.Start(catalogtest.NodeConfig(t, dir), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	conn := catalogtest.Conn(t, n.Addr())
	cl := catalogpb.NewCatalogClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup,
		Product1QuantityAtMost: 3, Product1Ids: []int64{101}}); err != nil {
		t.Fatal(err)
	}
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := watch.Recv(); err != nil || st.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health before shutdown: %v %v", st, err)
	}
	// Calls in flight during Shutdown complete.
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := cl.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.TalkGroup,
					Product1QuantityAtMost: 3, Product1Ids: []int64{101, 102}})
				if err == nil {
					ok.Add(1)
				} else {
					failed.Add(1)
					return // the node is gone: expected once it stopped
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- n.Shutdown(context.Background()) }()
	if st, err := watch.Recv(); err != nil || st.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health during shutdown: %v %v", st, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("shutdown did not finish")
	}
	close(stop)
	wg.Wait()
	if ok.Load() == 0 {
		t.Fatal("no call succeeded")
	}
}

// BenchmarkNodeRSS measures a catalog node process's memory over an index
// of RTBD_RSS_PRODUCTS products (skipped when unset: `make bench-rss` runs it
// with 1M and 10M, -benchtime 1x). The node runs in a child process (this
// benchmark again, with RTBD_NODE_HELPER_DIR set); load is a fixed number of
// uniformly random lookups (the worst case for caches). It reports the
// node's VmHWM and VmRSS; one measurement whatever b.N.
func BenchmarkNodeRSS(b *testing.B) {
	if dir := os.Getenv("RTBD_NODE_HELPER_DIR"); dir != "" {
		runHelperNode(b, dir)
		return
	}
	nStr := os.Getenv("RTBD_RSS_PRODUCTS")
	if nStr == "" {
		b.Skip("set RTBD_RSS_PRODUCTS (make bench-rss) to measure catalog node RSS")
	}
	n, _ := strconv.Atoi(nStr)
	// A fixed number of calls (not a fixed time): every index size gets
	// the same 600,000 uniformly random lookups, enough to fill the hot
	// cache and the block cache, however fast its disk reads are. The
	// time bound only stops a run that cannot finish.
	want := int64(40_000)
	if s := os.Getenv("RTBD_RSS_CALLS"); s != "" {
		want, _ = strconv.ParseInt(s, 10, 64)
	}
	secs := 300
	if s := os.Getenv("RTBD_RSS_SECONDS"); s != "" {
		secs, _ = strconv.Atoi(s)
	}
	dir := os.Getenv("RTBD_RSS_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil {
		start := time.Now()
		catalogtest.BuildSynthetic(b, dir, n, 10)
		b.Logf("built %d products in %s", n, time.Since(start).Round(time.Millisecond))
	}
	helper, addr, _ := startHelperNode(b, dir)
	defer helper.Kill()
	cl := catalogtest.Client(b, addr)
	reqs := catalogtest.Workload{N: n, Groups: 10, IDs: 15}.Requests(100_000, 3)
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	var calls, errs atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; time.Now().Before(deadline); i += 16 {
				if calls.Add(1) > want {
					break
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := cl.GetProductMasters(ctx, reqs[i%len(reqs)])
				cancel()
				if err != nil {
					errs.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	calls.Store(min(calls.Load(), want)) // the Add that stopped each worker made no call
	p, err := procfs.NewProc(helper.PID())
	if err != nil {
		b.Fatal(err)
	}
	st, err := p.NewStatus()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("RSS products=%d calls=%d errors=%d VmHWM=%d kB VmRSS=%d kB", n, calls.Load(), errs.Load(), st.VmHWM>>10, st.VmRSS>>10)
	fmt.Printf("RSS products=%d calls=%d errors=%d VmHWM=%d kB VmRSS=%d kB\n", n, calls.Load(), errs.Load(), st.VmHWM>>10, st.VmRSS>>10)
	b.ReportMetric(float64(st.VmHWM), "VmHWM-bytes")
	b.ReportMetric(float64(st.VmRSS), "VmRSS-bytes")
	if errs.Load() > 0 {
		b.Fatalf("%d lookups failed", errs.Load())
	}
}

// startHelperNode starts a catalog node on dir in a child process (this
// test binary, BenchmarkNodeRSS with RTBD_NODE_HELPER_DIR set) and returns
// it with its gRPC and admin addresses. The caller kills it.
func startHelperNode(b *testing.B, dir string) (p *childproc.Proc, addr, admin string) {
	p, err := childproc.Start(childproc.Spec{Name: "helper node", Path: os.Args[0],
		Args: []string{"-test.run=^$", "-test.bench=^BenchmarkNodeRSS$", "-test.benchtime=1x"},
		Env:  []string{"RTBD_NODE_HELPER_DIR=" + dir}})
	if err != nil {
		b.Fatal(err)
	}
	err = p.WaitReady(context.Background(), 10*time.Minute, func(context.Context) error {
		for _, l := range strings.Split(p.Tail(), "\n") {
			if a, ok := strings.CutPrefix(l, "ADMIN "); ok {
				admin = a
			}
			if a, ok := strings.CutPrefix(l, "ADDR "); ok {
				addr = a
			}
		}
		if addr == "" {
			return errors.New("no address yet")
		}
		return nil
	})
	if err != nil {
		p.Kill()
		b.Fatal(err)
	}
	return p, addr, admin
}

func runHelperNode(t testing.TB, dir string) {
	cfg := catalogtest.NodeConfig(t, dir)
	if v := os.Getenv("RTBD_RSS_SET"); v != "" { // e.g. catalog.hot_cache_entries=50000
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			if err := cfg.Set(k, val); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := node.Start(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ADMIN " + n.AdminAddr())
	fmt.Println("ADDR " + n.Addr())
	select {} // killed by the parent
}
