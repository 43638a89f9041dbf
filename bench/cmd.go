package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/rtbd/rtbd/internal/cliflag"
)

// ErrUsage is wrapped by Main's errors for bad arguments (the caller maps
// it to exit code 2).
var ErrUsage = errors.New("bench: usage")

// ErrRegression is returned by `rtbd bench compare -fail` when a metric of
// a target regressed.
var ErrRegression = errors.New("bench: regression")

// Usage writes the help of `rtbd bench`.
func Usage(w io.Writer) {
	fmt.Fprint(w, `rtbd bench: measure rtbd deployments side by side (local index vs remote catalog)

  rtbd bench store  [flags]   store level: the same ProductMastersRequest stream, at the
                              same load, straight to the local Pebble index (in-process),
                              a catalog node over gRPC (catalog/remote), Redis (one MGET
                              per request) and, with -aerospike, Aerospike (one BatchGet)
  rtbd bench bidder [flags]   bidder level: a bidder with the local index and a bidder
                              with -catalog pointing to -nodes catalog nodes, separate
                              processes on loopback from one demo; bids, win notices and
                              pixel events together
  rtbd bench soak [flags]     fault-injection soak (make bench-soak): 2 bidders sharing
                              redis-server (AOF, appendfsync always) and 2 catalog nodes,
                              bids, notices, events and clicks at fixed rates while catalog
                              nodes, redis-server and bidders are killed (-9, SIGTERM), a node
                              is cut off and ingest meets a full and a slow disk; reconciles
                              every accepted notice with the store; flags: rtbd bench soak -h
  rtbd bench scale [flags]    the talk's scale (make bench-scale): 20M-100M products (as the
                              free disk allows, or -products) piped into the bulk ingest, one
                              catalog node, uniform and Zipf lookups through it and through a
                              bidder on it; flags: -products -data -users -ids -rate -bid-rate
                              -duration -warmup -skip-bidder -ingest-only -near-cache
  rtbd bench ghz [flags]      ghz against one catalog node (make bench-ghz): GetProductMasters
                              vs an empty health check, node CPU per call, ratios; flags:
                              -ghz -products -ids -rate -concurrency -connections -duration
  rtbd bench auction [flags]  bid shading and pacing in-process on a fake clock: a simulated
                              first-price exchange (lognormal competing bids per segment,
                              floors, a +30% shift), surplus against the oracle's with and
                              without m, cost per win against bidding the value; then a
                              compressed day of adaptive against throttled pacing; with
                              -bidders N the shading runs again by N bidders sharing one
                              redis-server, one restarted mid-run; flags:
                              -seed -value -learn -measure -after -shift -half-life
                              -pacing-days -pacing-auctions -pacing-budget -bidders -sync
                              -restart-at -redis-server
  rtbd bench all [flags]      the standard comparison (make bench): store level, then
                              bidder level, in one report; flags: -duration -warmup -weights
                              -store-rate -bidder-rate -nodes -products -groups -out -work
                              -rtbd -title -q -skip-bidder
  rtbd bench recommend -views DIR [flags]
                              offline evaluation of the similar-product lists: each user's
                              last view held out, hit rate and recall at -k against the most
                              popular products of the group, coverage; products from -data
  rtbd bench render [-out DIR] [-q] A.json
                              the text (stdout) and, with -out, the three files again
                              from a JSON report (e.g. after upgrading rtbd)
  rtbd bench compare [-fail] A.json B.json
                              per target and metric (p50, p99, avg, throughput) the change
                              from A to B with a noise-aware verdict: "no change",
                              "regression", "improvement" or "inconclusive"; -fail returns
                              an error (exit 1) on any regression

The harness starts what it measures itself (from this rtbd binary, or -rtbd PATH) on
127.0.0.1 and stops it at the end; -grpc TARGET / -http URL / -redis ADDR point it at
running endpoints instead. Latency is measured from each request's intended send time
(open loop: no coordinated omission).

Load (every target gets the same):
  -rate R             open loop: R requests/s offered (default 1000)
  -concurrency C      closed loop: C workers, each waiting for its answer
  -find-max           search the highest open-loop rate holding -p99 (doubling from
                      -rate, then bisection; each step -duration)
  -p99 D              find-max objective (default 5ms)
  -max-rate R         find-max cap (default 100000)
  -duration D         measured time per target and weight (default 20s)
  -warmup D           discarded warmup before each run (default 2s; 0s for none)
  -timeout D          hard per-request deadline (default 1s)
  -tmax D             soft deadline counted as deadline misses (bidder default 100ms)
  -max-in-flight N    open-loop concurrency bound (default 1024)
  -arrival A          uniform (default) or poisson
  -seed N             request stream seed (default 1)

Output:
  -out DIR            write DIR/latest.{txt,json,html} and a timestamped copy of each
                      (JSON schema rtbd-bench/v1, see package bench); text also to stdout
  -title S            report title
  -q                  no report text on stdout (progress still on stderr)
  -work DIR           keep the children's logs (and a built index) in DIR
  -rtbd PATH          rtbd binary to start children from (default: this executable)
  -cpuprofile FILE    write the harness's own CPU profile (go tool pprof)

Store flags:
  -products N -groups G   synthetic catalog of 'rtbd gen -products N -groups G -seed 1'
                          (defaults 100000, 10)
  -weights 3,15,30        products per request, one row per weight and target
  -uniform                uniform popularity (default Zipf s=1.1)
  -requests N             distinct requests per weight, cycled (default 20000)
  -targets LIST           subset of local,grpc,redis,aerospike (default all available)
  -data DIR               index to use (or build and keep); default a temporary one
  -grpc TARGET            running catalog nodes (static:///h:p,... dns:///... file:///...)
  -conns-per-node N       catalog/remote connections per node (default the client's, 2)
  -node-set KEY=VALUE     setting for the started catalog node (repeatable)
  -redis ADDR             running Redis (the harness writes keys p:{group}:{id} into it)
  -redis-server PATH      redis-server binary to start (default /usr/bin/redis-server)
  -aerospike HOSTS        Aerospike seed hosts (host:port,...); enables that target
  -aerospike-ns NS        Aerospike namespace (default test)
  -verify N               requests checked for identical answers first (default 200)
  -near-cache SIZE        the grpc-near target's near cache (default 64MiB); grpc-near is
                          a target only when catalog/remote has a near cache
  -ghz-data FILE          write the first weight's request stream (-requests of them) as
                          ghz -D JSON and exit (see bench/README.md)

Bidder flags:
  -nodes N                catalog nodes of the remote bidder (default 2)
  -demo DIR               demo directory to use (or write) ('rtbd gen -demo -out DIR');
                          default a temporary one
  -products N -groups G -users U   demo size (defaults 20000, 8, 1000)
  -weights 3,15,30        products per bid (campaign templates' quantities)
  -topologies LIST        subset of local,remote (default both)
  -win-ratio F            win notices per bid answered with a bid (default 0.2)
  -event-rate R           pixel events/s beside the bids (default rate/10)
  -http URL               measure a running bidder (its base URL) instead of starting any
  -grpc TARGET            remote bidder's catalog: running nodes instead of started ones
  -overload               find the bidder's highest rate holding -p99, then offer twice it
  -kill-node-at D         in the remote topology kill catalog node 1 D into the run and
                          restart it 2 s later (timeline shows it)
  -popularity LIST        users of the bids: demo (the demo's), zipf, uniform (-users users
                          written by the harness, ids Zipf-popular or uniform); one set each
  -near-cache SIZE        catalog.near_cache_bytes of the started bidders (env
                          RTBD_BENCH_NEAR_CACHE_BYTES); the report gives the remote bidder's
                          near-cache hit ratio from its /metrics (n/a without one)

Examples:
  rtbd bench store -duration 20s -rate 2000 -out bench/results
  rtbd bench store -targets local,grpc -find-max -p99 5ms -weights 15
  rtbd bench bidder -nodes 2 -rate 500 -duration 20s -out bench/results
  rtbd bench compare bench/results/old.json bench/results/latest.json
`)
}

// Main runs `rtbd bench` with args (after "bench"). Reports go to stdout,
// progress to stderr. Bad arguments return an error wrapping ErrUsage;
// -h prints Usage and returns flag.ErrHelp.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		Usage(stderr)
		return fmt.Errorf("%w: rtbd bench needs a scenario: store, bidder, soak, scale, ghz, auction, all or compare", ErrUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		Usage(stdout)
		return flag.ErrHelp
	case "store":
		return storeMain(ctx, args[1:], stdout, stderr)
	case "bidder":
		return bidderMain(ctx, args[1:], stdout, stderr)
	case "compare":
		return compareMain(args[1:], stdout, stderr)
	case "all":
		return allMain(ctx, args[1:], stdout, stderr)
	case "soak":
		return soakMain(ctx, args[1:], stdout, stderr)
	case "render":
		return renderMain(args[1:], stdout, stderr)
	case "scale":
		return scaleMain(ctx, args[1:], stdout, stderr)
	case "ghz":
		return ghzMain(ctx, args[1:], stdout, stderr)
	case "recommend":
		return recommendMain(ctx, args[1:], stdout, stderr)
	case "auction":
		return auctionMain(args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown scenario %q (want store, bidder, soak, scale, ghz, auction, all or compare)", ErrUsage, args[0])
}

// common holds the flags every scenario has.
type common struct {
	load        LoadModel
	arrival     string
	out, title  string
	work, exe   string
	quiet       bool
	weights     string
	cpuProfile  string
	seed        uint64
	durationSet bool
}

func (c *common) register(fs *flag.FlagSet, defRate float64, defTmax, defDuration, defWarmup time.Duration) {
	fs.Float64Var(&c.load.Rate, "rate", defRate, "open-loop offered rate, req/s")
	fs.IntVar(&c.load.Concurrency, "concurrency", 0, "closed loop: workers")
	fs.BoolVar(&c.load.FindMax, "find-max", false, "search the highest rate holding -p99")
	fs.DurationVar(&c.load.P99, "p99", 5*time.Millisecond, "find-max objective")
	fs.Float64Var(&c.load.MaxRate, "max-rate", 100_000, "find-max cap, req/s")
	fs.DurationVar(&c.load.Duration, "duration", defDuration, "measured time per run")
	fs.DurationVar(&c.load.Warmup, "warmup", defWarmup, "discarded warmup per run")
	fs.DurationVar(&c.load.Timeout, "timeout", time.Second, "hard per-request deadline")
	fs.DurationVar(&c.load.Tmax, "tmax", defTmax, "soft deadline (deadline misses)")
	fs.IntVar(&c.load.MaxInFlight, "max-in-flight", 1024, "open-loop concurrency bound")
	fs.StringVar(&c.arrival, "arrival", "uniform", "uniform or poisson")
	fs.Uint64Var(&c.seed, "seed", 1, "request stream seed")
	fs.StringVar(&c.out, "out", "", "output directory for latest.{txt,json,html}")
	fs.StringVar(&c.title, "title", "", "report title")
	fs.BoolVar(&c.quiet, "q", false, "no report text on stdout")
	fs.StringVar(&c.work, "work", "", "directory for children's logs (kept)")
	fs.StringVar(&c.exe, "rtbd", "", "rtbd binary (default: this executable)")
	fs.StringVar(&c.weights, "weights", "3,15,30", "products per request")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write the harness's CPU profile to this file")
}

// startProfile starts the CPU profile when asked; the returned function
// stops it.
// runAndWrite runs one scenario under the optional CPU profile, then
// titles its report, stamps the git revision and writes it (-out, stdout).
// The scenario's error wins over a write error.
func (c *common) runAndWrite(kind string, stdout, stderr io.Writer, run func() (*Report, error)) error {
	stopProfile, err := c.startProfile()
	if err != nil {
		return err
	}
	// Before the run, on a machine at rest: the floor its latencies sit on.
	floor := MeasureWakeupFloor(context.Background())
	if floor != nil {
		fmt.Fprintf(stderr, "bench: host wake-up floor: %s\n", floor)
	}
	rep, err := run()
	stopProfile()
	if rep != nil {
		rep.Wakeup = floor
		if c.title != "" {
			rep.Title = c.title
		}
		rep.GitRev = gitRev()
		if werr := writeOutputs(rep, kind, c.out, c.quiet, stdout, stderr); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

func (c *common) startProfile() (func(), error) {
	if c.cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(c.cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("bench: -cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: -cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// finish validates the common flags after parsing.
func (c *common) finish(fs *flag.FlagSet) ([]int, error) {
	c.load.Arrival = Arrival(c.arrival)
	c.load.Seed = c.seed
	if c.load.Warmup == 0 {
		c.load.Warmup = -1 // LoadModel: negative = none
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "duration" {
			c.durationSet = true
		}
	})
	ws, err := parseInts(c.weights)
	if err != nil {
		return nil, fmt.Errorf("%w: -weights: %v", ErrUsage, err)
	}
	if err := c.load.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return ws, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("want positive integers separated by commas, got %q", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

type multiFlag []string

// setArgs is the settings as rtbd arguments: "-set", KEY=VALUE for each.
func (m multiFlag) setArgs() []string {
	var out []string
	for _, s := range m {
		out = append(out, "-set", s)
	}
	return out
}

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func storeMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var o StoreOptions
	var targets string
	var nodeSets multiFlag
	fs := flag.NewFlagSet("rtbd bench store", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	c.register(fs, 1000, 0, 20*time.Second, 2*time.Second)
	fs.IntVar(&o.Products, "products", 100_000, "catalog products")
	fs.IntVar(&o.Groups, "groups", 10, "catalog product groups")
	fs.BoolVar(&o.Uniform, "uniform", false, "uniform popularity")
	fs.IntVar(&o.Requests, "requests", 20_000, "distinct requests per weight")
	fs.StringVar(&targets, "targets", "", "local,grpc,redis,aerospike")
	fs.StringVar(&o.DataDir, "data", "", "index directory")
	fs.StringVar(&o.GRPCTarget, "grpc", "", "running catalog nodes")
	fs.IntVar(&o.ConnsPerNode, "conns-per-node", 0, "remote client connections per node")
	fs.Var(&nodeSets, "node-set", "catalog node setting KEY=VALUE")
	fs.StringVar(&o.RedisAddr, "redis", "", "running Redis host:port")
	fs.StringVar(&o.RedisServer, "redis-server", DefaultRedisServer, "redis-server binary")
	fs.StringVar(&o.AerospikeHosts, "aerospike", "", "Aerospike hosts")
	fs.StringVar(&o.AerospikeNamespace, "aerospike-ns", "test", "Aerospike namespace")
	fs.IntVar(&o.Verify, "verify", 200, "requests checked for identical answers")
	ghzData := fs.String("ghz-data", "", "write the first weight's request stream as ghz -D JSON to this file and exit")
	var unusedArgs []string
	near := nearFlag(fs, &unusedArgs)
	fs.Lookup("near-cache").Usage = "near cache size of the grpc-near target's remote client (a size: 64MiB, 1GiB; env " + EnvNearCacheBytes + "); default the bidder's catalog.near_cache_bytes default"
	seeFlags(fs)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if near.set {
		o.NearCacheBytes = near.n
	}
	ws, err := c.finish(fs)
	if err != nil {
		return err
	}
	if *ghzData != "" {
		return writeGHZData(*ghzData, CatalogWorkload{Products: o.Products, Groups: o.Groups, IDs: ws[0], Uniform: o.Uniform}, o.Requests, c.seed, stderr)
	}
	o.Weights, o.Load, o.Seed, o.Exe, o.WorkDir, o.Log = ws, c.load, c.seed, c.exe, c.work, stderr
	if targets != "" {
		o.Targets = splitList(targets)
	}
	if o.Verify == 0 {
		o.Verify = -1
	}
	o.NodeArgs = append(o.NodeArgs, nodeSets.setArgs()...)
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	err = c.runAndWrite("store", stdout, stderr, func() (*Report, error) { return RunStore(ctx, o) })
	return err
}

func compareMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench compare", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	fail := fs.Bool("fail", false, "return an error (exit 1) when any metric regressed")
	seeFlags(fs)
	if err := cliflag.Parse(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: rtbd bench compare needs two report files A.json B.json, got %d arguments", ErrUsage, fs.NArg())
	}
	a, err := LoadReport(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := LoadReport(fs.Arg(1))
	if err != nil {
		return err
	}
	deltas := Compare(a, b)
	if err := WriteCompare(stdout, a, b, deltas); err != nil {
		return err
	}
	counts := map[Verdict]int{}
	var regressed []string
	for _, d := range deltas {
		counts[d.Verdict]++
		if d.Verdict == Regression {
			regressed = append(regressed, d.Target+" "+d.Metric)
		}
	}
	fmt.Fprintf(stdout, "\nverdicts: %d no change, %d regression, %d improvement, %d inconclusive\n",
		counts[NoChange], counts[Regression], counts[Improvement], counts[Inconclusive])
	if *fail && len(regressed) > 0 {
		return fmt.Errorf("%w: %s", ErrRegression, strings.Join(regressed, ", "))
	}
	return nil
}

func allMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var so StoreOptions
	var bo BidderOptions
	fs := flag.NewFlagSet("rtbd bench all", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	c.register(fs, 1000, 0, 8*time.Second, time.Second)
	storeRate := fs.Float64("store-rate", 1000, "store level offered rate, req/s")
	bidderRate := fs.Float64("bidder-rate", 300, "bidder level offered bid rate, req/s")
	skipBidder := fs.Bool("skip-bidder", false, "store level only")
	fs.IntVar(&so.Products, "products", 100_000, "store level catalog products")
	fs.IntVar(&so.Groups, "groups", 10, "store level catalog groups")
	fs.IntVar(&bo.Nodes, "nodes", 2, "catalog nodes of the remote bidder")
	near := nearFlag(fs, &bo.BidderArgs)
	seeFlags(fs)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if near.set {
		so.NearCacheBytes = near.n
	}
	ws, err := c.finish(fs)
	if err != nil {
		return err
	}
	var badRate error
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "rate" {
			badRate = fmt.Errorf("%w: rtbd bench all: use -store-rate and -bidder-rate instead of -rate", ErrUsage)
		}
	})
	if badRate != nil {
		return badRate
	}
	so.Weights, so.Load, so.Exe, so.Log = ws, c.load, c.exe, stderr
	so.Load.Rate = *storeRate
	bo.Weights, bo.Load, bo.Exe, bo.Log = ws, c.load, c.exe, stderr
	bo.Load.Rate, bo.Load.Tmax = *bidderRate, 100*time.Millisecond
	if c.work != "" {
		so.WorkDir, bo.WorkDir = filepath.Join(c.work, "store"), filepath.Join(c.work, "bidder")
	}
	if err := so.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if err := bo.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c.runAndWrite("all", stdout, stderr, func() (*Report, error) {
		rep, err := RunStore(ctx, so)
		if err != nil {
			if rep == nil {
				return nil, err
			}
			rep.Notes = append(rep.Notes, "store level aborted: "+err.Error())
		} else if !*skipBidder {
			brep, berr := RunBidder(ctx, bo)
			if berr != nil {
				rep.Notes = append(rep.Notes, "bidder level FAILED: "+berr.Error())
				err = berr
			}
			if brep != nil {
				mergeReport(rep, brep, "bidder.")
			}
		}
		rep.Title = "standard comparison: store level and bidder level"
		return rep, err
	})
}

func renderMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench render", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	out := fs.String("out", "", "output directory for latest.{txt,json,html}")
	quiet := fs.Bool("q", false, "no report text on stdout")
	seeFlags(fs)
	if err := cliflag.Parse(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: rtbd bench render needs one report file, got %d arguments", ErrUsage, fs.NArg())
	}
	rep, err := LoadReport(fs.Arg(0))
	if err != nil {
		return err
	}
	return writeOutputs(rep, "render", *out, *quiet, stdout, stderr)
}

// mergeReport appends b's results, searches, tables and notes to a, and
// its config under prefix.
func mergeReport(a, b *Report, prefix string) {
	a.Results = append(a.Results, b.Results...)
	a.Searches = append(a.Searches, b.Searches...)
	a.Tables = append(a.Tables, b.Tables...)
	for _, n := range b.Notes {
		a.Notes = append(a.Notes, strings.TrimSuffix(prefix, ".")+": "+n)
	}
	if a.Config == nil {
		a.Config = map[string]string{}
	}
	for k, v := range b.Config {
		a.Config[prefix+k] = v
	}
	a.UpdateRows()
}

// writeGHZData writes n requests of w as a JSON array of
// ProductMastersRequests (proto field names), the form ghz's -D takes; ghz
// sends them round-robin, so it replays the harness's stream.
func writeGHZData(path string, w CatalogWorkload, n int, seed uint64, stderr io.Writer) error {
	reqs, err := w.Requests(n, seed)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	var b bytes.Buffer
	b.WriteString("[\n")
	mo := protojson.MarshalOptions{UseProtoNames: true}
	for i, r := range reqs {
		j, err := mo.Marshal(r)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		b.Write(j)
		if i < len(reqs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	if err := writeFileAtomic(path, b.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench: wrote %d requests of %d products (seed %d) to %s\n", n, w.IDs, seed, path)
	return nil
}

// writeOutputs prints the text report to stdout (unless quiet) and, with
// out, writes out/latest.{txt,json,html} and a timestamped copy of each.
func writeOutputs(rep *Report, scenario, out string, quiet bool, stdout, stderr io.Writer) error {
	var txt, js, htm bytes.Buffer
	if err := WriteText(&txt, rep); err != nil {
		return err
	}
	if !quiet {
		if _, err := stdout.Write(txt.Bytes()); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	if out == "" {
		return nil
	}
	if err := WriteJSON(&js, rep); err != nil {
		return err
	}
	if err := WriteHTML(&htm, rep); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	stamp := rep.Created.UTC().Format("20060102T150405Z")
	for _, f := range []struct {
		ext string
		b   []byte
	}{{"txt", txt.Bytes()}, {"json", js.Bytes()}, {"html", htm.Bytes()}} {
		for _, name := range []string{"latest." + f.ext, fmt.Sprintf("%s-%s.%s", scenario, stamp, f.ext)} {
			if err := writeFileAtomic(filepath.Join(out, name), f.b); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stderr, "bench: wrote %s/latest.{txt,json,html} and %s-%s.*\n", out, scenario, stamp)
	return nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// gitRev is the VCS revision stamped into the binary by go build ("" when
// none), with "-dirty" for a modified tree.
func gitRev() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

func soakMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var o SoakOptions
	var faults string
	var bidderSets, nodeSets multiFlag
	fs := flag.NewFlagSet("rtbd bench soak", flag.ContinueOnError)
	fs.DurationVar(&o.Duration, "duration", 10*time.Minute, "measured time; the faults are spread over it")
	fs.DurationVar(&o.Warmup, "warmup", 30*time.Second, "load before the measured phase (no faults, not counted)")
	fs.Float64Var(&o.Rate, "rate", 100, "bid requests/s")
	fs.Float64Var(&o.EventRate, "event-rate", 0, "pixel events/s (default rate/5)")
	fs.Float64Var(&o.ClickRate, "click-rate", 0, "clicks/s (default rate/20)")
	fs.Float64Var(&o.WinRatio, "win-ratio", 0.5, "share of bids whose nurl and burl are sent")
	fs.Float64Var(&o.ReplayRatio, "replay-ratio", 0.05, "share of accepted bills sent again to the other bidder")
	fs.DurationVar(&o.NoticeDelay, "notice-delay", 500*time.Millisecond, "notices are sent this to twice this after the bid")
	fs.DurationVar(&o.Tmax, "tmax", 100*time.Millisecond, "bid deadline: answers past it are late")
	fs.DurationVar(&o.Timeout, "timeout", time.Second, "hard per-request deadline")
	fs.IntVar(&o.Rounds, "rounds", 2, "times each fault runs")
	fs.StringVar(&faults, "faults", "", "fault kinds (default all): "+strings.Join(SoakFaultKinds, ","))
	fs.DurationVar(&o.FaultGrace, "fault-grace", 5*time.Second, "errors this long after a fault's recovery are still its")
	fs.DurationVar(&o.Outage, "outage", 3*time.Second, "how long a killed node or redis-server stays down")
	fs.StringVar(&o.Netns, "netns", "auto", "network namespaces for the catalog nodes: auto, on, off (SIGSTOP instead)")
	fs.DurationVar(&o.RSSWarmup, "rss-warmup", 0, "RSS not judged this long after a process starts (default min(60s, duration/3))")
	o.DemoSize.register(fs)
	fs.StringVar(&o.RedisServer, "redis-server", DefaultRedisServer, "redis-server binary")
	fs.Var(&bidderSets, "bidder-set", "bidder setting KEY=VALUE")
	fs.Var(&nodeSets, "node-set", "catalog node setting KEY=VALUE")
	fs.Uint64Var(&o.Seed, "seed", 1, "request stream seed")
	fs.StringVar(&c.out, "out", "", "output directory for latest.{txt,json,html}")
	fs.StringVar(&c.title, "title", "", "report title")
	fs.BoolVar(&c.quiet, "q", false, "no report text on stdout")
	fs.StringVar(&o.WorkDir, "work", "", "directory for the children's logs and data (kept)")
	fs.StringVar(&o.Exe, "rtbd", "", "rtbd binary (default: this executable)")
	seeFlags(fs)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if faults != "" {
		o.Faults = splitList(faults)
	}
	o.Log = stderr
	o.BidderArgs = bidderSets.setArgs()
	o.NodeArgs = nodeSets.setArgs()
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	err := c.runAndWrite("soak", stdout, stderr, func() (*Report, error) { return RunSoak(ctx, o) })
	if err != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("bench: interrupted: %w", err)
	}
	return err
}
