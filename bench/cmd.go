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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtbd/rtbd/internal/cliflag"
)

var (
	// ErrUsage is wrapped by Main's errors for bad arguments (exit code 2).
	ErrUsage = errors.New("bench: usage")
	// ErrRegression is returned by `rtbd bench compare -fail` when a metric of a target regressed.
	ErrRegression = errors.New("bench: regression")
)

// scenario is one `rtbd bench` subcommand: its name, a line of help and the function that parses
// its flags and runs it.
type scenario struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// scenarios are the subcommands in the order of the help (set by init: a scenario's -h prints
// Usage, which lists them); Scenarios are their names.
var (
	scenarios []scenario
	Scenarios []string
)

func init() {
	scenarios = []scenario{
		{"store", "one ProductMastersRequest stream at one load to each product store: the local index, a catalog node over gRPC (and its near cache), Redis, Aerospike", storeMain},
		{"bidder", "a bidder on the local index beside one on catalog nodes, separate processes from one demo: bids, win notices and pixel events together", bidderMain},
		{"all", "the standard comparison (make bench): store level, then bidder level, one report", allMain},
		{"near", "remote vs local with the near cache (make bench-near): bidder level with Zipf and uniform users, then store level", nearMain},
		{"soak", "fault injection (make bench-soak): two bidders, redis-server, two catalog nodes under load while processes are killed and cut off; every accepted notice reconciled", soakMain},
		{"scale", "the talk's scale (make bench-scale): 20M-100M products through the bulk ingest, lookups through one node and a bidder on it", scaleMain},
		{"auction", "bid shading and pacing in-process on a fake clock: surplus against the oracle's, cost per win, a compressed day of pacing; -bidders N: N bidders sharing one redis-server", func(_ context.Context, args []string, stdout, stderr io.Writer) error {
			return auctionMain(args, stdout, stderr)
		}},
		{"recommend", "offline evaluation of the similar-product lists: hit rate and recall at k of each user's held-out last view, coverage", recommendMain},
		{"recommend-lists", "the catalog's recommendations for the viewed products of users of an embedded user store, as the JSON Lines rtbd users recommend reads", recommendListsMain},
		{"compare", "per target and metric the change from report A to B with a noise-aware verdict; -fail exits 1 on a regression", compareMain},
	}
	for _, s := range scenarios {
		Scenarios = append(Scenarios, s.name)
	}
}

// Usage writes the help of `rtbd bench`.
func Usage(w io.Writer) {
	fmt.Fprintf(w, "rtbd bench SCENARIO [flags]: start what it measures on 127.0.0.1, load it, report (bench/README.md)\n\n")
	for _, s := range scenarios {
		fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
	}
	fmt.Fprintf(w, "\nrtbd bench SCENARIO -h lists its flags.\n")
}

// Main runs `rtbd bench` with args (after "bench"): reports to stdout, progress to stderr. Bad
// arguments return an error wrapping ErrUsage; -h prints Usage and returns flag.ErrHelp.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		Usage(stderr)
		return fmt.Errorf("%w: rtbd bench needs a scenario: %s", ErrUsage, strings.Join(Scenarios, ", "))
	}
	if slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		Usage(stdout)
		return flag.ErrHelp
	}
	for _, s := range scenarios {
		if s.name != args[0] {
			continue
		}
		err := s.run(ctx, args[1:], stdout, stderr)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("bench: interrupted: %w", err)
		}
		return err
	}
	return fmt.Errorf("%w: unknown scenario %q (want one of %s)", ErrUsage, args[0], strings.Join(Scenarios, ", "))
}

// flagsSeen, while FlagSets runs, collects each scenario's flag set just before it parses.
var (
	flagSetsMu sync.Mutex
	flagsSeen  atomic.Pointer[[]*flag.FlagSet]
)

// FlagSets returns the flag set of every scenario exactly as Main builds it (named by its command,
// "rtbd bench store"), for the documentation test: it runs each scenario with -h.
func FlagSets() []*flag.FlagSet {
	flagSetsMu.Lock()
	defer flagSetsMu.Unlock()
	var out []*flag.FlagSet
	flagsSeen.Store(&out)
	defer flagsSeen.Store(nil)
	for _, s := range Scenarios {
		_ = Main(context.Background(), []string{s, "-h"}, io.Discard, io.Discard) // flag.ErrHelp
	}
	return out
}

// seeFlags hands fs to FlagSets when it asked for it.
func seeFlags(fs *flag.FlagSet) {
	if out := flagsSeen.Load(); out != nil {
		*out = append(*out, fs)
	}
}

// parseFlags parses the flags of a scenario that takes no positional arguments; a bad
// environment default of -near-cache is a usage error too.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	seeFlags(fs)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if near, ok := f.Value.(*nearCacheFlag); ok && near.envErr != nil {
			err = fmt.Errorf("%w: %s: %w", ErrUsage, fs.Name(), near.envErr)
		}
	})
	return err
}

// common holds the flags every scenario has.
type common struct {
	load       LoadModel
	out, title string
	work, exe  string
	quiet      bool
	weights    string
}

func (c *common) register(fs *flag.FlagSet, defRate float64, defTmax, defDuration, defWarmup time.Duration) {
	fs.Float64Var(&c.load.Rate, "rate", defRate, "open-loop offered rate, req/s")
	fs.IntVar(&c.load.Concurrency, "concurrency", 0, "closed loop: workers")
	fs.BoolVar(&c.load.FindMax, "find-max", false, "search the highest rate holding -p99")
	fs.DurationVar(&c.load.P99, "p99", loadDefaults.P99, "find-max objective")
	fs.Float64Var(&c.load.MaxRate, "max-rate", loadDefaults.MaxRate, "find-max cap, req/s")
	fs.DurationVar(&c.load.Duration, "duration", defDuration, "measured time per run")
	fs.DurationVar(&c.load.Warmup, "warmup", defWarmup, "discarded warmup per run")
	fs.DurationVar(&c.load.Timeout, "timeout", DefaultTimeout, "hard per-request deadline")
	fs.DurationVar(&c.load.Tmax, "tmax", defTmax, "soft deadline (deadline misses)")
	fs.IntVar(&c.load.MaxInFlight, "max-in-flight", DefaultMaxInFlight, "open-loop concurrency bound")
	fs.StringVar((*string)(&c.load.Arrival), "arrival", string(Uniform), "uniform or poisson")
	fs.Uint64Var(&c.load.Seed, "seed", 1, "request stream seed")
	fs.StringVar(&c.weights, "weights", joinInts(TalkWeights), "products per request")
	c.registerRun(fs)
}

// registerRun registers where a run writes and what it starts (soak's too).
func (c *common) registerRun(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "output directory for latest.{txt,json,html}")
	fs.StringVar(&c.title, "title", "", "report title")
	fs.BoolVar(&c.quiet, "q", false, "no report text on stdout")
	fs.StringVar(&c.work, "work", "", "directory for the children's logs and data (kept)")
	fs.StringVar(&c.exe, "rtbd", "", "rtbd binary (default: this executable)")
}

// parse parses fs (parseFlags), then checks the common flags and returns the weights.
func (c *common) parse(fs *flag.FlagSet, args []string, stderr io.Writer) ([]int, error) {
	if err := parseFlags(fs, args, stderr); err != nil {
		return nil, err
	}
	ws, err := parseInts(c.weights)
	if err != nil {
		return nil, fmt.Errorf("%w: -weights: %v", ErrUsage, err)
	}
	if err := c.load.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return ws, nil
}

// runAndWrite runs a scenario whose options' problems are invalid (a usage error when not nil), then
// titles, stamps and writes its report; the scenario's error wins.
func (c *common) runAndWrite(kind string, invalid error, stdout, stderr io.Writer, run func() (*Report, error)) error {
	if invalid != nil {
		return fmt.Errorf("%w: %w", ErrUsage, invalid)
	}
	rep, err := run()
	if rep != nil {
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

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// splitList splits a comma-separated list, trimming spaces and dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
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

// multiFlag is a repeatable flag: every value, in order.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// setFlag is a repeatable KEY=VALUE flag (-bidder-set, -node-set): each value appends "-set",
// KEY=VALUE to the started processes' arguments.
type setFlag struct{ args *[]string }

func (f setFlag) String() string { return "" }

func (f setFlag) Set(v string) error {
	*f.args = append(*f.args, "-set", v)
	return nil
}

func storeMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var o StoreOptions
	var targets string
	fs := flag.NewFlagSet("rtbd bench store", flag.ContinueOnError)
	c.register(fs, 1000, 0, 20*time.Second, 2*time.Second)
	fs.IntVar(&o.Products, "products", storeDefaults.Products, "catalog products")
	fs.IntVar(&o.Groups, "groups", storeDefaults.Groups, "catalog product groups")
	fs.BoolVar(&o.Uniform, "uniform", false, "uniform popularity")
	fs.IntVar(&o.Requests, "requests", storeDefaults.Requests, "distinct requests per weight")
	fs.StringVar(&targets, "targets", "", "local,grpc,grpc-near,redis,aerospike, measured in this order (default all; aerospike with -aerospike)")
	fs.StringVar(&o.DataDir, "data", "", "index directory: used if it holds a published index of -products and -groups, else built there and kept")
	fs.StringVar(&o.GRPCTarget, "grpc", "", "running catalog nodes serving -products and -groups (static:///HOST:PORT,...) instead of a started one")
	fs.IntVar(&o.ConnsPerNode, "conns-per-node", 0, "remote client connections per node (default the client's)")
	fs.Var(setFlag{&o.NodeArgs}, "node-set", "catalog node setting KEY=VALUE")
	fs.StringVar(&o.RedisAddr, "redis", "", "running Redis host:port instead of a started redis-server (products written to keys p:*)")
	fs.StringVar(&o.RedisServer, "redis-server", DefaultRedisServer, "redis-server binary")
	fs.StringVar(&o.AerospikeHosts, "aerospike", "", "Aerospike hosts host:port[,host:port]: the aerospike target")
	fs.StringVar(&o.AerospikeNamespace, "aerospike-ns", storeDefaults.AerospikeNamespace, "Aerospike namespace (set products)")
	fs.IntVar(&o.Verify, "verify", storeDefaults.Verify, "requests per weight checked for identical answers before measuring (0: none)")
	near := nearFlag(fs, new([]string))
	fs.Lookup("near-cache").Usage = "near cache size of the grpc-near target's remote client (a size: 64MiB, 1GiB; env " + EnvNearCacheBytes + "); default the bidder's catalog.near_cache_bytes default"
	ws, err := c.parse(fs, args, stderr)
	if err != nil {
		return err
	}
	o.Weights, o.Load, o.Exe, o.WorkDir, o.Log = ws, c.load, c.exe, c.work, stderr
	o.NearCacheBytes, o.Targets = near.n, splitList(targets)
	if o.Verify == 0 {
		o.Verify = -1
	}
	return c.runAndWrite("store", o.Validate(), stdout, stderr, func() (*Report, error) { return RunStore(ctx, o) })
}

func compareMain(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench compare", flag.ContinueOnError)
	fail := fs.Bool("fail", false, "return an error (exit 1) when any metric regressed")
	seeFlags(fs)
	if err := cliflag.Parse(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: rtbd bench compare needs two report files A.json B.json, got %d arguments", ErrUsage, fs.NArg())
	}
	a, errA := LoadReport(fs.Arg(0))
	b, errB := LoadReport(fs.Arg(1))
	if err := errors.Join(errA, errB); err != nil {
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
	c.register(fs, 1000, 0, 8*time.Second, time.Second)
	storeRate := fs.Float64("store-rate", 1000, "store level offered rate, req/s")
	bidderRate := fs.Float64("bidder-rate", 300, "bidder level offered bid rate, req/s")
	skipBidder := fs.Bool("skip-bidder", false, "store level only")
	fs.IntVar(&so.Products, "products", storeDefaults.Products, "store level catalog products")
	fs.IntVar(&so.Groups, "groups", storeDefaults.Groups, "store level catalog groups")
	fs.IntVar(&bo.Nodes, "nodes", bidderDefaults.Nodes, "catalog nodes of the remote bidder")
	near := nearFlag(fs, &bo.BidderArgs)
	ws, err := c.parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if isSet(fs, "rate") {
		return fmt.Errorf("%w: rtbd bench all: use -store-rate and -bidder-rate instead of -rate", ErrUsage)
	}
	so.Weights, so.Load, so.Exe, so.Log, so.NearCacheBytes = ws, c.load, c.exe, stderr, near.n
	so.Load.Rate = *storeRate
	bo.Weights, bo.Load, bo.Exe, bo.Log = ws, c.load, c.exe, stderr
	bo.Load.Rate, bo.Load.Tmax = *bidderRate, 100*time.Millisecond
	if c.work != "" {
		so.WorkDir, bo.WorkDir = filepath.Join(c.work, "store"), filepath.Join(c.work, "bidder")
	}
	return c.runAndWrite("all", errors.Join(so.Validate(), bo.Validate()), stdout, stderr, func() (*Report, error) {
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

// mergeReport appends b's results, searches, tables and notes to a, and its config under prefix.
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
}

// writeOutputs prints the text report to stdout (unless quiet) and, with out, writes
// out/latest.{txt,json,html} and a dated copy of each (out/2006-01-02T150405Z-scenario.*).
func writeOutputs(rep *Report, scenario, out string, quiet bool, stdout, stderr io.Writer) error {
	if !quiet {
		if err := WriteText(stdout, rep); err != nil {
			return err
		}
	}
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	stamp := rep.Created.UTC().Format("2006-01-02T150405Z")
	for ext, write := range map[string]func(io.Writer, *Report) error{"txt": WriteText, "json": WriteJSON, "html": WriteHTML} {
		var b bytes.Buffer
		if err := write(&b, rep); err != nil {
			return err
		}
		for _, name := range []string{"latest." + ext, fmt.Sprintf("%s-%s.%s", stamp, scenario, ext)} {
			if err := writeFileAtomic(filepath.Join(out, name), b.Bytes()); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stderr, "bench: wrote %s/latest.{txt,json,html} and %s-%s.*\n", out, stamp, scenario)
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

// gitRev is the VCS revision go build stamped into the binary ("" when none), "-dirty" for a
// modified tree.
func gitRev() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	rev := vcs["vcs.revision"]
	rev = rev[:min(len(rev), 12)]
	if rev != "" && vcs["vcs.modified"] == "true" {
		rev += "-dirty"
	}
	return rev
}

func soakMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var o SoakOptions
	var faults string
	fs := flag.NewFlagSet("rtbd bench soak", flag.ContinueOnError)
	d := SoakOptions{}.withDefaults() // the flags' defaults; the derived ones (event-rate, click-rate, rss-warmup) stay 0
	fs.DurationVar(&o.Duration, "duration", d.Duration, "measured time; the faults are spread over it")
	fs.DurationVar(&o.Warmup, "warmup", 30*time.Second, "load before the measured phase (no faults, not counted)")
	fs.Float64Var(&o.Rate, "rate", d.Rate, "bid requests/s")
	fs.Float64Var(&o.EventRate, "event-rate", 0, "pixel events/s (default rate/5)")
	fs.Float64Var(&o.ClickRate, "click-rate", 0, "clicks/s (default rate/20)")
	fs.Float64Var(&o.WinRatio, "win-ratio", d.WinRatio, "share of bids whose nurl and burl are sent")
	fs.Float64Var(&o.ReplayRatio, "replay-ratio", d.ReplayRatio, "share of accepted bills sent again to the other bidder")
	fs.DurationVar(&o.NoticeDelay, "notice-delay", d.NoticeDelay, "notices are sent this to twice this after the bid")
	fs.DurationVar(&o.Tmax, "tmax", d.Tmax, "bid deadline: answers past it are late")
	fs.DurationVar(&o.Timeout, "timeout", d.Timeout, "hard per-request deadline")
	fs.IntVar(&o.Rounds, "rounds", d.Rounds, "times each fault runs")
	fs.StringVar(&faults, "faults", "", "fault kinds (default all): "+strings.Join(SoakFaultKinds, ","))
	fs.DurationVar(&o.FaultGrace, "fault-grace", d.FaultGrace, "errors this long after a fault's recovery are still its")
	fs.DurationVar(&o.Outage, "outage", d.Outage, "how long a killed node or redis-server stays down")
	fs.DurationVar(&o.RSSWarmup, "rss-warmup", 0, "RSS not judged this long after a process starts (default min(60s, duration/3))")
	o.DemoSize.register(fs)
	fs.StringVar(&o.RedisServer, "redis-server", d.RedisServer, "redis-server binary")
	fs.Var(setFlag{&o.BidderArgs}, "bidder-set", "bidder setting KEY=VALUE")
	fs.Var(setFlag{&o.NodeArgs}, "node-set", "catalog node setting KEY=VALUE")
	fs.Uint64Var(&o.Seed, "seed", 1, "request stream seed")
	c.registerRun(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	o.Faults, o.WorkDir, o.Exe, o.Log = splitList(faults), c.work, c.exe, stderr
	return c.runAndWrite("soak", o.Validate(), stdout, stderr, func() (*Report, error) { return RunSoak(ctx, o) })
}
