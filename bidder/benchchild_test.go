package bidder

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bench"
	"github.com/rtbd/rtbd/bench/proc"
	"github.com/rtbd/rtbd/bench/target"
	"github.com/rtbd/rtbd/bidder/gcfloor"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/configs"
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
	d, err := proc.CPU(c.cmd.Process.Pid)
	if err != nil {
		return 0
	}
	return d
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
	// The bidder children run with the GC floor a bidder started from the
	// default config has (bidder.gc_floor_mb); BIDDER_BENCH_GC_FLOOR_MB
	// overrides it (0: off, Go's GOGC as set).
	if kind, _, _ := strings.Cut(mode, ":"); kind == "local" || kind == "remote" {
		defer gcfloor.Start(gcfloor.Options{Bytes: childGCFloor() << 20}).Stop()
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

// childGCFloor is the GC floor of bidder children, in MiB.
func childGCFloor() int64 {
	if v, err := strconv.ParseInt(os.Getenv("BIDDER_BENCH_GC_FLOOR_MB"), 10, 64); err == nil {
		return v
	}
	cfg, err := configs.Default()
	if err != nil {
		panic(err)
	}
	return int64(cfg.Bidder.GCFloorMB)
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
// CPU per request (client plus server processes), and p99 at half the
// bidder's throughput, open loop. Run it with -benchtime=1x.
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
	// p99 at half the bidder's throughput, open loop, by rtbd's own load
	// generator (bench.RunOpenLoop: latency from the moment the pacer
	// dispatched each request, so a stalled server cannot hide its queue;
	// the pacer's own lateness behind the schedule is reported apart, as
	// send lag). The same-size bare handler at the same rate is the floor
	// of the machine and the generator.
	// Five rounds, the targets interleaved; the median round of each is
	// reported (one round's p99 on this shared VM swings with its
	// neighbours' load, and with three rounds two unlucky ones decided the
	// median). Every round is logged, with the host's steal in it.
	//
	// First, the machine's floor under any request and answer between two
	// processes: waking a thread that sleeps on the other CPU (each request
	// needs at least two wake-ups: into the server, back into the
	// generator). On a VM whose idle vCPUs halt, that is an interrupt
	// through the hypervisor (bench/wakeup).
	wake := bench.MeasureWakeupFloor(context.Background())
	var hls, hbs, hrs []harnessRun
	for range 5 {
		hls = append(hls, harnessOpenLoop(b, local, body, lrps/2, 2*time.Second))
		hbs = append(hbs, harnessOpenLoop(b, bareSame, body, lrps/2, 2*time.Second))
		hrs = append(hrs, harnessOpenLoop(b, rem, body, rrps/2, 2*time.Second))
	}
	hl, hb, hr := medianRun(hls), medianRun(hbs), medianRun(hrs)
	b.Logf("p99 of the rounds: local %v, same-size bare %v, remote %v", p99s(hls), p99s(hbs), p99s(hrs))
	b.Logf("the bidders' own p99 in those rounds (kernel receive time to answer, and to the handler's start; their histograms' bucket bounds): local %v, remote %v", rounds(hls, harnessRun.serverP99), rounds(hrs, harnessRun.serverP99))
	p99l, p99r := hl.p99, hr.p99
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
	b.ReportMetric(float64(p99l.Microseconds())/1000, "local-p99-ms@half")
	b.ReportMetric(float64(p99r.Microseconds())/1000, "remote-p99-ms@half")
	b.ReportMetric(float64(hb.p99.Microseconds())/1000, "bare-p99-ms@local-half")
	b.ReportMetric(float64(hl.lag.Microseconds())/1000, "send-lag-p99-ms@local-half")
	wakeLine := "not measured (one CPU, or not Linux)"
	if wake != nil {
		b.ReportMetric(float64(wake.Cross.P50.Microseconds()), "wake-rtt-p50-us")
		b.ReportMetric(float64(wake.Cross.P99.Microseconds()), "wake-rtt-p99-us")
		wakeLine = wake.String()
	}
	b.Logf("p99 at half load (%.0f req/s local, %.0f remote; the generator at GOMAXPROCS %d) [send lag p99 of the generator]: local %s [%s], same-size bare at the local rate %s [%s], remote %s [%s]; %s; the host's wake-up floor: %s",
		lrps/2, rrps/2, genProcs(), hl.p99, hl.lag, hb.p99, hb.lag, hr.p99, hr.lag, hl.summary, wakeLine)
	b.Logf("medians of 5 rounds: bare %.0f req/s, bare with a %d-byte body %.0f, local %.0f (x%.3f of bare, x%.3f of same-size bare), remote %.0f (x%.3f of local); CPU/req us: bare %.1f, same-size %.1f, local %.1f, remote %.1f; p99 at half load: local %s, remote %s; %d no-bids, %d errors",
		median(mBare.rps), size, median(mSame.rps), lrps, lrps/median(mBare.rps), lrps/median(mSame.rps), rrps, rrps/lrps,
		median(mBare.cpu), median(mSame.cpu), median(mLocal.cpu), median(mRemote.cpu), p99l, p99r, nobids, errs)
	for _, h := range slices.Concat(hls, hbs, hrs) {
		errs += h.errors
	}
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
		st, err := proc.ReadStatus(c.cmd.Process.Pid)
		if err != nil {
			return 0
		}
		return st.VmRSSBytes
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

// harnessRun is what harnessOpenLoop reports.
type harnessRun struct {
	p99, lag         time.Duration // latency p99; the generator's send lag p99
	server, queue    time.Duration // a bidder's own p99 and that of its queueing before the handler, as bucket bounds; 0: unknown
	requests, errors int64
	steal            float64 // host steal, percent of the CPUs' time in the round; -1 unknown
	summary          string
}

// serverP99 formats r.server and r.queue: "<=2ms (queue <=2ms)", or "?".
func (r harnessRun) serverP99() string {
	if r.server == 0 || r.queue == 0 {
		return "?"
	}
	return "<=" + r.server.String() + " (queue <=" + r.queue.String() + ")"
}

// harnessOpenLoop offers rate req/s of body to addr's bid endpoint for d
// (after 0.5 s of warm-up) with rtbd's open-loop load generator
// (bench.RunOpenLoop), at most 64 requests in flight (the 64 connections
// of the closed-loop phases), the pacer waking every 200 us. Latency
// counts from the moment the pacer dispatched each request, so a stalled
// server cannot hide its queue; the pacer's own lateness behind the
// schedule (Go timers wake up to ~1 ms late here) is the send lag,
// reported apart. For a bidder child, its own histogram of arrival (the
// kernel's receive time) to answer, rtbd_bidder_request_seconds, read
// before and after, gives the bidder's share of that p99 (as the bound
// of its bucket: 1, 2, 3, 5 ms...), and rtbd_bidder_queue_seconds the
// part of it spent before the handler ran (waiting for a thread, a CPU).
//
// The generator runs with GOMAXPROCS genProcs() meanwhile (1 by default).
// At these rates it needs about a third of a core, and with one P its
// goroutines take turns on one thread, so that handing a request to a
// worker never wakes another: with two, the Go scheduler wakes a second
// thread for nearly every dispatch, and on this
// VM (idle vCPUs halt, bench/wakeup) each such wake-up is an interrupt
// through the hypervisor, p50 ~50 us and p99 up to ms. Measured at 16,000
// req/s: generator 0.26-0.29 cores with one P, 0.40-0.45 with two. The
// bidder children are separate processes, untouched.
func harnessOpenLoop(b *testing.B, c *childServer, body []byte, rate float64, d time.Duration) harnessRun {
	b.Helper()
	if n := genProcs(); n > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	addr := c.addr
	var watch bench.Watch
	if c.metrics != "" {
		watch.Histograms = []bench.WatchHistogram{{Name: "bidder", URL: c.metrics, Metric: "rtbd_bidder_request_seconds"},
			{Name: "bidder-queue", URL: c.metrics, Metric: "rtbd_bidder_queue_seconds"}}
	}
	tg, err := target.NewHTTP(target.HTTPOptions{Name: addr, URL: "http://" + addr + PathBid, MaxConns: loopbackConns,
		Body: func(_ *bench.Worker, dst []byte) []byte { return append(dst, body...) }})
	if err != nil {
		b.Fatal(err)
	}
	r, err := bench.RunOpenLoop(context.Background(), tg, bench.OpenLoopOptions{Rate: rate, Duration: d,
		Warmup: 500 * time.Millisecond, MaxInFlight: loopbackConns, Timeout: 5 * time.Second,
		// The pacer's default 1 ms slice sends each millisecond's requests
		// together: at ~12,000 req/s a burst of 12 at once, which alone
		// doubles the bidder's p50 (0.9 -> 0.4 ms measured). 200 us spreads
		// them as arrivals spread, for a little more generator CPU.
		Slice: 200 * time.Microsecond, Watch: watch})
	if err != nil {
		b.Fatal(err)
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	var server, queue time.Duration
	if len(r.ServerSide) == 2 {
		for i, d := range []*time.Duration{&server, &queue} {
			if le, ok := r.ServerSide[i].QuantileBound(0.99); ok {
				*d = time.Duration(le * float64(time.Second))
			}
		}
	}
	steal := -1.0
	if r.Host != nil {
		steal = r.Host.StealPct
	}
	return harnessRun{p99: us(r.Latency.P99Us), lag: us(r.SendLag.P99Us), server: server, queue: queue, requests: r.Requests, errors: r.Errors.Total, steal: steal,
		summary: fmt.Sprintf("%s: %d requests, %d OK, %d no-bids, p50 %s, p99.9 %s, max %s, generator %.2f cores",
			addr, r.Requests, r.Successes, r.NoBids, us(r.Latency.P50Us), us(r.Latency.P999Us), us(r.Latency.MaxUs), r.GeneratorCores)}
}

// genProcs is the load generator's GOMAXPROCS in harnessOpenLoop:
// BIDDER_BENCH_GEN_PROCS, default 1; 0 leaves it as it is.
func genProcs() int {
	if v, err := strconv.Atoi(os.Getenv("BIDDER_BENCH_GEN_PROCS")); err == nil && v >= 0 {
		return v
	}
	return 1
}

// medianRun returns the run with the median p99.
func medianRun(rs []harnessRun) harnessRun {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b harnessRun) int { return cmp.Compare(a.p99, b.p99) })
	return rs[len(rs)/2]
}

// rounds formats each round with f.
func rounds(rs []harnessRun, f func(harnessRun) string) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// p99s lists the rounds' p99s with the host's steal share in each.
func p99s(rs []harnessRun) []string {
	return rounds(rs, func(r harnessRun) string { return fmt.Sprintf("%s (steal %.0f%%)", r.p99, r.steal) })
}
