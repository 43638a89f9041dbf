package bidder

import (
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/catalog/remote"
)

// BenchmarkHandler is the in-process handler (a reused RequestCtx, as
// fasthttp's ServeConn reuses it): one bid with 15 products, local index.
func BenchmarkHandler(b *testing.B) {
	f := newFixture(b, nil)
	body := withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	h := f.b.Handler()
	b.Run("bid15", func(b *testing.B) { runHandler(b, h, bidCtx(body), 200) })
	b.Run("bid15-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			rc := bidCtx(body)
			for pb.Next() {
				rc.Response.Reset()
				h(rc)
			}
		})
	})
	// The same bid for a user with viewed products only: the recommended
	// products come from the catalog's similar lists (a ratio to bid15 in
	// the same run).
	b.Run("bid15-similar", func(b *testing.B) { runHandler(b, h, bidCtx(withUser(b, body, userViewed)), 200) })
	b.Run("bid1-light", func(b *testing.B) { // the full product, 1 shown
		runHandler(b, h, bidCtx(withUser(b, body, userFull)), 200)
	})
	b.Run("nobid-unknown-user", func(b *testing.B) { runHandler(b, h, bidCtx(withUser(b, body, "nobody")), 0) })
	// Baseline in the same run: the OpenRTB decode alone.
	b.Run("baseline-bare-handler", func(b *testing.B) { runHandler(b, bareHandler(), bidCtx(body), 0) })
}

// runHandler calls h on rc in a loop, reporting allocations and CPU per
// call; with want > 0 the last answer must have status want, and its size
// is reported.
func runHandler(b *testing.B, h fasthttp.RequestHandler, rc *fasthttp.RequestCtx, want int) {
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		rc.Response.Reset()
		h(rc)
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if want > 0 {
		if rc.Response.StatusCode() != want {
			b.Fatalf("status %d, want %d", rc.Response.StatusCode(), want)
		}
		b.ReportMetric(float64(len(rc.Response.Body())), "resp-bytes")
	}
}

// bareHandler is the loopback baseline: a fasthttp handler returning a
// fixed body, what the bid endpoint is compared with.
func bareHandler() fasthttp.RequestHandler {
	fixed := []byte(`{"id":"x","nbr":0}`)
	return func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("application/json")
		rc.SetBody(fixed)
	}
}

// loopbackServer serves h on 127.0.0.1:0 until b ends.
func loopbackServer(b *testing.B, srv *fasthttp.Server) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(Listen(ln)); close(done) }() // as rtbd serves it
	b.Cleanup(func() {
		ln.Close()
		srv.Shutdown()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	})
	return ln.Addr().String()
}

const loopbackConns = 64

// loadResult is one closed-loop run.
type loadResult struct {
	rps     float64
	p50     time.Duration
	p99     time.Duration
	errors  int64
	cpu     time.Duration // process CPU (server and client) per request
	elapsed time.Duration
}

// reportVs reports r against a baseline run (baseRPS req/s, baseCPU per
// request) as x-<name>, the throughput ratio, and x-<name>-cpu, what that
// ratio would be if CPU were the only limit (a dedicated machine): the
// baseline's CPU per request / r's. A zero baseline or CPU is not reported.
func reportVs(b *testing.B, r loadResult, baseRPS float64, baseCPU time.Duration, name string) {
	if baseRPS > 0 {
		b.ReportMetric(r.rps/baseRPS, "x-"+name)
	}
	if r.cpu > 0 {
		b.ReportMetric(float64(baseCPU)/float64(r.cpu), "x-"+name+"-cpu")
	}
}

// closedLoop sends body to addr from 64 goroutines over a HostClient with
// 64 connections for b.N requests in all, and measures throughput and
// latency.
func closedLoop(b *testing.B, addr string, body []byte, wantStatus int) loadResult {
	l := newBidLoad(addr, body, wantStatus)
	b.SetParallelism((loopbackConns + 1) / 2) // x GOMAXPROCS (2 here) = 64 goroutines
	b.ResetTimer()
	start := time.Now()
	cpu := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		l.send(req, resp, pb.Next)
	})
	el := time.Since(start)
	cpuPerReq := (cpuTime() - cpu) / time.Duration(max(b.N, 1))
	b.StopTimer()
	r := loadResult{rps: float64(b.N) / el.Seconds(), errors: l.errs.Load(), cpu: cpuPerReq}
	r.p50, r.p99 = l.quantiles()
	b.ReportMetric(float64(cpuPerReq.Nanoseconds())/1000, "cpu-us/req")
	b.ReportMetric(r.rps, "req/s")
	b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99-ms")
	if n := l.nobids.Load(); n > 0 {
		b.ReportMetric(float64(n)/float64(b.N), "nobid/req")
	}
	if r.errors > 0 {
		b.Errorf("%d of %d requests failed", r.errors, b.N)
	}
	r.elapsed = el
	return r
}

var loopbackRPS struct {
	mu              sync.Mutex
	bare, bid, rem  float64
	bareCPU, bidCPU time.Duration
}

// BenchmarkLoopback: the bid endpoint over real TCP on 127.0.0.1 with 64
// connections (fasthttp.HostClient, 64 goroutines), against the baseline
// of a bare fasthttp handler returning a fixed body with the same client
// in the same run, and the bid endpoint with a remote catalog node (gRPC
// on 127.0.0.1) instead of the local index. Ratios: bid/bare, remote/bid.
// With -benchtime=Nx pick N large enough for a second or more of load.
func BenchmarkLoopback(b *testing.B) {
	body := withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 200)
	b.Run("bare", func(b *testing.B) {
		srv := &fasthttp.Server{Handler: bareHandler()}
		r := closedLoop(b, loopbackServer(b, srv), body, 200)
		loopbackRPS.mu.Lock()
		loopbackRPS.bare, loopbackRPS.bareCPU = r.rps, r.cpu
		loopbackRPS.mu.Unlock()
	})
	b.Run("bid-local", func(b *testing.B) {
		f := newFixture(b, nil)
		addr := loopbackServer(b, f.b.NewServer())
		r := closedLoop(b, addr, body, 200)
		loopbackRPS.mu.Lock()
		loopbackRPS.bid, loopbackRPS.bidCPU = r.rps, r.cpu
		reportVs(b, r, loopbackRPS.bare, loopbackRPS.bareCPU, "bare")
		loopbackRPS.mu.Unlock()
	})
	b.Run("bid-remote", func(b *testing.B) {
		addr := remoteBidder(b, newFixture(b, nil))
		// Wait (bounded) for the client to be connected.
		warm := time.Now().Add(10 * time.Second)
		for {
			c := &fasthttp.HostClient{Addr: addr}
			req := fasthttp.AcquireRequest()
			resp := fasthttp.AcquireResponse()
			req.SetRequestURI("http://" + addr + PathBid)
			req.Header.SetMethod("POST")
			req.SetBody(body)
			err := c.Do(req, resp)
			ok := err == nil && resp.StatusCode() == 200
			fasthttp.ReleaseRequest(req)
			fasthttp.ReleaseResponse(resp)
			if ok {
				break
			}
			if time.Now().After(warm) {
				b.Fatal("remote catalog bidder never bid")
			}
			time.Sleep(20 * time.Millisecond)
		}
		r := closedLoop(b, addr, body, 200)
		loopbackRPS.mu.Lock()
		loopbackRPS.rem = r.rps
		reportVs(b, r, loopbackRPS.bid, loopbackRPS.bidCPU, "local")
		loopbackRPS.mu.Unlock()
	})
}

// remoteBidder serves, on 127.0.0.1 until b ends, the bid endpoint of a
// bidder whose products come from f's index through a catalog node (gRPC
// on 127.0.0.1), and returns its address.
func remoteBidder(b *testing.B, f *fixture) string {
	node, err := biddertest.StartCatalogNode(b, f.local)
	if err != nil {
		b.Fatal(err)
	}
	rc, err := remote.New(remote.Options{Target: "static:///" + node})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rc.Close() })
	f2 := newFixture(b, func(o *Options) { o.Products, o.CellCache = rc, 0 })
	return loopbackServer(b, f2.b.NewServer())
}

// phase is one closed-loop load phase of fixed duration.
type phase struct {
	rps     float64
	cpu     time.Duration // process CPU per request (client and server)
	p99     time.Duration
	nobids  int64
	errors  int64
	answers int64
}

// withConns runs f in n goroutines, each with its own request and
// response (released after), and returns when all have returned.
func withConns(n int, f func(req *fasthttp.Request, resp *fasthttp.Response)) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			f(req, resp)
		}()
	}
	wg.Wait()
}

// runPhase loads addr with body from 64 goroutines over a 64-connection
// HostClient for d.
func runPhase(addr string, body []byte, d time.Duration) phase {
	l := newBidLoad(addr, body, 200)
	stop := time.Now().Add(d)
	cpu := cpuTime()
	start := time.Now()
	withConns(loopbackConns, func(req *fasthttp.Request, resp *fasthttp.Response) {
		l.send(req, resp, func() bool { return time.Now().Before(stop) })
	})
	el := time.Since(start)
	p := phase{answers: l.n.Load(), nobids: l.nobids.Load(), errors: l.errs.Load()}
	p.rps = float64(p.answers) / el.Seconds()
	p.cpu = (cpuTime() - cpu) / time.Duration(max(p.answers, 1))
	_, p.p99 = l.quantiles()
	return p
}

// bidLoad is a closed-loop load of bid requests (body) on addr over a
// 64-connection HostClient: what each request got, and the latencies.
type bidLoad struct {
	c               *fasthttp.HostClient
	addr            string
	body            []byte
	want            int // the status of an answer; a 204 counts as a no-bid, anything else as an error
	n, nobids, errs atomic.Int64
	mu              sync.Mutex
	lats            []time.Duration
}

func newBidLoad(addr string, body []byte, want int) *bidLoad {
	c := &fasthttp.HostClient{Addr: addr, MaxConns: loopbackConns, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	return &bidLoad{c: c, addr: addr, body: body, want: want}
}

// send posts the body with req and resp while more() holds.
func (l *bidLoad) send(req *fasthttp.Request, resp *fasthttp.Response, more func() bool) {
	req.SetRequestURI("http://" + l.addr + PathBid)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBody(l.body)
	local := make([]time.Duration, 0, 4096)
	for more() {
		t := time.Now()
		err := l.c.Do(req, resp)
		local = append(local, time.Since(t))
		l.n.Add(1)
		switch {
		case err != nil:
			l.errs.Add(1)
		case resp.StatusCode() == l.want:
		case resp.StatusCode() == fasthttp.StatusNoContent:
			l.nobids.Add(1) // a deadline no-bid under overload: an answer, not an error
		default:
			l.errs.Add(1)
		}
	}
	l.mu.Lock()
	l.lats = append(l.lats, local...)
	l.mu.Unlock()
}

// quantiles returns the median and 99th percentile latency of the requests
// sent (0 if none).
func (l *bidLoad) quantiles() (p50, p99 time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.lats)
	if len(l.lats) == 0 {
		return 0, 0
	}
	return l.lats[len(l.lats)/2], l.lats[len(l.lats)*99/100]
}

// series is one measurement per round and the unit it is reported in.
type series struct {
	xs   []float64
	unit string
}

// reportMedians reports the median of each series under its unit.
func reportMedians(b *testing.B, ss []series) {
	for _, s := range ss {
		b.ReportMetric(median(s.xs), s.unit)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLoopbackRatio alternates phases of the bare handler, the bid
// endpoint with the local index, and the bid endpoint with a remote
// catalog node, 5 rounds of 1.5 s each, all on 127.0.0.1 with the same
// 64-connection client, and reports medians: throughput, the ratios
// bid/bare and remote/local (wall, and CPU per request, which a noisy
// shared machine distorts less). Run it with -benchtime=1x.
func BenchmarkLoopbackRatio(b *testing.B) {
	body := withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 200)
	bare := loopbackServer(b, &fasthttp.Server{Handler: bareHandler()})
	f := newFixture(b, nil)
	local := loopbackServer(b, f.b.NewServer())
	rem := remoteBidder(b, f)
	runPhase(rem, body, 300*time.Millisecond) // connect the gRPC client
	const rounds = 5
	const d = 1500 * time.Millisecond
	var rBare, rLocal, rRemote, cBare, cLocal, cRemote, ratio, ratioCPU, remRatio, remRatioCPU []float64
	var nobids, errs int64
	for i := 0; i < rounds; i++ {
		pb := runPhase(bare, body, d)
		pl := runPhase(local, body, d)
		pr := runPhase(rem, body, d)
		rBare, rLocal, rRemote = append(rBare, pb.rps), append(rLocal, pl.rps), append(rRemote, pr.rps)
		cBare, cLocal, cRemote = append(cBare, float64(pb.cpu.Microseconds())), append(cLocal, float64(pl.cpu.Microseconds())), append(cRemote, float64(pr.cpu.Microseconds()))
		ratio = append(ratio, pl.rps/pb.rps)
		ratioCPU = append(ratioCPU, float64(pb.cpu)/float64(pl.cpu))
		remRatio = append(remRatio, pr.rps/pl.rps)
		remRatioCPU = append(remRatioCPU, float64(pl.cpu)/float64(pr.cpu))
		nobids += pl.nobids + pr.nobids
		errs += pb.errors + pl.errors + pr.errors
		b.Logf("round %d: bare %.0f req/s (%s CPU/req), bid-local %.0f (%s, p99 %s, %d no-bids), bid-remote %.0f (%s, p99 %s, %d no-bids)",
			i+1, pb.rps, pb.cpu, pl.rps, pl.cpu, pl.p99, pl.nobids, pr.rps, pr.cpu, pr.p99, pr.nobids)
	}
	for b.Loop() { // the phases above are the measurement; metrics below
	}
	lrps := median(rLocal)
	reportMedians(b, []series{
		{rBare, "bare-req/s"}, {rLocal, "local-req/s"}, {rRemote, "remote-req/s"},
		{ratio, "local/bare"}, {ratioCPU, "local/bare-cpu"}, {remRatio, "remote/local"}, {remRatioCPU, "remote/local-cpu"},
		{cBare, "bare-cpu-us"}, {cLocal, "local-cpu-us"}, {cRemote, "remote-cpu-us"},
	})
	b.Logf("medians of %d rounds: bare %.0f req/s, local %.0f (x%.3f wall, x%.3f by CPU/req), remote %.0f (x%.3f of local wall, x%.3f by CPU); %d deadline no-bids, %d errors",
		rounds, median(rBare), lrps, median(ratio), median(ratioCPU), median(rRemote), median(remRatio), median(remRatioCPU), nobids, errs)
	if errs > 0 {
		b.Errorf("%d requests failed", errs)
	}
}

// nearHandlers returns the bid handler on f's local index and one on the
// remote client over a catalog node serving that index, its near cache
// filled by a few bids of body.
func nearHandlers(tb testing.TB, body []byte) (local, near fasthttp.RequestHandler) {
	f := newFixture(tb, nil)
	node, err := biddertest.StartCatalogNode(tb, f.local)
	if err != nil {
		tb.Fatal(err)
	}
	rc, err := remote.New(remote.Options{Target: "static:///" + node, NearCacheBytes: 64 << 20, VersionInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rc.Close() })
	near = newFixture(tb, func(o *Options) { o.Products = rc }).b.Handler()
	for range 3 {
		rc := bidCtx(body)
		near(rc)
		if rc.Response.StatusCode() != 200 {
			tb.Fatalf("remote bid: status %d", rc.Response.StatusCode())
		}
	}
	return f.b.Handler(), near
}

// BenchmarkHandlerNear is BenchmarkHandler's bid15 through the remote
// client with its near cache warm (no catalog call per bid), beside the
// local index in the same run: the bidder's own cost of the remote path.
func BenchmarkHandlerNear(b *testing.B) {
	body := withUser(b, readFile(b, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	local, near := nearHandlers(b, body)
	b.Run("local", func(b *testing.B) { runHandler(b, local, bidCtx(body), 200) })
	b.Run("remote-near", func(b *testing.B) { runHandler(b, near, bidCtx(body), 200) })
}
