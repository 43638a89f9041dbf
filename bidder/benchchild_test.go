package bidder

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/procfs"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/remote"
)

// serveChild is the environment variable that makes the test binary a
// benchmark server (see TestMain): its value is the mode.
const serveChild = "BIDDER_BENCH_SERVE" // not RTBD_*: configs rejects unknown RTBD_ variables

// childServer is a server the benchmark runs as a separate process: the
// test binary re-executed, so that the server has its own Go runtime
// (scheduler, network poller, GC), as a bidder has in production, instead
// of sharing them with the load generator.
type childServer struct {
	cmd     *exec.Cmd
	addr    string
	metrics string // the bidder children's Prometheus URL, "" for others
}

// startChild starts the test binary as a server in mode and waits for its
// address. The child exits when its stdin closes (the parent ended).
func startChild(b testing.TB, mode string) *childServer {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveChild+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		b.Fatalf("child %s: no address (%q, %v)", mode, line, err)
	}
	c := &childServer{cmd: cmd, addr: addr}
	if kind, _, _ := strings.Cut(mode, ":"); kind == "local" || kind == "remote" {
		line, err = r.ReadString('\n')
		m, ok := strings.CutPrefix(strings.TrimSpace(line), "METRICS ")
		if err != nil || !ok {
			b.Fatalf("child %s: no metrics address (%q, %v)", mode, line, err)
		}
		c.metrics = "http://" + m + "/metrics"
	}
	go io.Copy(io.Discard, r)
	return c
}

// cpu is the child's CPU time so far.
func (c *childServer) cpu() time.Duration {
	st, err := c.stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// stat reads the child's /proc/PID/stat.
func (c *childServer) stat() (procfs.ProcStat, error) {
	p, err := procfs.NewProc(c.cmd.Process.Pid)
	if err != nil {
		return procfs.ProcStat{}, err
	}
	return p.Stat()
}

// childTB is the testing.TB of a benchmark child: Fatal panics, Cleanup
// runs at exit.
type childTB struct {
	testing.TB
	cleanups []func()
}

func (*childTB) Helper()                   {}
func (*childTB) Name() string              { return "bench-child" }
func (*childTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (*childTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (*childTB) Logf(f string, a ...any)   { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (*childTB) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (t *childTB) Cleanup(fn func())       { t.cleanups = append(t.cleanups, fn) }
func (t *childTB) TempDir() string {
	d, _ := os.MkdirTemp("", "bidder-child-")
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
func (*childTB) Setenv(key, value string) { os.Setenv(key, value) }
func (*childTB) Context() context.Context { return context.Background() }

// runChild serves mode until stdin closes:
//
//	bare:N      a bare fasthttp handler answering a fixed body of N bytes
//	local       the bidder fixture with the local index
//	node        a catalog node (gRPC) serving the fixture catalog
//	remote:ADDR the bidder fixture with the remote client to node ADDR
//
// With BIDDER_BENCH_CPUPROFILE=FILE set, the child writes its CPU profile
// there when it exits (go tool pprof FILE).
func runChild(mode string) int {
	if f := os.Getenv("BIDDER_BENCH_CPUPROFILE"); f != "" && !strings.HasPrefix(mode, "bare") {
		out, err := os.Create(f + "." + strings.ReplaceAll(strings.ReplaceAll(mode, ":", "-"), "/", "_"))
		if err == nil && pprof.StartCPUProfile(out) == nil {
			defer func() { pprof.StopCPUProfile(); out.Close() }()
		}
	}
	t := &childTB{}
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
		os.RemoveAll(catalogDir())
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var serve func() error
	var reg *prometheus.Registry // the bidders' metrics, served on a second port
	switch kind, arg, _ := strings.Cut(mode, ":"); kind {
	case "bare":
		n, _ := strconv.Atoi(arg)
		srv := &fasthttp.Server{Handler: bareHandlerN(n)}
		serve = func() error { return srv.Serve(ln) }
	case "local":
		f := newFixture(t, nil)
		reg = f.reg
		srv := f.b.NewServer()
		// BIDDER_BENCH_REDUCE_MEMORY=0 keeps idle connections' buffers
		// (fasthttp's default), to compare (BenchmarkConns).
		if os.Getenv("BIDDER_BENCH_REDUCE_MEMORY") == "0" {
			srv.ReduceMemoryUsage = false
		}
		serve = func() error { return srv.Serve(Listen(ln)) } // as rtbd serves it
	case "node":
		local, err := catalog.OpenLocal(catalogDir(), catalog.LocalOptions{WatchInterval: -1})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer local.Close()
		srv := catalog.NewServer(local, catalog.ServerOptions{})
		g, _ := catalog.NewGRPCServer(srv, catalog.GRPCOptions{})
		serve = func() error { return g.Serve(ln) }
	case "remote":
		rc, err := remote.New(remote.Options{Target: "static:///" + arg})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer rc.Close()
		f := newFixture(t, func(o *Options) { o.Products, o.CellCache = rc, 0 })
		reg = f.reg
		srv := f.b.NewServer()
		serve = func() error { return srv.Serve(Listen(ln)) }
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		return 2
	}
	go serve()
	fmt.Printf("ADDR %s\n", ln.Addr())
	if reg != nil {
		mln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go http.Serve(mln, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		fmt.Printf("METRICS %s\n", mln.Addr())
	}
	io.Copy(io.Discard, os.Stdin) // until the parent closes it (or dies)
	ln.Close()
	return 0
}

// bareHandlerN answers a fixed JSON body of about n bytes (at least the
// 18 of bareHandler).
func bareHandlerN(n int) fasthttp.RequestHandler {
	body := []byte(`{"id":"x","nbr":0}`)
	if n > len(body) {
		pad := n - len(`{"id":"x","pad":""}`)
		body = []byte(`{"id":"x","pad":"` + strings.Repeat("a", max(pad, 0)) + `"}`)
	}
	return func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("application/json")
		rc.SetBody(body)
	}
}

// BenchmarkLoopbackProcs is BenchmarkLoopbackRatio with every server in
// its own process (the test binary re-executed), as in production: the
// load generator (this process, 64 connections) no longer shares a Go
// scheduler, network poller and GC with the server it measures. The two
// cores are still shared. Phases alternate, 5 rounds of 1.5 s: the bare
// handler with a tiny body (the baseline), the bare handler with a
// body the size of the bid response (the same bytes on the wire, no work),
// the bidder with the local index, and the bidder with a catalog node
// (a third process). Reported: medians of throughput and their ratios,
// and CPU per request (client plus server processes). Latency under an
// open-loop load, processes apart, is rtbd bench's to measure (rtbd bench
// bidder). Run it with -benchtime=1x.
func BenchmarkLoopbackProcs(b *testing.B) {
	body := withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 200)
	local := startChild(b, "local")
	// The size of a real answer, for the same-size baseline.
	c := &fasthttp.Client{}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI("http://" + local.addr + PathBid)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetBody(body)
	if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		b.Fatalf("bid: %v %d", err, resp.StatusCode())
	}
	size := len(resp.Body())
	bare := startChild(b, "bare:18")
	bareSame := startChild(b, "bare:"+strconv.Itoa(size))
	node := startChild(b, "node")
	rem := startChild(b, "remote:"+node.addr)
	runPhase(rem.addr, body, 300*time.Millisecond) // connect the gRPC client
	// Measure the bidders in their steady state, as they run in
	// production: their heap grown to the GC floor (256 MiB by default),
	// the page faults that takes paid before the rounds, not inside them.
	var warm []string
	for _, w := range []struct {
		name string
		c    *childServer
	}{{"local", local}, {"remote", rem}} {
		took, rss := warmUp(w.c, body)
		warm = append(warm, fmt.Sprintf("%s bidder %s (RSS %d MiB)", w.name, took.Round(100*time.Millisecond), rss>>20))
	}
	// One line: testing keeps only 10 lines of a benchmark's log.
	b.Logf("warm-up, until the RSS grew by less than 2%% in %s: %s", warmStep, strings.Join(warm, ", "))
	type meas struct{ rps, cpu []float64 }
	var mBare, mSame, mLocal, mRemote meas
	phaseOf := func(m *meas, addr string, procs ...*childServer) phase {
		before := cpuTime()
		var cb []time.Duration
		for _, p := range procs {
			cb = append(cb, p.cpu())
		}
		p := runPhase(addr, body, 1500*time.Millisecond)
		used := cpuTime() - before
		for i, pr := range procs {
			used += pr.cpu() - cb[i]
		}
		cpu := used / time.Duration(max(p.answers, 1))
		m.rps = append(m.rps, p.rps)
		m.cpu = append(m.cpu, float64(cpu.Microseconds()))
		p.cpu = cpu
		return p
	}
	var nobids, errs int64
	for i := 0; i < 5; i++ {
		pb := phaseOf(&mBare, bare.addr, bare)
		ps := phaseOf(&mSame, bareSame.addr, bareSame)
		pl := phaseOf(&mLocal, local.addr, local)
		pr := phaseOf(&mRemote, rem.addr, rem, node)
		nobids += pl.nobids + pr.nobids
		errs += pb.errors + ps.errors + pl.errors + pr.errors
		b.Logf("round %d: bare %.0f req/s (%s CPU/req), bare %d B %.0f (%s), bid-local %.0f (%s, %d no-bids), bid-remote %.0f (%s, %d no-bids)",
			i+1, pb.rps, pb.cpu, size, ps.rps, ps.cpu, pl.rps, pl.cpu, pl.nobids, pr.rps, pr.cpu, pr.nobids)
	}
	for b.Loop() {
	}
	lrps, rrps := median(mLocal.rps), median(mRemote.rps)
	b.ReportMetric(median(mBare.rps), "bare-req/s")
	b.ReportMetric(median(mSame.rps), "bare-samesize-req/s")
	b.ReportMetric(lrps, "local-req/s")
	b.ReportMetric(rrps, "remote-req/s")
	b.ReportMetric(lrps/median(mBare.rps), "local/bare")
	b.ReportMetric(lrps/median(mSame.rps), "local/bare-samesize")
	b.ReportMetric(rrps/lrps, "remote/local")
	b.ReportMetric(median(mBare.cpu), "bare-cpu-us")
	b.ReportMetric(median(mLocal.cpu), "local-cpu-us")
	b.ReportMetric(median(mRemote.cpu), "remote-cpu-us")
	b.Logf("medians of 5 rounds: bare %.0f req/s, bare with a %d-byte body %.0f, local %.0f (x%.3f of bare, x%.3f of same-size bare), remote %.0f (x%.3f of local); CPU/req us: bare %.1f, same-size %.1f, local %.1f, remote %.1f; %d no-bids, %d errors",
		median(mBare.rps), size, median(mSame.rps), lrps, lrps/median(mBare.rps), lrps/median(mSame.rps), rrps, rrps/lrps,
		median(mBare.cpu), median(mSame.cpu), median(mLocal.cpu), median(mRemote.cpu), nobids, errs)
	if errs > 0 {
		b.Errorf("%d requests failed", errs)
	}
}

// warmStep is the step of warmUp.
const warmStep = 500 * time.Millisecond

// warmUp serves body to bidder child c, 64 connections, until its resident
// set grows by less than 2% in a warmStep (at most 30 s), and returns the
// time taken and the RSS. A bidder allocates a few KiB per bid and a GC
// floor (bidder.gc_floor_mb) lets the heap grow to it before collecting:
// until then each new page of heap is a page fault (in the rounds of a run, 5-10%
// more CPU per bid measured, and more the earlier the round).
func warmUp(c *childServer, body []byte) (time.Duration, int64) {
	start := time.Now()
	rss := func() int64 {
		st, err := c.stat()
		if err != nil {
			return 0
		}
		return int64(st.ResidentMemory())
	}
	last := rss()
	for time.Since(start) < 30*time.Second {
		runPhase(c.addr, body, warmStep)
		now := rss()
		if now < last+last/50 {
			return time.Since(start), now
		}
		last = now
	}
	return time.Since(start), last
}
