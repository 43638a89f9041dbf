package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rtbd/rtbd/catalog/workload"
)

// Bidder topologies.
const (
	TopologyLocal    = "local"    // a bidder with the embedded index
	TopologyRemote   = "remote"   // a bidder with -catalog pointing to catalog nodes
	TopologyExternal = "external" // a running bidder (-http URL)
)

// BidderOptions configure RunBidder. Zero values take the defaults noted.
type BidderOptions struct {
	DemoDir      string    // -demo: used if it holds rtbd.yaml, else written there (`rtbd gen -demo`) and kept; "": a temporary one
	DemoSize               // the demo written, or the size of the one in DemoDir
	Nodes        int       // catalog nodes of the remote topology; default 2
	Weights      []int     // products per bid (bidShapes), one set of runs each; default TalkWeights
	Topologies   []string  // to measure, in order; default local, remote (external with HTTPURL)
	Load         LoadModel // of the bid requests; Tmax defaults to 100 ms
	WinRatio     float64   // win notices (replayed nurls) per bid; default 0.2, negative: none
	EventRate    float64   // pixel events (/event), req/s; default Load.Rate / 10, negative: none
	HTTPURL      string    // a running bidder's base URL (http://host:port), measured instead of started ones
	GRPCTarget   string    // the remote bidder's -catalog: running nodes instead of started ones
	Exe          string    // the rtbd binary; "": this process's executable
	BidderArgs   []string  // extra flags of the started bidders ("-set", "bidder.max_in_flight=256")
	NodeArgs     []string  // extra flags of the started catalog nodes
	Overload     bool      // adds the overload runs (runOverload) after every topology's runs
	Popularities []string  // the users of the bid requests, one set of runs each: demo (default), zipf, uniform (popularityUsers)
	WorkDir      string    // keeps the children's logs; "": a temporary directory
	Log          io.Writer // receives progress lines; nil: none
}

// bidderDefaults are BidderOptions' defaults, which the flags share.
var bidderDefaults = BidderOptions{Nodes: 2, WinRatio: 0.2}

func (o BidderOptions) withDefaults() BidderOptions {
	o.DemoSize = o.DemoSize.withDefaults()
	o.Nodes = cmp.Or(o.Nodes, bidderDefaults.Nodes)
	if len(o.Weights) == 0 {
		o.Weights = TalkWeights
	}
	if len(o.Popularities) == 0 {
		o.Popularities = []string{PopularityDemo}
	}
	if len(o.Topologies) == 0 {
		o.Topologies = []string{TopologyLocal, TopologyRemote}
		if o.HTTPURL != "" {
			o.Topologies = []string{TopologyExternal}
		}
	}
	o.Load.Tmax = cmp.Or(o.Load.Tmax, 100*time.Millisecond)
	o.Load = o.Load.withDefaults()
	o.WinRatio = cmp.Or(o.WinRatio, bidderDefaults.WinRatio)
	o.EventRate = cmp.Or(o.EventRate, o.Load.Rate/10)
	o.Log = cmp.Or(o.Log, io.Discard)
	return o
}

// Validate reports every problem of o (after defaults).
func (o BidderOptions) Validate() error {
	o = o.withDefaults()
	var p problems
	o.DemoSize.validate(&p)
	p.check(o.Nodes >= 1 && o.Nodes <= 64, "nodes: must be 1..64, got %d", o.Nodes)
	for _, w := range o.Weights {
		p.check(bidShapes[w] != "", "weights: the demo's campaign templates give 3, 15 or 30 products, got %d", w)
	}
	for _, t := range o.Topologies {
		switch t {
		case TopologyLocal, TopologyRemote:
			p.check(o.HTTPURL == "", "topologies: %s cannot be combined with -http (a running bidder)", t)
		case TopologyExternal:
			p.check(o.HTTPURL != "", "topologies: external needs -http URL")
		default:
			p.addf("topologies: unknown %q (want local, remote)", t)
		}
	}
	if o.HTTPURL != "" {
		u, err := url.Parse(o.HTTPURL)
		p.check(err == nil && u.Scheme == "http" && u.Host != "", "http: want http://host:port, got %q", o.HTTPURL)
	}
	p.check(o.Load.Concurrency == 0, "concurrency: the bidder scenario's mixed loads are open loop; use -rate")
	p.check(!o.Load.FindMax, "find-max: the bidder scenario searches the highest rate with -overload (then offers twice it)")
	for _, pop := range o.Popularities {
		_, written := popularityUsers[pop]
		p.check(pop == PopularityDemo || written, "popularity: unknown %q (want demo, zipf, uniform)", pop)
		p.check(!written || o.HTTPURL == "", "popularity: %s writes users into a bidder the harness starts, not into -http", pop)
	}
	p.merge(o.Load.Validate())
	return p.err()
}

// topo is one started (or external) deployment.
type topo struct {
	name   string
	addr   string // bidder host:port
	bidder *server
	watch  Watch
}

// nearStats reads the started bidder's near cache lookups (none for external).
func (t *topo) nearStats() NearStats {
	if t.bidder == nil {
		return NearStats{}
	}
	return readNearStats("http://" + loopback(t.bidder.admin) + "/metrics")
}

// RunBidder runs the bidder scenario: for each topology, one at a time,
// each popularity and each weight, a mixed open-loop run of bid requests
// at Load.Rate, win notices at WinRatio of it and pixel events at
// EventRate. Everything it starts runs from one demo directory on
// 127.0.0.1 and is stopped before it returns. The report's table compares
// each row with the first topology's of its weight. With Overload, every
// topology stays up after its runs for the overload runs, which come last.
func RunBidder(ctx context.Context, o BidderOptions) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	logf := logTo(o.Log, "bench: ")
	var cleanups cleanupStack
	defer cleanups.run()
	workDir, err := makeWorkDir(o.WorkDir, &cleanups)
	if err != nil {
		return nil, err
	}
	var exe, demoDir string
	if o.HTTPURL == "" {
		if exe, err = executable(o.Exe); err != nil {
			return nil, err
		}
		if demoDir, err = o.DemoSize.prepare(ctx, o.DemoDir, exe, workDir, logf); err != nil {
			return nil, err
		}
		var sets []benchUsers
		for _, pop := range o.Popularities {
			if u, ok := popularityUsers[pop]; ok {
				sets = append(sets, u)
			}
		}
		w := workload.Catalog{Products: o.Products, Groups: o.Groups, IDs: slices.Max(o.Weights)}
		if err := writeBenchUsers(ctx, demoDir, w, o.Users, sets, logf); err != nil {
			return nil, err
		}
	}

	meta := Meta{Title: "bidder level: " + strings.Join(o.Topologies, " vs "), Config: o.Load.describe()}
	maps.Copy(meta.Config, map[string]string{"scenario": "bidder", "weights": joinInts(o.Weights), "demo": o.DemoSize.String(),
		"nodes": strconv.Itoa(o.Nodes), "popularity": strings.Join(o.Popularities, ","),
		"win_ratio": strconv.FormatFloat(o.WinRatio, 'g', -1, 64), "event_rate": fmtRate(max(o.EventRate, 0))})
	for _, w := range o.Weights {
		meta.Notes = append(meta.Notes, fmt.Sprintf("weight %d: %s", w, bidShapes[w]))
	}
	meta.Notes = append(meta.Notes, "bid requests: a random demo user (demo-user-1..N), one of 3 sites and 4 devices (desktop/mobile, USA/JPN/GBR/DEU), tmax 100 ms; win notices replay the nurls of answered bids; pixel events GET /event for Zipf-popular products",
		"each topology is warmed before its runs: one bid request per user, weight and popularity (closed loop, not measured)")
	rep := NewReport(meta)
	eventURI := o.DemoSize.eventURI(o.Load.Seed)

	var entries, otherEntries []TableEntry
	var topos []*topo // kept up for the overload runs
	near := map[string]NearStats{}
	for _, name := range o.Topologies {
		stops := &cleanupStack{}
		cleanups.add(stops.run)
		t, err := startTopology(ctx, name, o, exe, demoDir, workDir, stops, logf)
		if err != nil {
			return rep, err
		}
		if err := warmTopology(ctx, o, t, logf); err != nil {
			return rep, err
		}
		for _, pop := range o.Popularities {
			for _, w := range o.Weights {
				rs, err := runBidderMixed(ctx, o, t, w, pop, eventURI, near, logf)
				for i, r := range rs {
					rep.Results = append(rep.Results, r)
					e := TableEntry{Result: r, Group: fmt.Sprintf("%d products", w)}
					if name != o.Topologies[0] { // remote/15 win -> local/15 win
						e.Baseline = o.Topologies[0] + strings.TrimPrefix(r.Target, name)
					}
					if i == 0 {
						entries = append(entries, e)
					} else {
						otherEntries = append(otherEntries, e)
					}
				}
				if err != nil {
					return rep, err
				}
			}
		}
		if o.Overload {
			topos = append(topos, t)
		} else {
			stops.run()
			*stops = nil
		}
	}
	for _, pop := range o.Popularities {
		if err := runOverload(ctx, o, topos, pop, rep, &otherEntries, near, logf); err != nil {
			return rep, err
		}
	}
	rep.Notes = append(rep.Notes, remoteLocalLines(o.Topologies, rep.Results, near)...)
	title := "Bidder level: bid requests, " + strings.Join(o.Topologies, " vs ")
	if len(o.Topologies) > 1 {
		title += fmt.Sprintf(" (ratios %s/%s)", o.Topologies[1], o.Topologies[0])
	}
	rep.Tables = append(rep.Tables, BuildTable(title, entries))
	if len(otherEntries) > 0 {
		title := "Bidder level: the other loads of the same runs (win notices, pixel events)"
		if o.Overload {
			title += " and the overload runs"
		}
		rep.Tables = append(rep.Tables, BuildTable(title, otherEntries))
	}
	return rep, nil
}

// startTopology starts a topology's processes, their stops in stops.
func startTopology(ctx context.Context, name string, o BidderOptions, exe, demoDir, workDir string, stops *cleanupStack, logf func(string, ...any)) (*topo, error) {
	t := &topo{name: name}
	if name == TopologyExternal {
		u, _ := url.Parse(o.HTTPURL)
		t.addr = u.Host
		return t, nil
	}
	var args []string
	if name == TopologyRemote {
		target := o.GRPCTarget
		if target == "" {
			var addrs []string
			for i := 1; i <= o.Nodes; i++ {
				n := newCatalogNode(fmt.Sprintf("catalog-node-%d", i), exe, filepath.Join(demoDir, "catalog"), workDir, o.NodeArgs)
				if err := n.launch(ctx, stops, logf); err != nil {
					return nil, err
				}
				t.watch.Processes = append(t.watch.Processes, n.watch().Processes...)
				addrs = append(addrs, n.Addr())
			}
			target = "static:///" + strings.Join(addrs, ",")
		}
		args = []string{"-catalog", target}
	}
	data, err := ownBidderData(demoDir, workDir, "bidder-"+name)
	if err != nil {
		return nil, err
	}
	t.bidder = newBidder("bidder-"+name, exe, filepath.Join(demoDir, "rtbd.yaml"), workDir, slices.Concat(data, args, o.BidderArgs))
	if err := t.bidder.launch(ctx, stops, logf); err != nil {
		return nil, err
	}
	t.addr = t.bidder.Addr()
	t.watch.Processes = append(t.bidder.watch().Processes, t.watch.Processes...)
	return t, nil
}

// ownBidderData copies the demo's bidder data (users, spend) for the
// bidder name and returns the flags pointing it there: every topology
// starts from the same state, and two can be up at once.
func ownBidderData(demoDir, workDir, name string) ([]string, error) {
	dst := filepath.Join(workDir, name+"-data")
	if err := os.RemoveAll(dst); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(demoDir, "bidder"))); err != nil {
		return nil, fmt.Errorf("bench: copying the demo's bidder data for %s: %w", name, err)
	}
	return []string{"-set", "bidder.data_dir=" + dst}, nil
}

func bidTarget(name, addr string, wl bidWorkload, ring *nurlRing, maxConns int) *httpTarget {
	return newHTTPTarget(name, addr, "POST", maxConns,
		func(_ *Worker, dst []byte) []byte { return append(dst, "/openrtb2/bid"...) },
		wl.body,
		func(status int, body []byte) Outcome {
			if status == 200 && ring != nil {
				ring.harvest(body)
			}
			return ClassifyHTTPStatus(status, body)
		})
}

// warmTopology sends one bid request per user, weight and popularity,
// closed loop: every topology starts its runs with what a bidder serving
// these users for a while holds in its caches.
func warmTopology(ctx context.Context, o BidderOptions, t *topo, logf func(string, ...any)) error {
	start := time.Now()
	var n int64
	for _, pop := range o.Popularities {
		for _, w := range o.Weights {
			wl := newBidWorkload(o.Users, w, pop)
			wl.each = new(atomic.Uint64)
			name := fmt.Sprintf("%s/%d%s warming", t.name, w, popSuffix(pop))
			r, err := Run(ctx, bidTarget(name, t.addr, wl, nil, 16), Options{
				Concurrency: 16, Requests: int64(o.Users), Duration: time.Hour, Timeout: o.Load.Timeout, Seed: o.Load.Seed})
			if err != nil {
				return fmt.Errorf("bench: %s: %w", name, err)
			}
			if r.Errors.Total > 0 {
				return fmt.Errorf("bench: %s: %d of %d requests failed (%+v)", name, r.Errors.Total, r.Requests, r.Errors)
			}
			n += r.Requests
		}
	}
	logf("warmed %s: %d bid requests (every user once per weight and popularity) in %v", t.name, n, time.Since(start).Round(time.Millisecond))
	return nil
}

// runBidderMixed runs bids, win notices and pixel events together against
// one topology at one weight; the near cache's lookups over the run go
// into near under the bids' target.
func runBidderMixed(ctx context.Context, o BidderOptions, t *topo, weight int, pop string, eventURI func(*Worker, []byte) []byte,
	near map[string]NearStats, logf func(string, ...any)) ([]*Result, error) {
	base := fmt.Sprintf("%s/%d%s", t.name, weight, popSuffix(pop))
	maxConns := max(o.Load.MaxInFlight, 64)
	ring := &nurlRing{}
	opts := func(rate float64, seed uint64) Options {
		return Options{Rate: rate, MaxInFlight: o.Load.MaxInFlight, Timeout: o.Load.Timeout, Arrival: o.Load.Arrival, Seed: o.Load.Seed + seed}
	}
	bids := Load{Target: bidTarget(base, t.addr, newBidWorkload(o.Users, weight, pop), ring, maxConns), Options: opts(o.Load.Rate, 0)}
	bids.Options.Tmax = o.Load.Tmax
	loads := []Load{bids}
	if o.WinRatio > 0 {
		win := newHTTPTarget(base+" win", t.addr, "GET", maxConns, func(w *Worker, dst []byte) []byte {
			dst, _ = ring.pick(w.Rand, dst)
			return dst
		}, nil, classifyWin)
		win.checkHeader = "X-Rtbd-Notice" // bidder.HeaderNoticeOutcome
		loads = append(loads, Load{Target: win, Options: opts(o.Load.Rate*o.WinRatio, 1)})
	}
	if o.EventRate > 0 {
		loads = append(loads, Load{Target: newHTTPTarget(base+" event", t.addr, "GET", maxConns, eventURI, nil, nil), Options: opts(o.EventRate, 2)})
	}
	logf("run %s: bids %s req/s (%s), win notices %s req/s, pixel events %s req/s, %v after %v warmup",
		base, fmtRate(o.Load.Rate), bidShapes[weight], fmtRate(max(o.Load.Rate*o.WinRatio, 0)), fmtRate(max(o.EventRate, 0)), o.Load.Duration, o.Load.Warmup)
	near0 := t.nearStats()
	rs, err := RunMixed(ctx, loads, MixedOptions{Duration: o.Load.Duration, Warmup: o.Load.Warmup, Watch: t.watch})
	if len(rs) == 0 {
		return nil, err
	}
	r := rs[0]
	near[r.Target] = t.nearStats().Sub(near0)
	if t.name == TopologyRemote {
		r.Notes = append(r.Notes, "near cache of the bidder's catalog client (its /metrics, over the run and its warmup): "+near[r.Target].String())
	}
	logf("  %s bids: %s; bids %d, no-bids %d, misses %d, errors %d", base, summary(r), r.Successes, r.NoBids, r.DeadlineMisses, r.Errors.Total)
	if r.Successes == 0 && r.Requests > 0 {
		r.Notes = append(r.Notes, "no bid at all: check the bidder's log (demo users, campaigns) in the work directory")
	}
	for _, r := range rs[1:] {
		if !strings.HasSuffix(r.Target, " win") {
			continue
		}
		switch {
		case r.NoBids > 0:
			r.Notes = append(r.Notes, fmt.Sprintf("win notices: %d answered 204 X-Rtbd-Notice: unhandled = NOT HANDLED (no spend writer wired to /win; the bidder counts rtbd_bidder_notices_unhandled_total); shown as no_bid, not as success", r.NoBids))
		case r.Errors.Status4xx > 0:
			r.Notes = append(r.Notes, fmt.Sprintf("win notices: %d answered 4xx (404 = no /win route in this build; 400/410 = token refused): counted as errors", r.Errors.Status4xx))
		}
		if r.Errors.Other > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("win notices: %d not sent (no bid with an nurl answered yet): counted as errors (other)", r.Errors.Other))
		}
		r.Notes = append(r.Notes, fmt.Sprintf("win notices replay %d nurls harvested from answered bids", ring.seen))
	}
	return rs, err
}

func bidderMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var o BidderOptions
	var topos string
	fs := flag.NewFlagSet("rtbd bench bidder", flag.ContinueOnError)
	c.register(fs, 500, 100*time.Millisecond, 20*time.Second, 2*time.Second)
	fs.IntVar(&o.Nodes, "nodes", bidderDefaults.Nodes, "catalog nodes of the remote bidder")
	fs.StringVar(&o.DemoDir, "demo", "", "demo directory")
	o.DemoSize.register(fs)
	fs.StringVar(&topos, "topologies", "", "local,remote")
	fs.Float64Var(&o.WinRatio, "win-ratio", bidderDefaults.WinRatio, "win notices per bid")
	fs.Float64Var(&o.EventRate, "event-rate", 0, "pixel events/s (default rate/10)")
	fs.StringVar(&o.HTTPURL, "http", "", "running bidder base URL")
	fs.StringVar(&o.GRPCTarget, "grpc", "", "remote bidder's catalog target (running nodes)")
	fs.BoolVar(&o.Overload, "overload", false, "find the max rate, then offer twice it")
	fs.Var(setFlag{&o.BidderArgs}, "bidder-set", "bidder setting KEY=VALUE")
	fs.Var(setFlag{&o.NodeArgs}, "node-set", "catalog node setting KEY=VALUE")
	pops := fs.String("popularity", PopularityDemo, "users of the bid requests: demo, zipf, uniform, or a list (one set of runs each)")
	nearFlag(fs, &o.BidderArgs)
	ws, err := c.parse(fs, args, stderr)
	if err != nil {
		return err
	}
	o.Popularities, o.Topologies = splitList(*pops), splitList(topos)
	o.Weights, o.Load, o.Exe, o.WorkDir, o.Log = ws, c.load, c.exe, c.work, stderr
	if o.WinRatio == 0 {
		o.WinRatio = -1
	}
	return c.runAndWrite("bidder", o.Validate(), stdout, stderr, func() (*Report, error) { return RunBidder(ctx, o) })
}
