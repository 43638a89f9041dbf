package bench

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/token"
)

// SoakOptions configure RunSoak; zero values take the defaults of
// withDefaults, but a zero Warmup is none. The flags of `rtbd bench soak`
// (FLAGS.md) set them.
type SoakOptions struct {
	Duration, Warmup           time.Duration // the measured phase (the faults run in it); the load before it, not counted
	Rate, EventRate, ClickRate float64       // req/s of bids, pixel events and clicks on answered bids' product links
	WinRatio                   float64       // share of bids whose nurl, then burl, is sent NoticeDelay to 2 x NoticeDelay later
	NoticeDelay                time.Duration
	ReplayRatio                float64       // share of accepted bills sent again to the other bidder (an exchange's retry)
	Tmax, Timeout              time.Duration // the bid deadline (answers past it are late); the hard per-request deadline
	Rounds                     int           // times each fault runs, spread evenly over Duration
	Faults                     []string      // the fault kinds run (SoakFaultKinds); empty: all
	FaultGrace                 time.Duration // errors and late answers this long after a fault's recovery are still its
	Outage                     time.Duration // how long a killed catalog node or redis-server stays down
	RSSWarmup                  time.Duration // a process's RSS is not judged this long after it starts
	DemoSize
	Exe, RedisServer     string    // the rtbd binary ("": this executable) and redis-server's
	BidderArgs, NodeArgs []string  // extra flags of the bidders and catalog nodes
	WorkDir              string    // the children's logs and data ("": a temporary directory)
	Seed                 uint64    // of the request streams
	Log                  io.Writer // progress lines (nil: none)
}

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
	p.check(o.Duration >= 10*time.Second, "duration: must be >= 10s, got %v", o.Duration)
	p.check(o.Warmup >= 0, "warmup: must be >= 0")
	p.check(o.Rate > 0 && o.EventRate >= 0 && o.ClickRate >= 0, "rate, event-rate, click-rate: want rate > 0 and the others >= 0")
	p.check(o.WinRatio >= 0 && o.WinRatio <= 1 && o.ReplayRatio >= 0 && o.ReplayRatio <= 1, "win-ratio, replay-ratio: must be 0..1")
	p.check(o.Rounds >= 1, "rounds: must be >= 1, got %d", o.Rounds)
	for _, f := range o.Faults {
		p.check(slices.Contains(SoakFaultKinds, f), "faults: unknown %q (want %s)", f, strings.Join(SoakFaultKinds, ","))
	}
	o.DemoSize.validate(&p)
	return p.err()
}

// soakProc is one process slot of the fleet (redis-server, a catalog node,
// a bidder), restarted on the same ports and data by a fault. curPID is
// its current process, read by the RSS sampler while a fault restarts it.
type soakProc struct {
	*server
	curPID atomic.Int64
	up     atomic.Bool          // a bidder's /readyz answers: the balancer sends it traffic
	client *fasthttp.HostClient // a bidder's
}

// launch starts the slot's process (on its former ports when keepPorts).
func (p *soakProc) launch(ctx context.Context, keepPorts bool) error {
	if err := p.start(ctx, keepPorts); err != nil {
		return err
	}
	p.curPID.Store(int64(p.PID()))
	return nil
}

// soakFleet is what RunSoak started, and what its load and faults saw.
type soakFleet struct {
	o        SoakOptions
	redis    *soakProc
	nodes    []*soakProc
	bidders  []*soakProc
	keys     *token.Keys // the fleet's token key: the harness reads every accepted bill's nonce
	rdb      *redis.Client
	logf     func(string, ...any)
	measured time.Time    // start of the measured phase
	sum      *SoakSummary // the report's soak section

	mu         sync.Mutex    // guards sum.Notices and the fields below while the load and its notices run
	anomalies  []SoakAnomaly // every error and late answer
	accepted   []string      // burl paths answered 204 accepted or replay
	noticeLats dist          // µs of the notice attempts a bidder answered

	harvest   urlRing        // recent click links of answered bids
	pendingWG sync.WaitGroup // notices scheduled (harvestBid runs only during the load: no Add after the Wait)
	stopping  atomic.Bool    // the load has ended: no more replays
}

// RunSoak runs the fault-injection soak (bench/README.md): the fleet under
// load while the faults run; Report.Soak holds what it found. The
// processes it started are stopped before it returns.
func RunSoak(ctx context.Context, o SoakOptions) (rep *Report, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	f := &soakFleet{o: o, logf: logTo(o.Log, "bench: soak: "), noticeLats: newDist(histDigits),
		sum: &SoakSummary{Notices: SoakNotices{BillOutcomes: map[string]int64{}, ReplayOutcomes: map[string]int64{}}}}
	var cleanups cleanupStack
	defer cleanups.run()
	exe, err := executable(o.Exe)
	if err != nil {
		return nil, err
	}
	work, err := makeWorkDir(o.WorkDir, &cleanups)
	if err != nil {
		return nil, err
	}
	if work, err = filepath.Abs(work); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := f.start(ctx, exe, work, &cleanups); err != nil {
		return nil, err
	}

	rep = NewReport(Meta{Title: "fault-injection soak: 2 bidders, 2 catalog nodes, redis-server (AOF, appendfsync always)", Config: map[string]string{
		"scenario": "soak", "duration": o.Duration.String(), "warmup": o.Warmup.String(),
		"bid_rate": fmtRate(o.Rate), "event_rate": fmtRate(o.EventRate), "click_rate": fmtRate(o.ClickRate),
		"win_ratio": fmt.Sprint(o.WinRatio), "replay_ratio": fmt.Sprint(o.ReplayRatio),
		"notice_delay": fmt.Sprintf("%v-%v", o.NoticeDelay, 2*o.NoticeDelay), "tmax": o.Tmax.String(), "timeout": o.Timeout.String(),
		"rounds": strconv.Itoa(o.Rounds), "faults": strings.Join(o.Faults, ","), "fault_grace": o.FaultGrace.String(), "outage": o.Outage.String(),
		"catalog": "remote: 2 catalog nodes (catalog.target static:///node1,node2)", "demo": o.DemoSize.String(),
	}})
	rep.Soak = f.sum

	// From the start of the warmup to the last notice: the RSS sampler and
	// the balancer's health checks; in the measured phase, the faults.
	f.measured = time.Now().Add(o.Warmup)
	bgCtx, stopBg := context.WithCancel(ctx)
	var bg, faults sync.WaitGroup
	bg.Go(func() { f.sum.RSS = f.sampleRSS(bgCtx) })
	for _, b := range f.bidders {
		bg.Go(func() { f.pollReady(bgCtx, b) })
	}
	sched := f.schedule()
	faultCtx, stopFaults := context.WithCancel(ctx)
	faults.Go(func() { f.runFaults(faultCtx, sched) })

	f.logf("load: bids %s req/s, pixel events %s req/s, clicks %s req/s, nurl+burl for %.0f%% of bids %v-%v later (%.0f%% of accepted bills replayed to the other bidder); %v after %v warmup; %d faults scheduled",
		fmtRate(o.Rate), fmtRate(o.EventRate), fmtRate(o.ClickRate), 100*o.WinRatio, o.NoticeDelay, 2*o.NoticeDelay, 100*o.ReplayRatio, o.Duration, o.Warmup, len(sched))
	rs, runErr := RunMixed(ctx, f.loads(), MixedOptions{Duration: o.Duration, Warmup: o.Warmup})
	stopFaults()
	faults.Wait()
	f.stopping.Store(true)
	f.pendingWG.Wait() // notices scheduled and their retries
	stopBg()
	bg.Wait()

	for _, r := range rs {
		r.Events = f.sum.events()
	}
	if len(rs) > 0 { // the bid load's
		f.sum.BidRequests, f.sum.BidsLate = rs[0].Requests, rs[0].DeadlineMisses
	}
	rep.Results = rs
	// An interrupted run still reconciles what it sent (bounded: 30 s).
	f.reconcile(context.WithoutCancel(ctx))
	f.attribute()
	f.sum.judgeRSS(o.RSSWarmup)
	f.sum.verdict(o)
	return rep, runErr
}

// start writes the demo and starts the fleet, adding its stops to stops
// (also after an error).
func (f *soakFleet) start(ctx context.Context, exe, work string, stops *cleanupStack) error {
	o := f.o
	// redis-server first: the demo loads its users there.
	redisDir := filepath.Join(work, "redis")
	if err := os.MkdirAll(redisDir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	srv := newRedisServer(o.RedisServer, redisDir, work)
	plain := srv.args
	srv.args = func(port, admin int) []string { // every acknowledged write on disk: the last --appendonly wins
		return append(plain(port, admin), "--appendonly", "yes", "--appendfsync", "always")
	}
	f.redis = &soakProc{server: srv}
	f.logf("starting redis-server (appendonly yes, appendfsync always) in %s", redisDir)
	if err := f.redis.launch(ctx, false); err != nil {
		return err
	}
	stops.add(func() { f.redis.stop(10 * time.Second) })
	f.rdb = redis.NewClient(&redis.Options{Addr: f.redis.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	stops.add(func() { f.rdb.Close() })

	demo := filepath.Join(work, "demo")
	args := append(o.DemoSize.genArgs(demo), "-redis", f.redis.Addr())
	f.logf("writing the demo, users into redis-server: %s %s", exe, strings.Join(args, " "))
	if err := genDemo(ctx, exe, args, work, 10*time.Minute); err != nil {
		return err
	}

	var addrs []string
	for i := 1; i <= 2; i++ {
		n := &soakProc{server: newCatalogNode(fmt.Sprintf("node%d", i), exe, filepath.Join(demo, "catalog"), work, o.NodeArgs)}
		f.logf("starting catalog %s", n.name)
		if err := n.launch(ctx, false); err != nil {
			return err
		}
		stops.add(func() { n.stop(15 * time.Second) })
		f.nodes = append(f.nodes, n)
		addrs = append(addrs, n.Addr())
	}
	target := "static:///" + strings.Join(addrs, ",")

	keyText := crand.Text()
	var err error
	if f.keys, err = token.NewKeys([]byte(keyText)); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("bidder%d", i)
		extra := []string{"-catalog", target, "-redis", f.redis.Addr(), "-set", "bidder.data_dir=" + filepath.Join(work, name),
			"-set", "spend.instance_id=" + name, "-set", "bidder.click_links=absolute",
			"-set", "bidder.shutdown_delay=1s", "-set", "bidder.shutdown_timeout=5s"}
		b := &soakProc{server: newBidder(name, exe, filepath.Join(demo, "rtbd.yaml"), work, append(extra, o.BidderArgs...))}
		b.env = []string{"RTBD_BIDDER_TOKEN_KEYS=" + keyText}
		f.logf("starting %s with -catalog %s", name, target)
		if err := b.launch(ctx, false); err != nil {
			return err
		}
		stops.add(func() { b.stop(15 * time.Second) })
		b.client = newHTTPClient(b.Addr(), 512)
		b.up.Store(true)
		f.bidders = append(f.bidders, b)
	}
	return nil
}

// pick returns a bidder the balancer sends traffic to, other than not
// (nil: none is up).
func (f *soakFleet) pick(rng *rand.Rand, not *soakProc) *soakProc {
	up := slices.DeleteFunc(slices.Clone(f.bidders), func(b *soakProc) bool { return !b.up.Load() || b == not })
	if len(up) == 0 {
		return nil
	}
	return up[rng.IntN(len(up))]
}

// pollReady is the balancer's health check: every 200 ms, a bidder whose
// /readyz does not answer 200 within 300 ms gets no new traffic until it
// does. A restart keeps the admin port.
func (f *soakFleet) pollReady(ctx context.Context, b *soakProc) {
	for sleepCtx(ctx, 200*time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		b.up.Store(httpReady(pctx, b.server) == nil)
		cancel()
	}
}

// sampleRSS reads every process's RSS once a second until ctx ends, one
// SoakRSS per process incarnation, grouped by slot.
func (f *soakFleet) sampleRSS(ctx context.Context) []SoakRSS {
	var out []SoakRSS
	for sleepCtx(ctx, time.Second) {
		at := time.Since(f.measured).Seconds()
		for _, p := range slices.Concat([]*soakProc{f.redis}, f.nodes, f.bidders) {
			pid := int(p.curPID.Load())
			if st, err := readStatus(pid); err == nil {
				out = addRSS(out, p.name, pid, SoakRSSSample{AtSec: at, RSSBytes: st.VmRSSBytes})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b SoakRSS) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// reconcile checks every accepted billing notice against the store: its
// charge-once key must be there (else it is lost), and the store's
// impressions must equal the distinct notices charged (more is a double
// charge).
func (f *soakFleet) reconcile(ctx context.Context) {
	n := &f.sum.Notices
	n.LatencyP50Ms, n.LatencyP99Ms, n.LatencyMaxMs = usToMs(f.noticeLats.at(50)), usToMs(f.noticeLats.at(99)), usToMs(f.noticeLats.maxUs)
	n.Accepted = int64(len(f.accepted))

	keys := map[string]string{} // charge-once key -> campaign
	var tok token.Token
	var buf []byte
	for _, p := range f.accepted {
		u, err := url.Parse(p)
		if err == nil {
			buf, err = f.keys.Parse(&tok, []byte(u.Query().Get("t")), token.KindBill, time.Now(), buf)
		}
		if err != nil {
			n.Unparsed++
			continue
		}
		nt := spend.Notice{Nonce: tok.NoticeNonce(), Kind: spend.NoticeCharge}
		keys["rtbd:n:{"+tok.Campaign+"}:"+spend.NoticeKey(&nt)] = strings.Clone(tok.Campaign)
	}
	n.Distinct = int64(len(keys))
	n.SameImpression = n.Accepted - n.Unparsed - n.Distinct

	// The bidders flush within spend.flush_interval (journaled notices of
	// a restarted one when it replays): wait up to 30 s for every key.
	lost := slices.Collect(maps.Keys(keys))
	deadline := time.Now().Add(30 * time.Second)
	for lost = f.missing(ctx, lost); len(lost) > 0 && time.Now().Before(deadline); lost = f.missing(ctx, lost) {
		time.Sleep(500 * time.Millisecond)
	}
	n.Lost = int64(len(lost))
	n.LostKeys = lost[:min(len(lost), 20)]

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if campaigns := slices.Compact(slices.Sorted(maps.Values(keys))); len(campaigns) > 0 {
		tots, err := redisstore.New(f.rdb, redisstore.Options{}).Read(ctx, campaigns, time.Now().UTC().Format(time.DateOnly))
		if err != nil {
			n.StoreError = err.Error()
		}
		for _, t := range tots {
			n.StoreImps += t.TotalImps
			n.StoreMicros += t.TotalMicros
		}
	}
	// Every notice key in the store (the harness's accepted ones, and any
	// charged whose answer was lost in transit and then retried: the same
	// key) is one impression.
	iter := f.rdb.Scan(ctx, 0, "rtbd:n:*", 1000).Iterator()
	for iter.Next(ctx) {
		n.StoreKeys++
	}
	if err := iter.Err(); err != nil && n.StoreError == "" {
		n.StoreError = err.Error()
	}
	n.account()
	f.logf("reconciled: %d bills accepted (%d distinct), %d lost, %d double-charged; store %d impressions, %d notice keys, %d micros",
		n.Accepted, n.Distinct, n.Lost, n.DoubleCharged, n.StoreImps, n.StoreKeys, n.StoreMicros)
}

// missing returns those of keys not in the store (all of them when the
// store does not answer).
func (f *soakFleet) missing(ctx context.Context, keys []string) []string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	vals, err := f.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return keys
	}
	var out []string
	for i, v := range vals {
		if v == nil {
			out = append(out, keys[i])
		}
	}
	return out
}
