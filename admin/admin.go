package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Errors of the Server lifecycle.
var (
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("admin: already started")
	// ErrClosed: Start was called after Shutdown.
	ErrClosed = errors.New("admin: closed")
)

// Options configures a Server. Every field but Addr has a usable zero
// value.
type Options struct {
	// Addr is the host:port to listen on (configs.Config.AdminListen), required.
	// Port 0 picks a free port; Server.Addr tells which.
	Addr string
	// Logger receives the errors of the HTTP server. nil = no logging.
	Logger *zap.Logger
	// Gatherer is what GET /metrics exposes. nil = no /metrics endpoint
	// (404).
	Gatherer prometheus.Gatherer
	// Ready reports whether the process can take traffic (nil error =
	// ready); GET /readyz answers 503 with the error's text otherwise. It is
	// called on every /readyz request from the server's goroutines, so it
	// must be fast and safe for concurrent use. nil = always ready.
	Ready func() error
	// NoPprof leaves /debug/pprof/ out (configs.Admin.Pprof false): its
	// profiles and /debug/pprof/cmdline (the process's command line) are
	// for operators only.
	NoPprof bool
	// Checks are the named dependencies whose state GET /readyz lists, one
	// line each, in this order; one that is not ready makes it 503. With
	// none, the body is just the verdict.
	Checks []Check
}

// Check is one named part of readiness: a dependency (the catalog, a
// store) or a startup step.
type Check struct {
	// Name is the line's key in /readyz's body ("catalog", "redis").
	Name string
	// State describes the dependency now ("2 nodes resolved, reachable",
	// "unreachable (ignored for readiness)") and whether it lets the
	// process take traffic. A dependency the process serves without (fast
	// no-bids) is listed with ready true. Called on every /readyz request
	// from the server's goroutines: it must be fast (no more than a short,
	// bounded probe) and safe for concurrent use.
	State func() (state string, ready bool)
}

// Server is the admin HTTP listener every rtbd mode runs: /healthz,
// /readyz, /metrics, /debug/pprof/ and the endpoints a mode adds with
// Handle. It is not authenticated: listen on loopback or a private network.
//
// Methods are safe for concurrent use. A Server runs once: after Shutdown it
// cannot be started again.
type Server struct {
	opts     Options
	log      *zap.Logger
	mux      *http.ServeMux
	patterns []string               // every pattern registered on mux, in order (Patterns)
	notReady atomic.Pointer[string] // non-nil: the reason /readyz is 503

	mu      sync.Mutex
	srv     *http.Server
	ln      net.Listener
	served  chan struct{} // closed when Serve returns
	started bool
	closed  bool
}

// New returns a Server with the standard endpoints registered. It does not
// listen yet: add mode endpoints with Handle, then Start.
func New(opts Options) *Server {
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.handleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	s.handleFunc("GET /readyz", s.readyz)
	if opts.Gatherer != nil {
		s.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
			ErrorLog:      zap.NewStdLog(s.log.Named("metrics")),
			ErrorHandling: promhttp.ContinueOnError, // serve what can be gathered
		}))
	}
	// Registered on this mux, not http.DefaultServeMux (importing
	// net/http/pprof registers there too, but nothing in rtbd serves it).
	// Index also serves the named profiles: /debug/pprof/heap, goroutine...
	if opts.NoPprof {
		return s
	}
	s.handleFunc("/debug/pprof/", pprof.Index)
	s.handleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	s.handleFunc("/debug/pprof/profile", pprof.Profile)
	s.handleFunc("/debug/pprof/symbol", pprof.Symbol)
	s.handleFunc("/debug/pprof/trace", pprof.Trace)
	return s
}

// Handle registers a mode-specific endpoint, e.g.
// Handle("POST /admin/catalog/refresh", h). Patterns are http.ServeMux
// patterns (optional method, path, {wildcards}). Call it before Start so
// the endpoint exists from the first request (it is safe, though, to call
// later). Like http.ServeMux.Handle, it panics if pattern is invalid or
// conflicts with one already registered: that is a programming error.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.mu.Lock()
	s.patterns = append(s.patterns, pattern)
	s.mu.Unlock()
}

func (s *Server) handleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	s.Handle(pattern, http.HandlerFunc(h))
}

// Patterns returns the pattern of every endpoint registered so far (the
// standard ones of New, then those of Handle), as given: "GET /healthz",
// "/debug/pprof/", "POST /admin/debug/bid".
func (s *Server) Patterns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.patterns)
}

// SetNotReady makes GET /readyz answer 503 with reason, whatever
// Options.Ready says, until SetReady. Graceful shutdown calls it first, so
// load balancers stop sending traffic before the process stops taking it.
func (s *Server) SetNotReady(reason string) {
	s.notReady.Store(&reason)
}

// SetReady undoes SetNotReady: /readyz follows Options.Ready again.
func (s *Server) SetReady() {
	s.notReady.Store(nil)
}

// readyz answers the verdict on the first line: "ready", or why not (the
// SetNotReady reason, else the Ready error, and "not ready: " with the
// names of the checks that are not). With Checks, the lines
// "shutting_down: yes|no" and "name: state" per check follow.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	var why []string
	reason := s.notReady.Load()
	if reason != nil {
		why = append(why, *reason)
	} else if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			why = append(why, err.Error())
		}
	}
	var lines strings.Builder
	if len(s.opts.Checks) > 0 {
		shutting := "no"
		if reason != nil {
			shutting = "yes"
		}
		fmt.Fprintf(&lines, "\nshutting_down: %s", shutting)
		var failed []string
		for _, c := range s.opts.Checks {
			state, ok := c.State()
			if !ok {
				failed = append(failed, c.Name)
			}
			fmt.Fprintf(&lines, "\n%s: %s", c.Name, state)
		}
		if len(failed) > 0 {
			why = append(why, "not ready: "+strings.Join(failed, ", "))
		}
		lines.WriteByte('\n')
	}
	code, verdict := http.StatusOK, "ready"
	if len(why) > 0 {
		code, verdict = http.StatusServiceUnavailable, strings.Join(why, "; ")
	}
	writeText(w, code, verdict+lines.String())
}

func writeText(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// Start binds the listener now, so a bad or busy address is an error here
// (naming the address), and serves in a background goroutine until
// Shutdown.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.started:
		return ErrStarted
	}
	if s.opts.Addr == "" {
		return fmt.Errorf("admin: no listen address")
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("admin: listen on %q: %w", s.opts.Addr, err)
	}
	s.ln, s.started = ln, true
	s.srv = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
		// No WriteTimeout: /debug/pprof/profile and /trace stream for as
		// long as asked (?seconds=N).
	}
	s.served = make(chan struct{})
	go func(srv *http.Server, served chan struct{}) {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin server stopped", zap.String("addr", ln.Addr().String()), zap.Error(err))
		}
	}(s.srv, s.served)
	s.log.Info("admin listening", zap.String("addr", ln.Addr().String()), zap.Bool("pprof", !s.opts.NoPprof))
	if !isLoopback(ln.Addr()) {
		s.log.Warn("admin listener is not on loopback: its endpoints (metrics, pprof, admin) are not authenticated; keep it on a private network",
			zap.String("addr", ln.Addr().String()))
	}
	return nil
}

// isLoopback reports whether a is a loopback address (0.0.0.0 and :: are
// every address, not loopback).
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// Addr returns the address the server listens on once started (the real
// port when Options.Addr had port 0), else Options.Addr.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.opts.Addr
}

// Shutdown stops the server: it closes the listener, waits for in-flight
// requests (a running CPU profile included) until ctx is done, then closes
// what remains and returns ctx's error. It marks the server not ready.
// Shutdown of a server never started returns nil; calling it again is a
// no-op.
func (s *Server) Shutdown(ctx context.Context) error {
	s.SetNotReady("shutting down")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if !s.started {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close() // ctx expired: drop the remaining connections
	}
	select {
	case <-s.served:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		return fmt.Errorf("admin: shutdown: %w", err)
	}
	return nil
}
