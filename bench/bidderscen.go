package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtbd/rtbd/internal/cliflag"
)

// Bidder topologies.
const (
	TopologyLocal    = "local"    // a bidder with the embedded index
	TopologyRemote   = "remote"   // a bidder with -catalog pointing to catalog nodes
	TopologyExternal = "external" // a running bidder (-http URL)
)

// BidderOptions configure RunBidder. Zero values take the defaults noted.
type BidderOptions struct {
	// DemoDir is the demo directory (`rtbd gen -demo -out DIR`): used if
	// it holds rtbd.yaml, else written there with Products, Groups and
	// Users and kept. "": written in a temporary directory, removed.
	DemoDir string
	// DemoSize is the demo written. With an existing DemoDir it must be
	// the demo's (the requests use users demo-user-1..Users and products
	// of Groups).
	DemoSize
	// Nodes is the number of catalog nodes of the remote topology.
	// Default 2.
	Nodes int
	// Weights select the campaign templates of the demo: 3 = light
	// (320x50, 300x50, 728x90 banners), 15 = medium (native), 30 = heavy
	// (160x600 banners); one set of rows each. Default TalkWeights.
	Weights []int
	// Topologies to measure, in order. Default local, remote.
	Topologies []string
	// Load of the bid requests; Tmax defaults to 100 ms here.
	Load LoadModel
	// WinRatio is the rate of win notices relative to the bid rate: they
	// replay the nurls of bids answered. Default 0.2; negative: none.
	WinRatio float64
	// EventRate is the rate of pixel events (/event), req/s. Default
	// Load.Rate / 10; negative: none.
	EventRate float64
	// HTTPURL measures a running bidder (base URL, e.g.
	// http://10.0.0.7:8080) instead of starting any.
	HTTPURL string
	// GRPCTarget is the remote bidder's -catalog: running catalog nodes
	// instead of started ones.
	GRPCTarget string
	// Exe is the rtbd binary. "": this process's executable.
	Exe string
	// BidderArgs and NodeArgs are extra flags of the started bidders and
	// nodes (e.g. "-set", "bidder.max_in_flight=256").
	BidderArgs, NodeArgs []string
	// BidderProcs > 0 sets GOMAXPROCS of the started bidders: on a small
	// machine shared with the harness, 1 leaves the generator a core of
	// its own, so that an overload run offers twice the bidder's capacity
	// without starving the generator that offers it.
	BidderProcs int
	// Overload, after the runs, searches each topology's highest bid rate
	// holding Load.P99 with < 0.1% deadline misses (at the middle weight),
	// then offers twice that rate for Load.Duration.
	Overload bool
	// Saturate > 0, after the runs, runs each topology closed loop with
	// that many connections, bids alone at the middle weight, taking
	// turns (runSaturated): the throughput when the bidder is the
	// bottleneck, and the CPU per bid there.
	Saturate int
	// KillNodeAt > 0 kills catalog node 1 (SIGKILL) that long into every
	// remote run's measured phase and restarts it 2 s later.
	KillNodeAt time.Duration
	// Popularities are the users the bid requests name, one set of runs
	// each: PopularityDemo (the demo's users demo-user-1..Users, products
	// uniform within their groups), PopularityZipf or PopularityUniform
	// (Users users written by the harness into the demo's user store, each
	// with the ids of one CatalogWorkload request of the heaviest weight,
	// Zipf-popular or uniform over the catalog). Default demo.
	Popularities []string
	// WorkDir keeps the children's logs. "": a temporary directory.
	WorkDir string
	// Log receives progress lines. nil: none.
	Log io.Writer
}

func (o BidderOptions) withDefaults() BidderOptions {
	o.DemoSize = o.DemoSize.withDefaults()
	o.Nodes = cmp.Or(o.Nodes, 2)
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
	o.WinRatio = cmp.Or(o.WinRatio, 0.2)
	o.EventRate = cmp.Or(o.EventRate, o.Load.Rate/10)
	o.Log = cmp.Or(o.Log, io.Discard)
	return o
}

// Validate reports every problem of o (after defaults).
func (o BidderOptions) Validate() error {
	o = o.withDefaults()
	var p problems
	o.DemoSize.validate(&p)
	if o.Nodes < 1 || o.Nodes > 64 {
		p.addf("nodes: must be 1..64, got %d", o.Nodes)
	}
	if o.BidderProcs < 0 || o.BidderProcs > 1024 {
		p.addf("bidder-procs: must be 0 (all CPUs) to 1024, got %d", o.BidderProcs)
	}
	if o.BidderProcs > 0 && o.HTTPURL != "" {
		p.addf("bidder-procs: applies to bidders the harness starts, not to -http")
	}
	for _, w := range o.Weights {
		if w != 3 && w != 15 && w != 30 {
			p.addf("weights: the demo's campaign templates give 3, 15 or 30 products, got %d", w)
		}
	}
	for _, t := range o.Topologies {
		switch t {
		case TopologyLocal, TopologyRemote:
			if o.HTTPURL != "" {
				p.addf("topologies: %s cannot be combined with -http (a running bidder)", t)
			}
		case TopologyExternal:
			if o.HTTPURL == "" {
				p.addf("topologies: external needs -http URL")
			}
		default:
			p.addf("topologies: unknown %q (want local, remote)", t)
		}
	}
	if o.HTTPURL != "" {
		if u, err := url.Parse(o.HTTPURL); err != nil || u.Scheme != "http" || u.Host == "" {
			p.addf("http: want http://host:port, got %q", o.HTTPURL)
		}
	}
	if o.Load.Concurrency > 0 {
		p.addf("concurrency: the bidder scenario's mixed loads are open loop; use -rate")
	}
	if o.Load.FindMax {
		p.addf("find-max: the bidder scenario searches the highest rate with -overload (then offers twice it)")
	}
	if o.KillNodeAt < 0 {
		p.addf("kill-node-at: must be >= 0")
	}
	if o.Saturate < 0 {
		p.addf("saturate: must be >= 0 (connections), got %d", o.Saturate)
	}
	for _, pop := range o.Popularities {
		switch pop {
		case PopularityDemo:
		case PopularityZipf, PopularityUniform:
			if o.HTTPURL != "" {
				p.addf("popularity: %s writes users into a bidder the harness starts, not into -http", pop)
			}
		default:
			p.addf("popularity: unknown %q (want demo, zipf, uniform)", pop)
		}
	}
	if o.KillNodeAt > 0 && o.KillNodeAt+2*time.Second >= o.Load.Duration {
		p.addf("kill-node-at: %v plus the 2 s outage must end before -duration %v", o.KillNodeAt, o.Load.Duration)
	}
	if err := o.Load.Validate(); err != nil {
		p.addf("%v", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	return p.err()
}

// Popularities of the bidder scenario's users.
const (
	PopularityDemo    = "demo"
	PopularityZipf    = "zipf"
	PopularityUniform = "uniform"
)

// popUsers is the user set of a popularity ("" for the demo's own).
func popUsers(pop string) (benchUsers, bool) {
	switch pop {
	case PopularityZipf:
		return benchUsers{prefix: "bench-z-", seed: 31}, true
	case PopularityUniform:
		return benchUsers{prefix: "bench-u-", uniform: true, seed: 32}, true
	}
	return benchUsers{}, false
}

// popSuffix is a popularity's suffix of target names ("" for demo, so
// that the default runs keep their names).
func popSuffix(pop string) string {
	if pop == PopularityDemo || pop == "" {
		return ""
	}
	return " " + pop
}

// bidShape is the imp of a weight: the campaign template that wins it.
func bidShape(weight int) string {
	switch weight {
	case 3:
		return "banner 320x50 | 300x50 | 728x90 (template light: 3 products)"
	case 15:
		return "native 1.2 (template medium: 15 products)"
	}
	return "banner 160x600 (template heavy: 30 products)"
}

// bidWorkload builds OpenRTB 2.6 bid requests from the demo: a random demo
// user, site and device, and the imp of the weight.
type bidWorkload struct {
	users  int
	weight int
	// userPrefix names the users: userPrefix + 1..users. "": "demo-user-".
	userPrefix string
	// each, when set, names every user in turn (1, 2, ..., users, 1, ...)
	// instead of a random one: the warming pass.
	each *atomic.Uint64
}

var benchSites = [...]string{
	`{"id":"bench-site-1","name":"Example News","domain":"news.example.com","page":"https://news.example.com/articles/1","cat":["IAB12"],"publisher":{"id":"pub-1","domain":"example.com"}}`,
	`{"id":"bench-site-2","name":"Recipes","domain":"recipes.example.org","page":"https://recipes.example.org/curry","cat":["IAB8"],"publisher":{"id":"pub-2","domain":"example.org"}}`,
	`{"id":"bench-site-3","name":"Gadgets","domain":"gadgets.example.net","page":"https://gadgets.example.net/review/42","cat":["IAB19"],"publisher":{"id":"pub-3","domain":"example.net"}}`,
}

var benchDevices = [...]string{
	`{"ua":"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15","ip":"203.0.113.7","devicetype":2,"os":"macOS","language":"en","geo":{"country":"USA","region":"CA","type":2}}`,
	`{"ua":"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1","ip":"198.51.100.23","devicetype":4,"os":"iOS","language":"ja","geo":{"country":"JPN","type":2}}`,
	`{"ua":"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36","ip":"192.0.2.44","devicetype":2,"os":"Windows","language":"en","geo":{"country":"GBR","type":2}}`,
	`{"ua":"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36","ip":"198.51.100.99","devicetype":4,"os":"Android","language":"de","geo":{"country":"DEU","type":2}}`,
}

var lightSizes = [...][2]int{{320, 50}, {300, 50}, {728, 90}}

// nativeRequest is a Native 1.2 request (title, main image, price, sponsor),
// JSON-escaped for imp.native.request.
const nativeRequest = `{\"ver\":\"1.2\",\"assets\":[{\"id\":1,\"required\":1,\"title\":{\"len\":25}},{\"id\":2,\"required\":1,\"img\":{\"type\":3,\"wmin\":100,\"hmin\":100}},{\"id\":3,\"data\":{\"type\":6}},{\"id\":4,\"required\":1,\"data\":{\"type\":1}}]}`

func (b bidWorkload) body(w *Worker, dst []byte) []byte {
	user := 1 + w.Rand.IntN(b.users)
	if b.each != nil {
		user = 1 + int((b.each.Add(1)-1)%uint64(b.users))
	}
	dst = fmt.Appendf(dst, `{"id":"bench-%d-%d","imp":[{"id":"1",`, w.ID, w.Seq)
	switch b.weight {
	case 3:
		s := lightSizes[w.Rand.IntN(len(lightSizes))]
		dst = fmt.Appendf(dst, `"banner":{"w":%d,"h":%d,"format":[{"w":%d,"h":%d}]}`, s[0], s[1], s[0], s[1])
	case 15:
		dst = append(dst, `"native":{"request":"`+nativeRequest+`","ver":"1.2"}`...)
	default:
		dst = append(dst, `"banner":{"w":160,"h":600,"format":[{"w":160,"h":600}]}`...)
	}
	dst = append(dst, `,"bidfloor":0.01,"bidfloorcur":"USD","secure":1}],"site":`...)
	dst = append(dst, benchSites[w.Rand.IntN(len(benchSites))]...)
	dst = append(dst, `,"device":`...)
	dst = append(dst, benchDevices[w.Rand.IntN(len(benchDevices))]...)
	prefix := b.userPrefix
	if prefix == "" {
		prefix = "demo-user-"
	}
	dst = fmt.Appendf(dst, `,"user":{"id":"%s%d","buyeruid":"%s%d"},"at":1,"tmax":100,"cur":["USD"],"regs":{"coppa":0,"gdpr":0}}`, prefix, user, prefix, user)
	return dst
}

// urlRing keeps the last nurlRingSize URLs added (of seen in all), for a
// load that replays them. Safe for concurrent use.
type urlRing struct {
	mu   sync.Mutex
	buf  [][]byte
	next int
	seen int64
}

const nurlRingSize = 4096

// add keeps a copy of u, in place of the oldest when the ring is full.
func (r *urlRing) add(u []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	if len(r.buf) < nurlRingSize {
		r.buf = append(r.buf, bytes.Clone(u))
		return
	}
	r.buf[r.next] = append(r.buf[r.next][:0], u...)
	r.next = (r.next + 1) % nurlRingSize
}

// pick appends a random recent URL to dst; false when none was added.
func (r *urlRing) pick(rng *rand.Rand, dst []byte) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		return dst, false
	}
	return append(dst, r.buf[rng.IntN(len(r.buf))]...), true
}

func (r *urlRing) empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf) == 0
}

// nurlRing keeps the path and query of recent bids' win notice URLs
// (nurl), price macro filled, for the win notice load.
type nurlRing struct{ urlRing }

var (
	nurlKey    = []byte(`"nurl":"`)
	priceMacro = []byte("${AUCTION_PRICE}")
)

// harvest copies the nurl of a bid response body, if any.
func (r *nurlRing) harvest(body []byte) {
	i := bytes.Index(body, nurlKey)
	if i < 0 {
		return
	}
	rest := body[i+len(nurlKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return
	}
	u := rest[:j]
	k := bytes.Index(u, []byte("/win?"))
	if k < 0 {
		return
	}
	u = bytes.ReplaceAll(u[k:], []byte(`\u0026`), []byte("&"))
	// The clearing price is the requests' floor: never above a bid, shaded
	// (first price) or not.
	r.add(bytes.ReplaceAll(u, priceMacro, []byte("0.01")))
}

// winTarget sends harvested win notices; with none harvested yet it
// returns ErrOther without sending.
type winTarget struct {
	*httpTarget
	ring *nurlRing
}

func (t winTarget) Do(ctx context.Context, w *Worker) Outcome {
	if t.ring.empty() {
		return ErrOther
	}
	return t.httpTarget.Do(ctx, w)
}

// classifyWin: rtbd answers an accepted (or replayed) notice 204 with
// X-Rtbd-Notice: accepted (replay): OK. A 204 with "unhandled" (a bidder
// without a spend writer) is NoBid: counted apart, never as success. A 204
// without the header (another bidder) is OK; 200 is OK; 4xx (404 before
// /win exists, 400 for a refused token), 5xx are errors.
func classifyWin(status int, outcome []byte) Outcome {
	if status == 204 && string(outcome) == "unhandled" {
		return NoBid
	}
	if status == 204 {
		return OK
	}
	return ClassifyHTTPStatus(status, nil)
}

// topo is one started (or external) deployment.
type topo struct {
	name   string
	addr   string // bidder host:port
	bidder *server
	nodes  []*server
	watch  Watch
}

// metricsURL is the started bidder's /metrics ("" for a running one).
func (t *topo) metricsURL() string {
	if t.bidder == nil {
		return ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(t.bidder.admin)) + "/metrics"
}

// RunBidder runs the bidder scenario: for each topology (a bidder with
// the embedded index; a bidder with -catalog pointing to Nodes catalog
// nodes; or a running bidder), one at a time, and each weight, a mixed
// open-loop run of bid requests at Load.Rate, win notices replaying the
// bids' nurls at WinRatio of it and pixel events at EventRate. Everything
// it starts runs from one demo directory on 127.0.0.1 and is stopped
// before it returns. The report's Table compares each remote row with the
// local row of its weight; with Overload or KillNodeAt it has the extra
// runs and notes. With Overload, every topology stays up after its runs,
// and the overload runs of all of them come last, interleaved
// (runOverload).
func RunBidder(ctx context.Context, o BidderOptions) (rep *Report, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	logf := logTo(o.Log, "bench: ")
	var cleanups cleanupStack
	defer cleanups.run()
	workDir, cleanWork, err := makeWorkDir(o.WorkDir)
	if err != nil {
		return nil, err
	}
	cleanups.add(cleanWork)
	var exe, demoDir string
	if o.HTTPURL == "" {
		if exe, err = executable(o.Exe); err != nil {
			return nil, err
		}
		if demoDir, err = prepareDemo(ctx, o, exe, workDir, logf); err != nil {
			return nil, err
		}
		var sets []benchUsers
		for _, pop := range o.Popularities {
			if u, ok := popUsers(pop); ok {
				sets = append(sets, u)
			}
		}
		if len(sets) > 0 {
			dir := filepath.Join(demoDir, "bidder", "users")
			ids := slices.Max(o.Weights)
			if err := writeBenchUsers(ctx, dir, o.Products, o.Groups, ids, o.Users, sets...); err != nil {
				return nil, err
			}
			logf("wrote %d users per popularity (%s) into %s, each with %d ids of one Zipf or uniform request", o.Users, strings.Join(o.Popularities, ", "), dir, ids)
		}
	}

	meta := Meta{Title: "bidder level: " + strings.Join(o.Topologies, " vs "), Config: o.Load.describe()}
	meta.Config["scenario"] = "bidder"
	meta.Config["weights"] = joinInts(o.Weights)
	meta.Config["demo"] = o.DemoSize.String()
	meta.Config["nodes"] = strconv.Itoa(o.Nodes)
	meta.Config["popularity"] = strings.Join(o.Popularities, ",")
	meta.Config["win_ratio"] = strconv.FormatFloat(o.WinRatio, 'g', -1, 64)
	meta.Config["event_rate"] = fmtRate(max(o.EventRate, 0))
	if o.KillNodeAt > 0 {
		meta.Config["kill_node_at"] = o.KillNodeAt.String()
	}
	for _, w := range o.Weights {
		meta.Notes = append(meta.Notes, fmt.Sprintf("weight %d: %s", w, bidShape(w)))
	}
	meta.Notes = append(meta.Notes, "bid requests: a random demo user (demo-user-1..N), one of 3 sites and 4 devices (desktop/mobile, USA/JPN/GBR/DEU), tmax 100 ms; win notices replay the nurls of answered bids; pixel events GET /event for Zipf-popular products")
	meta.Notes = append(meta.Notes, "each topology is warmed before its runs: one bid request per user, weight and popularity (closed loop, not measured)")
	rep = NewReport(meta)
	eventURI := o.DemoSize.eventURI(o.Load.Seed)

	var entries, otherEntries []TableEntry
	var topos []*topo // kept up for the overload runs
	near := map[string]NearStats{}
	for _, name := range o.Topologies {
		t, stop, err := startTopology(ctx, name, o, exe, demoDir, workDir, logf)
		if err != nil {
			if stop != nil {
				stop()
			}
			return nil, err
		}
		if err := warmTopology(ctx, o, t, logf); err != nil {
			stop()
			rep.UpdateRows()
			return rep, err
		}
		for _, pop := range o.Popularities {
			for _, w := range o.Weights {
				rs, ns, err := runBidderMixed(ctx, o, t, w, pop, eventURI, o.KillNodeAt, logf)
				if len(rs) > 0 {
					near[rs[0].Target] = ns
				}
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
					stop()
					rep.UpdateRows()
					return rep, err
				}
			}
		}
		if !o.Overload && o.Saturate == 0 {
			stop()
			continue
		}
		// The saturated and overload runs come after every topology's
		// runs, with all of them up, taking turns.
		cleanups.add(stop)
		topos = append(topos, t)
	}
	for _, pop := range o.Popularities {
		if len(topos) == 0 {
			break
		}
		if o.Saturate > 0 {
			if err := runSaturated(ctx, o, topos, pop, rep, &otherEntries, near, logf); err != nil {
				rep.UpdateRows()
				return rep, err
			}
		}
		if !o.Overload {
			continue
		}
		if err := runOverload(ctx, o, topos, pop, rep, &otherEntries, near, logf); err != nil {
			rep.UpdateRows()
			return rep, err
		}
	}
	rep.UpdateRows()
	rep.Notes = append(rep.Notes, remoteLocalLines(o.Topologies, rep.Results, near)...)
	title := "Bidder level: bid requests, " + strings.Join(o.Topologies, " vs ")
	if len(o.Topologies) > 1 {
		title += fmt.Sprintf(" (ratios %s/%s)", o.Topologies[1], o.Topologies[0])
	}
	rep.Tables = append(rep.Tables, BuildTable(title, entries))
	if len(otherEntries) > 0 {
		title := "Bidder level: the other loads of the same runs (win notices, pixel events)"
		if o.Saturate > 0 {
			title += ", the saturated runs"
		}
		if o.Overload {
			title += " and the overload runs"
		}
		rep.Tables = append(rep.Tables, BuildTable(title, otherEntries))
	}
	return rep, nil
}

// prepareDemo returns the demo directory, writing it with `rtbd gen -demo`
// when it has no rtbd.yaml.
func prepareDemo(ctx context.Context, o BidderOptions, exe, workDir string, logf func(string, ...any)) (string, error) {
	dir := o.DemoDir
	if dir == "" {
		dir = filepath.Join(workDir, "demo")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rtbd.yaml")); err == nil {
		logf("using the demo in %s (assumed: %s)", dir, o.DemoSize)
		return dir, nil
	}
	args := append(o.DemoSize.genArgs(dir), "-skip-existing")
	logf("writing the demo: %s %s", exe, strings.Join(args, " "))
	c, err := startChild("rtbd gen -demo", exe, args, logPath(workDir, "gen-demo"))
	if err != nil {
		return "", err
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		c.Kill()
		return "", ctx.Err()
	case <-time.After(30 * time.Minute):
		c.Kill()
		return "", c.Failure("did not finish in 30 minutes")
	}
	if c.Err() != nil {
		return "", c.Failure("failed")
	}
	return dir, nil
}

// startTopology starts a topology's processes (none for external) and
// returns a function stopping them.
func startTopology(ctx context.Context, name string, o BidderOptions, exe, demoDir, workDir string, logf func(string, ...any)) (*topo, func(), error) {
	t := &topo{name: name}
	var stops cleanupStack
	stop := stops.run
	cfg := filepath.Join(demoDir, "rtbd.yaml")
	switch name {
	case TopologyExternal:
		u, _ := url.Parse(o.HTTPURL)
		t.addr = u.Host
		return t, stop, nil
	case TopologyLocal:
		logf("starting a bidder with the local index (%s)", cfg)
		data, err := ownBidderData(demoDir, workDir, "bidder-local")
		if err != nil {
			return nil, stop, err
		}
		b := newBidder("bidder-local", exe, cfg, workDir, append(data, o.BidderArgs...))
		b.env = o.bidderEnv()
		if err := b.start(ctx, false); err != nil {
			return nil, stop, err
		}
		stops.add(func() { b.stop(15 * time.Second) })
		t.bidder = b
	case TopologyRemote:
		target := o.GRPCTarget
		if target == "" {
			var addrs []string
			for i := 1; i <= o.Nodes; i++ {
				n := newCatalogNode(fmt.Sprintf("catalog-node-%d", i), exe, filepath.Join(demoDir, "catalog"), workDir, o.NodeArgs)
				logf("starting catalog node %d of %d", i, o.Nodes)
				if err := n.start(ctx, false); err != nil {
					return nil, stop, err
				}
				stops.add(func() { n.stop(15 * time.Second) })
				t.nodes = append(t.nodes, n)
				addrs = append(addrs, n.Addr())
			}
			target = "static:///" + strings.Join(addrs, ",")
		}
		logf("starting a bidder with -catalog %s", target)
		data, err := ownBidderData(demoDir, workDir, "bidder-remote")
		if err != nil {
			return nil, stop, err
		}
		b := newBidder("bidder-remote", exe, cfg, workDir, append(append(data, "-catalog", target), o.BidderArgs...))
		b.env = o.bidderEnv()
		if err := b.start(ctx, false); err != nil {
			return nil, stop, err
		}
		stops.add(func() { b.stop(15 * time.Second) })
		t.bidder = b
	}
	t.addr = t.bidder.Addr()
	t.watch.Processes = append(t.watch.Processes, WatchProcess{Name: t.bidder.name, PID: t.bidder.PID()})
	t.watch.Histograms = append(t.watch.Histograms, WatchHistogram{Name: t.bidder.name,
		URL: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(t.bidder.admin)) + "/metrics", Metric: "rtbd_bidder_request_seconds"})
	for _, n := range t.nodes {
		t.watch.Processes = append(t.watch.Processes, WatchProcess{Name: n.name, PID: n.PID()})
	}
	return t, stop, nil
}

// ownBidderData copies the demo's bidder data directory (its users, its
// spend) into the work directory for the started bidder name, and returns
// the arguments that point the bidder at the copy: every topology starts
// from the same state, the runs of one do not spend the other's budgets,
// and two topologies can be up at once (a data directory is one
// process's).
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

// warmTopology sends one bid request per user, weight and popularity to
// a topology before its measured runs, closed loop: the steady state of a
// bidder that has served its users for a while (its near cache, banner
// cells and the index's block cache hold what the runs ask for), the same
// for every topology.
func warmTopology(ctx context.Context, o BidderOptions, t *topo, logf func(string, ...any)) error {
	start := time.Now()
	var n int64
	for _, pop := range o.Popularities {
		for _, w := range o.Weights {
			wl := bidWorkload{users: o.Users, weight: w, each: new(atomic.Uint64)}
			if u, ok := popUsers(pop); ok {
				wl.userPrefix = u.prefix
			}
			name := fmt.Sprintf("%s/%d%s warming", t.name, w, popSuffix(pop))
			r, err := RunClosedLoop(ctx, bidTarget(name, t.addr, wl, nil, 16), ClosedLoopOptions{
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
// one topology at one weight; killAt > 0 kills and restarts node 1.
func runBidderMixed(ctx context.Context, o BidderOptions, t *topo, weight int, pop string, eventURI func(*Worker, []byte) []byte, killAt time.Duration, logf func(string, ...any)) ([]*Result, NearStats, error) {
	base := fmt.Sprintf("%s/%d%s", t.name, weight, popSuffix(pop))
	maxConns := max(o.Load.MaxInFlight, 64)
	ring := &nurlRing{}
	wl := bidWorkload{users: o.Users, weight: weight}
	if u, ok := popUsers(pop); ok {
		wl.userPrefix = u.prefix
	}
	bids := bidTarget(base, t.addr, wl, ring, maxConns)
	loads := []Load{{Target: bids, Options: OpenLoopOptions{Rate: o.Load.Rate, MaxInFlight: o.Load.MaxInFlight, Timeout: o.Load.Timeout,
		Tmax: o.Load.Tmax, Arrival: o.Load.Arrival, Seed: o.Load.Seed}}}
	if o.WinRatio > 0 {
		win := newHTTPTarget(base+" win", t.addr, "GET", maxConns, func(w *Worker, dst []byte) []byte {
			dst, _ = ring.pick(w.Rand, dst)
			return dst
		}, nil, classifyWin)
		win.checkHeader = "X-Rtbd-Notice" // bidder.HeaderNoticeOutcome
		loads = append(loads, Load{Target: winTarget{win, ring}, Options: OpenLoopOptions{Rate: o.Load.Rate * o.WinRatio,
			MaxInFlight: o.Load.MaxInFlight, Timeout: o.Load.Timeout, Arrival: o.Load.Arrival, Seed: o.Load.Seed + 1}})
	}
	if o.EventRate > 0 {
		ev := newHTTPTarget(base+" event", t.addr, "GET", maxConns, eventURI, nil, nil)
		loads = append(loads, Load{Target: ev, Options: OpenLoopOptions{Rate: o.EventRate, MaxInFlight: o.Load.MaxInFlight,
			Timeout: o.Load.Timeout, Arrival: o.Load.Arrival, Seed: o.Load.Seed + 2}})
	}
	var killNotes []string
	var killEvents []Event
	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if killAt > 0 && len(t.nodes) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			killNotes, killEvents = killAndRestart(runCtx, t.nodes[0], o.Load.Warmup, killAt, logf)
		}()
	}
	logf("run %s: bids %s req/s (%s), win notices %s req/s, pixel events %s req/s, %v after %v warmup",
		base, fmtRate(o.Load.Rate), bidShape(weight), fmtRate(max(o.Load.Rate*o.WinRatio, 0)), fmtRate(max(o.EventRate, 0)), o.Load.Duration, o.Load.Warmup)
	metricsURL := t.metricsURL()
	var near0 NearStats
	if metricsURL != "" {
		near0 = readNearStats(ctx, metricsURL)
	}
	rs, err := RunMixed(runCtx, loads, MixedOptions{Duration: o.Load.Duration, Warmup: o.Load.Warmup, Watch: t.watch})
	cancel()
	wg.Wait()
	var near NearStats
	if metricsURL != "" {
		near = readNearStats(ctx, metricsURL).Sub(near0)
	}
	if len(rs) > 0 && t.name == TopologyRemote {
		rs[0].Notes = append(rs[0].Notes, "near cache of the bidder's catalog client (its /metrics, over the run and its warmup): "+near.String())
	}
	if len(rs) > 0 {
		r := rs[0]
		r.Notes = append(r.Notes, killNotes...)
		for _, x := range rs {
			x.Events = append(x.Events, killEvents...)
		}
		// The bidder's histogram is of bid requests: it belongs to the
		// bids' result, not to the win notices' and pixel events'.
		for _, x := range rs[1:] {
			x.ServerSide = nil
		}
		logf("  %s bids: avg %s ms, p50 %s ms, p99 %s ms, %s req/s; bids %d, no-bids %d, misses %d, errors %d",
			base, fmtMs(r.Latency.AvgUs/1000), fmtMs(usToMs(r.Latency.P50Us)), fmtMs(usToMs(r.Latency.P99Us)), fmtRate(r.AchievedRate),
			r.Successes, r.NoBids, r.DeadlineMisses, r.Errors.Total)
		if len(killNotes) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("during the run with a node killed: %d answers past tmax (%s), %d errors (%+v)%s",
				r.DeadlineMisses, time.Duration(r.TmaxMs*1e6), r.Errors.Total, r.Errors, lateServer(r)))
		}
		if r.Successes == 0 && r.Requests > 0 {
			r.Notes = append(r.Notes, "no bid at all: check the bidder's log (demo users, campaigns) in the work directory")
		}
	}
	for _, r := range rs[min(1, len(rs)):] {
		if strings.HasSuffix(r.Target, " win") {
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
	}
	return rs, near, err
}

// killAndRestart kills n (SIGKILL) at warmup+at after now, waits 2 s and
// restarts it on the same ports; it returns notes and timeline events with
// the times since the start of the measured phase.
func killAndRestart(ctx context.Context, n *server, warmup, at time.Duration, logf func(string, ...any)) ([]string, []Event) {
	start := time.Now().Add(warmup)
	select {
	case <-time.After(time.Until(start.Add(at))):
	case <-ctx.Done():
		return nil, nil
	}
	oldPID := n.PID()
	n.Kill()
	killed := time.Since(start)
	logf("  killed %s (pid %d) at t=%.1f s", n.name, oldPID, killed.Seconds())
	events := []Event{{AtSec: killed.Seconds(), What: n.name + " killed"}}
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	err := n.start(context.WithoutCancel(ctx), true)
	up := time.Since(start)
	if err != nil {
		logf("  restarting %s failed: %v", n.name, err)
		return []string{fmt.Sprintf("%s (pid %d) killed (SIGKILL) at t=%.1f s; restart FAILED: %v", n.name, oldPID, killed.Seconds(), err)},
			append(events, Event{AtSec: up.Seconds(), What: n.name + " restart failed"})
	}
	logf("  restarted %s (pid %d), ready at t=%.1f s", n.name, n.PID(), up.Seconds())
	return []string{fmt.Sprintf("%s (pid %d) killed (SIGKILL) at t=%.1f s, restarted on the same port (pid %d) and ready at t=%.1f s; marked on the timeline (its CPU figure covers the old pid only)",
		n.name, oldPID, killed.Seconds(), n.PID(), up.Seconds())}, append(events, Event{AtSec: up.Seconds(), What: n.name + " ready"})
}

// runOverload finds each topology's highest bid rate holding the
// objective at the middle weight with the users of popularity pop, the
// topologies' searches interleaved step by step (FindMaxRates: a host
// whose speed drifts moves them alike), then offers each twice its rate,
// one topology after the other. The near cache's hits and misses over
// the searches go into near under each search's best row (when the bidder
// has a near cache; interleaving does not mix them, as each topology has
// its own bidder).
func runOverload(ctx context.Context, o BidderOptions, ts []*topo, pop string, rep *Report, entries *[]TableEntry, near map[string]NearStats, logf func(string, ...any)) error {
	w := o.Weights[len(o.Weights)/2]
	wl := bidWorkload{users: o.Users, weight: w}
	if u, ok := popUsers(pop); ok {
		wl.userPrefix = u.prefix
	}
	names := make([]string, len(ts))
	targets := make([]Target, len(ts))
	watches := make([]Watch, len(ts)) // each step watches its own topology's processes
	near0 := make([]NearStats, len(ts))
	for i, t := range ts {
		names[i] = fmt.Sprintf("%s/%d %s bids only", t.name, w, pop)
		targets[i] = bidTarget(names[i], t.addr, wl, nil, max(o.Load.MaxInFlight, 64))
		watches[i] = t.watch
		if u := t.metricsURL(); u != "" {
			near0[i] = readNearStats(ctx, u)
		}
	}
	step := min(o.Load.Duration, 5*time.Second)
	logf("overload %s: searching the highest rate with p99 <= %v, < 0.1%% answers past tmax %v and < 1%% no-bids (a shedding bidder keeps its latency)%s",
		strings.Join(names, ", "), o.Load.P99, o.Load.Tmax, map[bool]string{true: "; the searches' steps interleaved", false: ""}[len(ts) > 1])
	ss, err := FindMaxRates(ctx, targets, FindMaxRateOptions{
		Objective: Objective{P99: o.Load.P99, MaxMissRatio: 0.001, MaxNoBidRatio: 0.01}, StartRate: max(o.Load.Rate/4, 25), MaxRate: o.Load.MaxRate,
		StepDuration: step, StepWarmup: min(o.Load.Warmup, time.Second), Cooldown: time.Second, Precision: 0.1, Confirm: 1,
		MaxSteps: 30,
		Load:     OpenLoopOptions{MaxInFlight: o.Load.MaxInFlight, Timeout: o.Load.Timeout, Tmax: o.Load.Tmax, Seed: o.Load.Seed},
		Watches:  watches,
		Logf:     logf,
	})
	if err != nil && !errors.Is(err, ErrNoPassingRate) {
		return fmt.Errorf("bench: overload %s: %w", strings.Join(names, ", "), err)
	}
	for i, t := range ts {
		s := ss[i]
		rep.Searches = append(rep.Searches, s)
		name := names[i]
		if u := t.metricsURL(); u != "" {
			if ns := readNearStats(ctx, u).Sub(near0[i]); ns.Found {
				near[name+" max"] = ns
			}
		}
		if s.MaxRate == 0 {
			msg := fmt.Sprintf("overload %s NOT RUN: not even the search's start rate held the objective (see the search)", name)
			rep.Notes = append(rep.Notes, msg)
			logf("  %s", msg)
			continue
		}
		if s.Best != nil {
			s.Best.Target = name + " max"
			rep.Results = append(rep.Results, s.Best)
			*entries = append(*entries, TableEntry{Result: s.Best, Group: "overload"})
		}
		rate := 2 * s.MaxRate
		logf("overload %s: highest sustainable %s req/s; offering %s req/s for %v", name, fmtRate(s.MaxRate), fmtRate(rate), o.Load.Duration)
		bids2 := bidTarget(name+" 2x", t.addr, wl, nil, max(o.Load.MaxInFlight, 64))
		r, err := RunOpenLoop(ctx, bids2, OpenLoopOptions{Rate: rate, Duration: o.Load.Duration, Warmup: min(o.Load.Warmup, time.Second),
			MaxInFlight: o.Load.MaxInFlight, Timeout: o.Load.Timeout, Tmax: o.Load.Tmax, Seed: o.Load.Seed, Watch: t.watch})
		if r == nil {
			return err
		}
		bidRate := float64(r.Successes) / max(r.ElapsedSec, 1e-9)
		within := r.DeadlineMisses == 0 && r.Errors.Total == 0
		r.Notes = append(r.Notes, fmt.Sprintf("overload: offered %s req/s = 2 x the highest sustainable %s req/s (%s); answers past tmax %d, errors %d (%+v): every request answered within tmax: %v%s",
			fmtRate(rate), fmtRate(s.MaxRate), s.Objective, r.DeadlineMisses, r.Errors.Total, r.Errors, within, lateServer(r)),
			fmt.Sprintf("overload: successful bids %s/s = %.0f%% of the highest sustainable rate (acceptance: >= 80%%); no-bids %d (shed or past deadline, nbr 507/508)",
				fmtRate(bidRate), 100*bidRate/max(s.MaxRate, 1e-9), r.NoBids))
		rep.Results = append(rep.Results, r)
		*entries = append(*entries, TableEntry{Result: r, Group: "overload", Baseline: name + " max"})
		logf("  %s", r.Notes[len(r.Notes)-2])
		logf("  %s", r.Notes[len(r.Notes)-1])
		if err != nil {
			return err
		}
	}
	return nil
}

// lateServer says how many answers the bidder itself took longer than
// tmax over, from arrival (its rtbd_bidder_request_seconds), beside the
// harness's count and the generator's send lag ("" when not watched).
func lateServer(r *Result) string {
	for _, h := range r.ServerSide {
		if h.Metric != "rtbd_bidder_request_seconds" || h.Error != "" || h.OverTmax < 0 {
			continue
		}
		return fmt.Sprintf("; the bidder's own histogram: %d of its %d answers took over %s from arrival (the rest of the harness's late count is the way there and back: generator send lag p99 %s ms, max %s ms)",
			h.OverTmax, h.Count, time.Duration(h.TmaxBoundSec*1e9), fmtMs(usToMs(r.SendLag.P99Us)), fmtMs(usToMs(r.SendLag.MaxUs)))
	}
	return ""
}

// bidderEnv is the started bidders' extra environment.
func (o *BidderOptions) bidderEnv() []string {
	if o.BidderProcs > 0 {
		return []string{"GOMAXPROCS=" + strconv.Itoa(o.BidderProcs)}
	}
	return nil
}

func bidderMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var o BidderOptions
	var topos string
	var bidderSets, nodeSets multiFlag
	fs := flag.NewFlagSet("rtbd bench bidder", flag.ContinueOnError)
	c.register(fs, 500, 100*time.Millisecond, 20*time.Second, 2*time.Second)
	fs.IntVar(&o.Nodes, "nodes", 2, "catalog nodes of the remote bidder")
	fs.StringVar(&o.DemoDir, "demo", "", "demo directory")
	o.DemoSize.register(fs)
	fs.StringVar(&topos, "topologies", "", "local,remote")
	fs.Float64Var(&o.WinRatio, "win-ratio", 0.2, "win notices per bid")
	fs.Float64Var(&o.EventRate, "event-rate", 0, "pixel events/s (default rate/10)")
	fs.StringVar(&o.HTTPURL, "http", "", "running bidder base URL")
	fs.StringVar(&o.GRPCTarget, "grpc", "", "remote bidder's catalog target (running nodes)")
	fs.BoolVar(&o.Overload, "overload", false, "find the max rate, then offer twice it")
	fs.IntVar(&o.Saturate, "saturate", 0, "closed-loop runs with this many connections, topologies taking turns")
	fs.DurationVar(&o.KillNodeAt, "kill-node-at", 0, "kill and restart catalog node 1 this long into each remote run")
	fs.Var(&bidderSets, "bidder-set", "bidder setting KEY=VALUE")
	fs.IntVar(&o.BidderProcs, "bidder-procs", 0, "GOMAXPROCS of the started bidders (0: all CPUs)")
	fs.Var(&nodeSets, "node-set", "catalog node setting KEY=VALUE")
	pops := fs.String("popularity", PopularityDemo, "users of the bid requests: demo, zipf, uniform, or a list (one set of runs each)")
	nearFlag(fs, &o.BidderArgs)
	seeFlags(fs)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	ws, err := c.finish(fs)
	if err != nil {
		return err
	}
	o.Popularities = splitList(*pops)
	o.Weights, o.Load, o.Exe, o.WorkDir, o.Log = ws, c.load, c.exe, c.work, stderr
	if topos != "" {
		o.Topologies = splitList(topos)
	}
	if o.WinRatio == 0 {
		o.WinRatio = -1
	}
	o.BidderArgs = append(o.BidderArgs, bidderSets.setArgs()...)
	o.NodeArgs = append(o.NodeArgs, nodeSets.setArgs()...)
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	err = c.runAndWrite("bidder", stdout, stderr, func() (*Report, error) { return RunBidder(ctx, o) })
	if err != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("bench: interrupted: %w", err)
	}
	return err
}
