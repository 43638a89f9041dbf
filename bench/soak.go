package bench

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/valyala/fasthttp"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bench/internal/proc"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/token"
)

// SoakOptions configure RunSoak. Zero values take the defaults noted.
type SoakOptions struct {
	// Duration of the measured phase (faults happen in it). Default 10m.
	Duration time.Duration
	// Warmup before it (load, no faults, not counted). Default 30s.
	Warmup time.Duration
	// Rate of bid requests, req/s (split over the bidders). Default 100.
	Rate float64
	// EventRate and ClickRate: pixel events (/event) and clicks (/click of
	// answered bids' product links), req/s. Defaults Rate/5 and Rate/20.
	EventRate, ClickRate float64
	// WinRatio is the share of bids answered with a bid whose nurl and
	// then burl are sent, NoticeDelay to 2 x NoticeDelay later, each to a
	// bidder chosen then. Default 0.5 (NoticeDelay 500ms).
	WinRatio    float64
	NoticeDelay time.Duration
	// ReplayRatio is the share of accepted billing notices sent a second
	// time, to the other bidder, a few seconds later (an exchange's
	// retry): they must not be charged twice. Default 0.05.
	ReplayRatio float64
	// Tmax is the bids' deadline (answers past it are counted late);
	// Timeout the hard per-request deadline. Defaults 100ms, 1s.
	Tmax, Timeout time.Duration
	// Rounds is how many times each fault runs, spread evenly over
	// Duration. Default 2.
	Rounds int
	// Faults limits the faults to these kinds (SoakFaultKinds); empty: all.
	Faults []string
	// FaultGrace is how long after a fault's recovery an error or late
	// answer is still attributed to it. Default 5s.
	FaultGrace time.Duration
	// Outage is how long a killed catalog node or redis-server stays down
	// and a cut-off node cut off. Default 3s (cut: 5s).
	Outage time.Duration
	// RSSWarmup is how long after a process starts its RSS is not judged.
	// Default 60s (a third of Duration when that is shorter).
	RSSWarmup time.Duration
	// DemoSize is the demo written.
	DemoSize
	// Exe is the rtbd binary ("": this executable); RedisServer the
	// redis-server binary (default DefaultRedisServer).
	Exe, RedisServer string
	// BidderArgs and NodeArgs are extra flags of the bidders and nodes.
	BidderArgs, NodeArgs []string
	// WorkDir keeps the children's logs and data. "": a temporary one.
	WorkDir string
	// Seed of the request streams.
	Seed uint64
	// Log receives progress lines. nil: none.
	Log io.Writer
}

// Fault kinds of the soak, in schedule order.
const (
	FaultNodeKill   = "node-kill"   // kill -9 of a catalog node, restarted after Outage
	FaultRedisKill  = "redis-kill"  // kill -9 of redis-server (AOF, appendfsync always), restarted after Outage
	FaultBidderKill = "bidder-kill" // kill -9 of a bidder, restarted at once on its data dir
	FaultNodeCut    = "node-cut"    // a catalog node stopped (SIGSTOP, then SIGCONT): connections open, nothing answered
)

// SoakFaultKinds are every fault kind, in schedule order.
var SoakFaultKinds = []string{FaultNodeKill, FaultRedisKill, FaultBidderKill, FaultNodeCut}

func (o SoakOptions) withDefaults() SoakOptions {
	o.Duration = cmp.Or(o.Duration, 10*time.Minute)
	o.Warmup = cmp.Or(o.Warmup, 30*time.Second)
	o.Rate = cmp.Or(o.Rate, 100)
	o.EventRate = cmp.Or(o.EventRate, o.Rate/5)
	o.ClickRate = cmp.Or(o.ClickRate, o.Rate/20)
	o.WinRatio = cmp.Or(o.WinRatio, 0.5)
	o.NoticeDelay = cmp.Or(o.NoticeDelay, 500*time.Millisecond)
	o.ReplayRatio = cmp.Or(o.ReplayRatio, 0.05)
	o.Tmax = cmp.Or(o.Tmax, 100*time.Millisecond)
	o.Timeout = cmp.Or(o.Timeout, time.Second)
	o.Rounds = cmp.Or(o.Rounds, 2)
	if len(o.Faults) == 0 {
		o.Faults = SoakFaultKinds
	}
	o.FaultGrace = cmp.Or(o.FaultGrace, 5*time.Second)
	o.Outage = cmp.Or(o.Outage, 3*time.Second)
	o.RSSWarmup = cmp.Or(o.RSSWarmup, min(60*time.Second, o.Duration/3))
	o.DemoSize = o.DemoSize.withDefaults()
	o.RedisServer = cmp.Or(o.RedisServer, DefaultRedisServer)
	o.Log = cmp.Or(o.Log, io.Discard)
	return o
}

// Validate reports every problem of o (after defaults).
func (o SoakOptions) Validate() error {
	o = o.withDefaults()
	var p problems
	if o.Duration < 10*time.Second {
		p.addf("duration: must be >= 10s, got %v", o.Duration)
	}
	if o.Warmup < 0 {
		p.addf("warmup: must be >= 0")
	}
	if o.Rate <= 0 || o.EventRate < 0 || o.ClickRate < 0 {
		p.addf("rate, event-rate, click-rate: want rate > 0 and the others >= 0")
	}
	if o.WinRatio < 0 || o.WinRatio > 1 || o.ReplayRatio < 0 || o.ReplayRatio > 1 {
		p.addf("win-ratio, replay-ratio: must be 0..1")
	}
	if o.Rounds < 1 {
		p.addf("rounds: must be >= 1, got %d", o.Rounds)
	}
	for _, f := range o.Faults {
		if !slices.Contains(SoakFaultKinds, f) {
			p.addf("faults: unknown %q (want %s)", f, strings.Join(SoakFaultKinds, ","))
		}
	}
	o.DemoSize.validate(&p)
	return p.err()
}

// soakBidder is one bidder slot of the soak fleet: its current process
// (restarted on the same ports and data dir), and whether the harness's
// balancer sends it traffic (its /readyz, polled).
type soakBidder struct {
	name   string
	mu     sync.Mutex // guards srv's process during a restart
	srv    *server
	up     atomic.Bool
	client *fasthttp.HostClient
	starts int
}

// soakNode is one catalog node slot: its current process (restarted on
// the same ports).
type soakNode struct {
	name string
	srv  *server
}

// soakFleet is what RunSoak started.
type soakFleet struct {
	o        SoakOptions
	exe      string
	work     string
	demo     string
	catalog  string // the catalog data dir the nodes serve
	redis    *server
	nodes    []*soakNode
	bidders  []*soakBidder
	keys     *token.Keys
	keyText  string
	rdb      *redis.Client
	logf     func(string, ...any)
	measured time.Time // start of the measured phase

	// pids holds each process slot's current pid (name -> int), set
	// after every start: the sampler reads it while faults restart them.
	pids sync.Map

	rec       anomalyLog
	notices   noticeBook
	harvest   urlRing // recent click links of answered bids
	pendingWG sync.WaitGroup
	stopping  atomic.Bool
}

// RunSoak runs the fault-injection soak: a fleet of redis-server (AOF,
// appendfsync always), two catalog nodes and two bidders sharing them,
// under bids, notices, pixel events and clicks at fixed rates for
// Duration, while faults run on a schedule (SoakFaultKinds, each Rounds
// times). The report reconciles every accepted billing notice against the
// store, attributes every error and late answer to a fault window and
// checks every process's RSS (Report.Soak).
// The processes it started are stopped before it returns.
func RunSoak(ctx context.Context, o SoakOptions) (rep *Report, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	f := &soakFleet{o: o, logf: logTo(o.Log, "bench: soak: ")}
	var cleanups cleanupStack
	defer cleanups.run()
	if f.exe, err = executable(o.Exe); err != nil {
		return nil, err
	}
	work, cleanWork, err := makeWorkDir(o.WorkDir)
	if err != nil {
		return nil, err
	}
	cleanups.add(cleanWork)
	if f.work, err = filepath.Abs(work); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	sum := &SoakSummary{}
	sum.Environment = []string{"network cut: a stopped process (SIGSTOP, then SIGCONT)"}
	stop, err := f.start(ctx)
	cleanups.add(stop)
	if err != nil {
		return nil, err
	}

	meta := Meta{Title: "fault-injection soak: 2 bidders, 2 catalog nodes, redis-server (AOF, appendfsync always)", Config: map[string]string{
		"scenario":     "soak",
		"duration":     o.Duration.String(),
		"warmup":       o.Warmup.String(),
		"bid_rate":     fmtRate(o.Rate),
		"event_rate":   fmtRate(o.EventRate),
		"click_rate":   fmtRate(o.ClickRate),
		"win_ratio":    strconv.FormatFloat(o.WinRatio, 'g', -1, 64),
		"replay_ratio": strconv.FormatFloat(o.ReplayRatio, 'g', -1, 64),
		"notice_delay": fmt.Sprintf("%v-%v", o.NoticeDelay, 2*o.NoticeDelay),
		"tmax":         o.Tmax.String(),
		"timeout":      o.Timeout.String(),
		"rounds":       strconv.Itoa(o.Rounds),
		"faults":       strings.Join(o.Faults, ","),
		"fault_grace":  o.FaultGrace.String(),
		"outage":       o.Outage.String(),
		"catalog":      "remote: 2 catalog nodes (catalog.target static:///node1,node2)",
		"demo":         o.DemoSize.String(),
	}}
	rep = NewReport(meta)
	rep.Soak = sum

	// The sampler: RSS of every process, each second, from the start of
	// the warmup.
	sampler := newSoakSampler(f)
	samplerDone := make(chan struct{})
	samplerCtx, stopSampler := context.WithCancel(ctx)
	go func() { defer close(samplerDone); sampler.run(samplerCtx) }()
	pollCtx, stopPoll := context.WithCancel(ctx)
	var pollWG sync.WaitGroup
	for _, b := range f.bidders {
		pollWG.Go(func() { f.pollReady(pollCtx, b) })
	}

	f.measured = time.Now().Add(o.Warmup)
	sched := f.schedule()
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); f.runFaults(schedCtx, sched, sum) }()

	loads := f.loads()
	f.logf("load: bids %s req/s, pixel events %s req/s, clicks %s req/s, nurl+burl for %.0f%% of bids %v-%v later (%.0f%% of accepted bills replayed to the other bidder); %v after %v warmup; %d faults scheduled",
		fmtRate(o.Rate), fmtRate(o.EventRate), fmtRate(o.ClickRate), 100*o.WinRatio, o.NoticeDelay, 2*o.NoticeDelay, 100*o.ReplayRatio, o.Duration, o.Warmup, len(sched))
	rs, runErr := RunMixed(ctx, loads, MixedOptions{Duration: o.Duration, Warmup: o.Warmup})
	stopSched()
	<-schedDone
	f.stopping.Store(true)
	f.pendingWG.Wait() // notices scheduled and their retries
	stopPoll()
	pollWG.Wait()
	stopSampler()
	<-samplerDone

	var events []Event
	for _, fl := range sum.Faults {
		events = append(events, Event{AtSec: fl.StartSec, What: fl.Label})
	}
	for _, r := range rs {
		r.Events = events
		rep.Results = append(rep.Results, r)
	}
	sum.RSS = sampler.rss
	// An interrupted run still reconciles what it sent (bounded: 30 s).
	f.reconcile(context.WithoutCancel(ctx), sum)
	f.attribute(sum, rs)
	sum.judgeRSS(o.RSSWarmup, f.measured)
	sum.verdict(o, rs)
	if runErr != nil {
		return rep, runErr
	}
	return rep, nil
}

// start writes the demo and starts the fleet; the returned function stops
// everything (also after an error).
func (f *soakFleet) start(ctx context.Context) (func(), error) {
	o := f.o
	var stops cleanupStack
	stop := stops.run
	// redis-server first: the demo loads its users there.
	redisDir := filepath.Join(f.work, "redis")
	if err := os.MkdirAll(redisDir, 0o755); err != nil {
		return stop, fmt.Errorf("bench: %w", err)
	}
	f.redis = newRedisServerAOF(o.RedisServer, redisDir, f.work)
	f.logf("starting redis-server (appendonly yes, appendfsync always) in %s", redisDir)
	if err := f.redis.start(ctx, false); err != nil {
		return stop, err
	}
	f.pids.Store("redis-server", f.redis.PID())
	stops.add(func() { f.redis.stop(10 * time.Second) })
	f.rdb = redis.NewClient(&redis.Options{Addr: f.redis.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	stops.add(func() { f.rdb.Close() })

	f.demo = filepath.Join(f.work, "demo")
	args := append(o.DemoSize.genArgs(f.demo), "-redis", f.redis.Addr())
	f.logf("writing the demo, users into redis-server: %s %s", f.exe, strings.Join(args, " "))
	if err := runToEnd(ctx, "rtbd gen -demo", f.exe, args, logPath(f.work, "gen-demo"), 10*time.Minute); err != nil {
		return stop, err
	}

	f.catalog = filepath.Join(f.demo, "catalog")

	// Catalog nodes.
	for i := 1; i <= 2; i++ {
		n := &soakNode{name: fmt.Sprintf("node%d", i)}
		n.srv = newCatalogNode(n.name, f.exe, f.catalog, f.work, o.NodeArgs)
		f.logf("starting catalog %s", n.name)
		if err := n.srv.start(ctx, false); err != nil {
			return stop, err
		}
		f.pids.Store(n.name, n.srv.PID())
		stops.add(func() { n.srv.stop(15 * time.Second) })
		f.nodes = append(f.nodes, n)
	}
	target := "static:///" + f.nodes[0].srv.Addr() + "," + f.nodes[1].srv.Addr()

	// One token key for the fleet (and the harness, which reads the
	// nonce of every accepted bill).
	var key [24]byte
	_, _ = crand.Read(key[:])
	f.keyText = hex.EncodeToString(key[:])
	keys, err := token.NewKeys([]byte(f.keyText))
	if err != nil {
		return stop, fmt.Errorf("bench: %w", err)
	}
	f.keys = keys
	cfg := filepath.Join(f.demo, "rtbd.yaml")
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("bidder%d", i)
		dataDir := filepath.Join(f.work, name)
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return stop, fmt.Errorf("bench: %w", err)
		}
		extra := []string{"-catalog", target, "-redis", f.redis.Addr(),
			"-set", "bidder.data_dir=" + dataDir,
			"-set", "spend.instance_id=" + name,
			"-set", "bidder.click_links=absolute",
			"-set", "bidder.shutdown_delay=1s",
			"-set", "bidder.shutdown_timeout=5s",
		}
		srv := newBidder(name, f.exe, cfg, f.work, append(extra, o.BidderArgs...))
		srv.env = []string{"RTBD_BIDDER_TOKEN_KEYS=" + f.keyText}
		f.logf("starting %s with -catalog %s", name, target)
		if err := srv.start(ctx, false); err != nil {
			return stop, err
		}
		c := newHTTPClient(srv.Addr(), 512)
		f.pids.Store(name, srv.PID())
		b := &soakBidder{name: name, srv: srv, client: c, starts: 1}
		b.up.Store(true)
		stops.add(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.srv.stop(15 * time.Second)
		})
		f.bidders = append(f.bidders, b)
	}
	return stop, nil
}

// newRedisServerAOF describes redis-server on loopback with AOF and
// appendfsync always (every acknowledged write on disk), RDB off.
func newRedisServerAOF(exe, dir, logDir string) *server {
	s := newRedisServer(exe, dir, logDir)
	s.args = func(port, _ int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
			"--appendfsync", "always", "--dir", dir, "--daemonize", "no", "--loglevel", "warning"}
	}
	return s
}

// pick returns a bidder the balancer sends traffic to (nil: none is up).
func (f *soakFleet) pick(rng *rand.Rand, not *soakBidder) *soakBidder {
	var up [2]*soakBidder
	n := 0
	for _, b := range f.bidders {
		if b.up.Load() && b != not {
			up[n] = b
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return up[rng.IntN(n)]
}

// pollReady is the balancer's health check: every 200 ms, a bidder whose
// /readyz does not answer 200 within 300 ms gets no new traffic until it
// does.
func (f *soakFleet) pollReady(ctx context.Context, b *soakBidder) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		// A restart keeps the ports: admin never changes.
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := httpReady(pctx, b.srv)
		cancel()
		b.up.Store(err == nil)
	}
}

// reconcile checks every accepted billing notice against the store: its
// charge-once key must be there (else it is lost), and the store's
// impressions must equal the distinct notices charged (more is a double
// charge).
func (f *soakFleet) reconcile(ctx context.Context, sum *SoakSummary) {
	f.notices.mu.Lock()
	accepted := slices.Clone(f.notices.accepted)
	sum.Notices.BillOutcomes = f.notices.outcomes
	sum.Notices.ReplayOutcomes = f.notices.replays
	sum.Notices.Retries = f.notices.retries
	sum.Notices.GaveUp = f.notices.gaveUp
	sum.Notices.ReplaysSent = f.notices.replaysSent
	sum.Notices.ReplaysGaveUp = f.notices.replaysGaveUp
	lats := slices.Clone(f.notices.lats)
	f.notices.mu.Unlock()
	slices.Sort(lats)
	if n := len(lats); n > 0 {
		sum.Notices.LatencyP50Ms = lats[n/2].Seconds() * 1000
		sum.Notices.LatencyP99Ms = lats[n*99/100].Seconds() * 1000
		sum.Notices.LatencyMaxMs = lats[n-1].Seconds() * 1000
	}
	sum.Notices.Accepted = int64(len(accepted))

	keys := map[string]string{} // notice key -> campaign
	campaigns := map[string]bool{}
	var tok token.Token
	var buf []byte
	for _, p := range accepted {
		i := strings.Index(p, "t=")
		if i < 0 {
			sum.Notices.Unparsed++
			continue
		}
		t := p[i+2:]
		if j := strings.IndexByte(t, '&'); j >= 0 {
			t = t[:j]
		}
		var err error
		buf, err = f.keys.Parse(&tok, []byte(t), token.KindBill, time.Now(), buf)
		if err != nil {
			sum.Notices.Unparsed++
			continue
		}
		n := spend.Notice{Nonce: tok.NoticeNonce(), Kind: spend.NoticeCharge}
		k := "rtbd:n:{" + tok.Campaign + "}:" + spend.NoticeKey(&n)
		if _, dup := keys[k]; dup {
			sum.Notices.SameImpression++
		}
		keys[k] = strings.Clone(tok.Campaign)
		campaigns[keys[k]] = true
	}
	sum.Notices.Distinct = int64(len(keys))

	// The bidders flush within spend.flush_interval (journaled notices of
	// a restarted one when it replays): wait up to 30 s for every key.
	missing := func() []string {
		var out []string
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		for i := 0; i < len(names); i += 500 {
			batch := names[i:min(i+500, len(names))]
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			pipe := f.rdb.Pipeline()
			cmds := make([]*redis.IntCmd, len(batch))
			for j, k := range batch {
				cmds[j] = pipe.Exists(cctx, k)
			}
			_, err := pipe.Exec(cctx)
			cancel()
			for j, c := range cmds {
				if err != nil || c.Val() == 0 {
					out = append(out, batch[j])
				}
			}
		}
		return out
	}
	var lost []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		lost = missing()
		if len(lost) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	sum.Notices.Lost = int64(len(lost))
	for _, k := range lost[:min(len(lost), 20)] {
		sum.Notices.LostKeys = append(sum.Notices.LostKeys, k)
	}

	// The store's impressions and micros over every campaign billed.
	st := redisstore.New(f.rdb, redisstore.Options{})
	names := make([]string, 0, len(campaigns))
	for c := range campaigns {
		names = append(names, c)
	}
	slices.Sort(names)
	if len(names) > 0 {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		tots, err := st.Read(cctx, names, time.Now().UTC().Format(time.DateOnly))
		cancel()
		if err != nil {
			sum.Notices.StoreError = err.Error()
		}
		for _, t := range tots {
			sum.Notices.StoreImps += t.TotalImps
			sum.Notices.StoreMicros += t.TotalMicros
		}
	}
	// Every notice key in the store (the harness's accepted ones, and any
	// charged whose answer was lost in transit and then retried: the same
	// key) is one impression.
	var storeKeys int64
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	iter := f.rdb.Scan(cctx, 0, "rtbd:n:*", 1000).Iterator()
	for iter.Next(cctx) {
		storeKeys++
	}
	if err := iter.Err(); err != nil && sum.Notices.StoreError == "" {
		sum.Notices.StoreError = err.Error()
	}
	cancel()
	sum.Notices.StoreKeys = storeKeys
	sum.Notices.account()
	f.logf("reconciled: %d bills accepted (%d distinct), %d lost, %d double-charged; store %d impressions, %d notice keys, %d micros",
		sum.Notices.Accepted, sum.Notices.Distinct, sum.Notices.Lost, sum.Notices.DoubleCharged, sum.Notices.StoreImps, storeKeys, sum.Notices.StoreMicros)
}

// soakSampler reads every process's RSS once a second.
type soakSampler struct {
	f   *soakFleet
	rss []SoakRSS
}

func newSoakSampler(f *soakFleet) *soakSampler {
	s := &soakSampler{f: f}
	s.rss = append(s.rss, SoakRSS{Name: "redis-server"})
	for _, n := range f.nodes {
		s.rss = append(s.rss, SoakRSS{Name: n.name})
	}
	for _, b := range f.bidders {
		s.rss = append(s.rss, SoakRSS{Name: b.name})
	}
	return s
}

func (s *soakSampler) pids() []int {
	out := make([]int, len(s.rss))
	for i, r := range s.rss {
		if v, ok := s.f.pids.Load(r.Name); ok {
			out[i] = v.(int)
		}
	}
	return out
}

func (s *soakSampler) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		at := time.Since(s.f.measured).Seconds()
		for i, pid := range s.pids() {
			if pid == 0 {
				continue
			}
			st, err := proc.ReadStatus(pid)
			if err != nil {
				continue
			}
			s.rss[i].Samples = append(s.rss[i].Samples, SoakRSSSample{AtSec: at, RSSBytes: st.VmRSSBytes, PID: pid})
		}
	}
}

// pid is the server's current process id, 0 when it is not running.
func (s *server) pid() int {
	if s.child == nil || s.Exited() {
		return 0
	}
	return s.PID()
}

// attribute puts every error and late answer of the measured phase in the
// fault window it fell in, else "unattributed".
func (f *soakFleet) attribute(sum *SoakSummary, rs []*Result) {
	f.rec.mu.Lock()
	all := slices.Clone(f.rec.all)
	f.rec.mu.Unlock()
	grace := f.o.FaultGrace.Seconds()
	counts := map[[3]string]int64{}
	for _, a := range all {
		if a.AtSec < 0 || a.AtSec > f.o.Duration.Seconds()+f.o.Timeout.Seconds() {
			continue // warmup, or notices after the load ended
		}
		cause := ""
		for _, fl := range sum.Faults {
			if a.AtSec >= fl.StartSec-0.2 && a.AtSec <= fl.EndSec+grace {
				cause = fl.Label
				break
			}
		}
		if cause == "" {
			cause = "unattributed"
			if len(sum.Unattributed) < 50 {
				sum.Unattributed = append(sum.Unattributed, a)
			}
		}
		counts[[3]string{a.Kind, a.Outcome, cause}]++
	}
	for k, n := range counts {
		sum.Anomalies = append(sum.Anomalies, SoakAnomalyCount{Kind: k[0], Outcome: k[1], Cause: k[2], Count: n})
	}
	slices.SortFunc(sum.Anomalies, func(a, b SoakAnomalyCount) int {
		return cmpStrings(a.Kind+"\x00"+a.Outcome+"\x00"+a.Cause, b.Kind+"\x00"+b.Outcome+"\x00"+b.Cause)
	})
	if len(rs) > 0 {
		sum.BidRequests = rs[0].Requests
		sum.BidsLate = rs[0].DeadlineMisses
	}
}

func cmpStrings(a, b string) int { return strings.Compare(a, b) }

// signalOf sends sig to the server's current process.
func signalOf(s *server, sig syscall.Signal) error {
	if s.child == nil || s.Exited() {
		return fmt.Errorf("%s: not running", s.name)
	}
	return s.Signal(sig)
}
