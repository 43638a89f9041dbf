package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
)

// client bounds every request of the tests.
var client = &http.Client{Timeout: 10 * time.Second}

// start starts a Server on a free loopback port and shuts it down at the
// end of the test.
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.Addr = "127.0.0.1:0"
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	s := New(opts)
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// do sends a request and returns the status and body.
func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, string(body)
}

func expect(t *testing.T, method, url string, wantCode int, wantBody string) string {
	t.Helper()
	code, body := do(t, method, url)
	if code != wantCode || !strings.Contains(body, wantBody) {
		t.Fatalf("%s %s = %d %.300q, want %d containing %q", method, url, code, body, wantCode, wantBody)
	}
	return body
}

func TestHealthz(t *testing.T) {
	s := start(t, Options{})
	base := "http://" + s.Addr()
	if body := expect(t, "GET", base+"/healthz", 200, "ok"); body != "ok" {
		t.Fatalf("body = %q, want exactly ok", body)
	}
	expect(t, "HEAD", base+"/healthz", 200, "")
	expect(t, "POST", base+"/healthz", http.StatusMethodNotAllowed, "")
	expect(t, "GET", base+"/nope", http.StatusNotFound, "")
}

func TestReadiness(t *testing.T) {
	var dbErr atomic.Pointer[error]
	s := start(t, Options{Ready: func() error {
		if e := dbErr.Load(); e != nil {
			return *e
		}
		return nil
	}})
	url := "http://" + s.Addr() + "/readyz"

	if body := expect(t, "GET", url, 200, "ready"); body != "ready" {
		t.Fatalf("body = %q, want exactly ready", body)
	}
	e := errors.New("catalog: no index version loaded")
	dbErr.Store(&e)
	if body := expect(t, "GET", url, 503, ""); body != "catalog: no index version loaded" {
		t.Fatalf("503 body = %q, want the Ready error text", body)
	}
	dbErr.Store(nil)
	expect(t, "GET", url, 200, "ready")

	// SetNotReady wins over a ready Ready func, until SetReady.
	s.SetNotReady("draining")
	if body := expect(t, "GET", url, 503, ""); body != "draining" {
		t.Fatalf("503 body = %q, want draining", body)
	}
	expect(t, "GET", "http://"+s.Addr()+"/healthz", 200, "ok") // still alive
	s.SetReady()
	expect(t, "GET", url, 200, "ready")
}

func TestReadyNilFuncAlwaysReady(t *testing.T) {
	s := start(t, Options{})
	expect(t, "GET", "http://"+s.Addr()+"/readyz", 200, "ready")
	s.SetNotReady("maintenance")
	expect(t, "GET", "http://"+s.Addr()+"/readyz", 503, "maintenance")
}

// Readiness flips while requests run (meaningful under -race).
func TestReadinessConcurrent(t *testing.T) {
	s := start(t, Options{})
	url := "http://" + s.Addr() + "/readyz"
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				s.SetNotReady("flip")
			} else {
				s.SetReady()
			}
		}
	}()
	for range 50 {
		code, body := do(t, "GET", url)
		if !(code == 200 && body == "ready" || code == 503 && body == "flip") {
			t.Errorf("inconsistent answer %d %q", code, body)
		}
	}
	close(stop)
	wg.Wait()
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_admin_test_events_total",
		Help: "Events seen by the admin test.",
	}, []string{"kind"})
	reg.MustRegister(c)
	c.WithLabelValues("bid").Add(3)
	s := start(t, Options{Gatherer: reg})
	body := expect(t, "GET", "http://"+s.Addr()+"/metrics", 200, `rtbd_admin_test_events_total{kind="bid"} 3`)
	if !strings.Contains(body, "# HELP rtbd_admin_test_events_total Events seen by the admin test.") {
		t.Errorf("no HELP line:\n%s", body)
	}
	if strings.Contains(body, "go_goroutines") {
		t.Errorf("metrics of a registry not given leaked in:\n%s", body)
	}
	c.WithLabelValues("bid").Inc()
	expect(t, "GET", "http://"+s.Addr()+"/metrics", 200, `rtbd_admin_test_events_total{kind="bid"} 4`)
}

func TestMetricsWithoutGatherer(t *testing.T) {
	s := start(t, Options{})
	expect(t, "GET", "http://"+s.Addr()+"/metrics", http.StatusNotFound, "")
}

var defaultMuxOnly sync.Once

func TestPprof(t *testing.T) {
	// Something only on http.DefaultServeMux must not be served: the admin
	// server has its own mux.
	defaultMuxOnly.Do(func() { // once: -count=N reruns the test in one process
		http.HandleFunc("/admin-test-default-mux-only", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "default mux")
		})
	})
	s := start(t, Options{})
	base := "http://" + s.Addr()
	expect(t, "GET", base+"/debug/pprof/", 200, "goroutine")
	expect(t, "GET", base+"/debug/pprof/goroutine?debug=1", 200, "goroutine profile:")
	expect(t, "GET", base+"/debug/pprof/heap?debug=1", 200, "heap profile:")
	expect(t, "GET", base+"/debug/pprof/cmdline", 200, "admin.test")
	expect(t, "GET", base+"/debug/pprof/symbol", 200, "num_symbols")
	expect(t, "GET", base+"/debug/pprof/nosuchprofile", 404, "Unknown profile")
	expect(t, "GET", base+"/admin-test-default-mux-only", 404, "")
}

func TestHandle(t *testing.T) {
	s := New(Options{Addr: "127.0.0.1:0", Logger: zaptest.NewLogger(t)})
	var refreshes atomic.Int32
	s.Handle("POST /admin/catalog/refresh", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := refreshes.Add(1)
		fmt.Fprintf(w, "refreshed %d", n)
	}))
	s.Handle("GET /admin/campaigns/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "campaign %s", r.PathValue("id"))
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	base := "http://" + s.Addr()
	expect(t, "POST", base+"/admin/catalog/refresh", 200, "refreshed 1")
	expect(t, "POST", base+"/admin/catalog/refresh", 200, "refreshed 2")
	expect(t, "GET", base+"/admin/catalog/refresh", http.StatusMethodNotAllowed, "")
	expect(t, "GET", base+"/admin/campaigns/42", 200, "campaign 42")
	if n := refreshes.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
	// The built-in endpoints are still there.
	expect(t, "GET", base+"/healthz", 200, "ok")
}

func TestHandleConflictPanics(t *testing.T) {
	s := New(Options{Addr: "127.0.0.1:0"})
	defer func() {
		if recover() == nil {
			t.Fatal("registering GET /healthz twice did not panic")
		}
	}()
	s.Handle("GET /healthz", http.NotFoundHandler())
}

func TestStartAddressInUse(t *testing.T) {
	first := start(t, Options{})
	addr := first.Addr()
	second := New(Options{Addr: addr})
	err := second.Start()
	if err == nil {
		_ = second.Shutdown(context.Background())
		t.Fatalf("second Start on %s succeeded", addr)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %q does not name the address %s", err, addr)
	}
	// The first server is unaffected.
	expect(t, "GET", "http://"+addr+"/healthz", 200, "ok")
}

func TestStartBadAddress(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:notaport", "127.0.0.1", "256.0.0.1:0"} {
		err := New(Options{Addr: addr}).Start()
		if err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("Start(%q) = %v, want an error naming the address", addr, err)
		}
	}
	if err := New(Options{}).Start(); err == nil {
		t.Error(`Start with Addr "" succeeded`)
	}
}

func TestLifecycle(t *testing.T) {
	s := New(Options{Addr: "127.0.0.1:0"})
	if got := s.Addr(); got != "127.0.0.1:0" {
		t.Fatalf("Addr before Start = %q", got)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr after Start = %q, want the bound port", addr)
	}
	if err := s.Start(); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
	expect(t, "GET", "http://"+addr+"/healthz", 200, "ok")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := client.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("server still answers after Shutdown")
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Shutdown = %v, want ErrClosed", err)
	}
	if err := New(Options{Addr: "127.0.0.1:0"}).Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown of a server never started: %v", err)
	}
}

// slowResult is the answer to slowRequest's request.
type slowResult struct {
	code int
	body string
	err  error
}

// slowRequest starts a server whose GET /slow answers "done" once release
// is closed (or after 10 s), sends it one request and returns once the
// handler holds it; the answer comes on got.
func slowRequest(t *testing.T) (s *Server, release chan struct{}, got chan slowResult) {
	t.Helper()
	s = New(Options{Addr: "127.0.0.1:0", Logger: zaptest.NewLogger(t)})
	entered := make(chan struct{})
	release = make(chan struct{})
	s.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		_, _ = io.WriteString(w, "done")
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	got = make(chan slowResult, 1)
	go func() {
		resp, err := client.Get("http://" + s.Addr() + "/slow")
		if err != nil {
			got <- slowResult{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- slowResult{resp.StatusCode, string(b), err}
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("request did not reach the handler")
	}
	return s, release, got
}

// Shutdown gives up on an in-flight request when its context ends, and
// closes the connection rather than leaving it hanging.
func TestShutdownGivesUpWhenContextDone(t *testing.T) {
	s, release, got := slowRequest(t)

	// A context that is already done: Shutdown gives up and reports it.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- s.Shutdown(done) }()
	select {
	case err := <-shutdownErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown with a done context = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return when its context was done")
	}
	close(release)
	select {
	case r := <-got:
		// The connection was closed under the request: an error, not a
		// hang, is the expected outcome.
		if r.err == nil && r.body == "done" {
			t.Logf("request finished before the connection closed (%d)", r.code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("in-flight request hung after Shutdown")
	}
}

func TestShutdownDrains(t *testing.T) {
	s, release, got := slowRequest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- s.Shutdown(ctx) }()
	// Shutdown must wait for the handler; the request then completes.
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case r := <-got:
		if r.err != nil || r.body != "done" {
			t.Fatalf("in-flight request = %q, %v, want done", r.body, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight request did not finish")
	}
	select {
	case err := <-shutdownErr:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after the request finished")
	}
}

func TestNoPprof(t *testing.T) {
	s := start(t, Options{NoPprof: true})
	base := "http://" + s.Addr()
	expect(t, "GET", base+"/debug/pprof/", 404, "")
	expect(t, "GET", base+"/debug/pprof/cmdline", 404, "")
	expect(t, "GET", base+"/healthz", 200, "ok")
}

// TestNonLoopbackWarns: a listener on every address (not loopback) logs a
// warning at start; one on loopback does not.
func TestNonLoopbackWarns(t *testing.T) {
	for _, c := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		core, logs := observer.New(zap.WarnLevel)
		s := New(Options{Addr: c.addr, Logger: zap.New(core)})
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		s.Shutdown(context.Background())
		if got := logs.FilterMessageSnippet("not on loopback").Len() > 0; got != c.warn {
			t.Errorf("listen %s: warned %v, want %v (%v)", c.addr, got, c.warn, logs.All())
		}
	}
}

// TestReadinessChecks: /readyz lists every check's state, is 503 while one
// is not ready (naming it) or while shutting down, and 200 when a check
// that does not gate readiness reports a problem.
func TestReadinessChecks(t *testing.T) {
	var catalogOK atomic.Bool
	catalogOK.Store(true)
	s := start(t, Options{Checks: []Check{
		{Name: "catalog", State: func() (string, bool) {
			if catalogOK.Load() {
				return "2 nodes resolved, reachable", true
			}
			return "none reachable", false
		}},
		{Name: "redis", State: func() (string, bool) { return "unreachable (ignored for readiness)", true }},
	}})
	url := "http://" + s.Addr() + "/readyz"

	want := "ready\nshutting_down: no\ncatalog: 2 nodes resolved, reachable\nredis: unreachable (ignored for readiness)\n"
	if body := expect(t, "GET", url, 200, ""); body != want {
		t.Fatalf("body = %q, want %q", body, want)
	}
	catalogOK.Store(false)
	want = "not ready: catalog\nshutting_down: no\ncatalog: none reachable\nredis: unreachable (ignored for readiness)\n"
	if body := expect(t, "GET", url, 503, ""); body != want {
		t.Fatalf("body = %q, want %q", body, want)
	}
	catalogOK.Store(true)
	expect(t, "GET", url, 200, "ready\n")
	s.SetNotReady("shutting down")
	want = "shutting down\nshutting_down: yes\ncatalog: 2 nodes resolved, reachable\nredis: unreachable (ignored for readiness)\n"
	if body := expect(t, "GET", url, 503, ""); body != want {
		t.Fatalf("body = %q, want %q", body, want)
	}
}
