package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/catalog/workload"
	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/childproc"
)

// The scale scenario's catalog bounds and disk estimate: a product needs
// ScaleDiskPerProduct bytes while it is ingested (about 300 in the index
// plus the external sort's run files, removed once the tables are
// written, with a margin), and ScaleDiskReserve stays free.
const (
	ScaleMaxProducts    = 100_000_000 // the talk's catalog on one node
	ScaleMinProducts    = 20_000_000  // the smallest the disk check accepts
	ScaleDiskPerProduct = 700
	ScaleDiskReserve    = 8 << 30
)

// ScaleOptions configure RunScale: each field is the `rtbd bench scale` flag named beside it
// (bench/FLAGS.md), and a zero value takes that flag's default.
type ScaleOptions struct {
	Products             int           // -products; 0: the index's count in DataDir, else the most its free disk fits (ScaleProductsForDisk)
	Groups               int           // -groups: the demo's campaigns bid on groups 1..8
	DataDir              string        // -data: the index, reused when this scenario built it (scale-ingest.json)
	Users                int           // -users: per popularity, in the bidder's user store
	IDs                  int           // -ids: per lookup; 15 is the medium template's 5 viewed + 10 recommended
	StoreRate, BidRate   float64       // -rate, -bid-rate: the store-level and bidder-level runs' open-loop rates
	Duration, Warmup     time.Duration // -duration, -warmup: of each run; a zero Warmup is none
	SkipBidder           bool          // -skip-bidder
	IngestOnly           bool          // -ingest-only
	Exe                  string        // -rtbd
	BidderArgs, NodeArgs []string      // -bidder-set, -node-set: extra flags of the started bidder and node
	WorkDir              string        // -work: logs and the demo directory; "": a temporary one
	Log                  io.Writer     // progress lines; nil: none
}

func (o ScaleOptions) withDefaults() ScaleOptions {
	o.Groups = cmp.Or(o.Groups, 8)
	o.DataDir = cmp.Or(o.DataDir, "/tmp/rtbd-scale")
	o.Users = cmp.Or(o.Users, 100_000)
	o.IDs = cmp.Or(o.IDs, 15)
	o.StoreRate = cmp.Or(o.StoreRate, 300)
	o.BidRate = cmp.Or(o.BidRate, 100)
	o.Duration = cmp.Or(o.Duration, 20*time.Second)
	o.Log = cmp.Or(o.Log, io.Discard)
	return o
}

// Validate reports every problem of o (after defaults).
func (o ScaleOptions) Validate() error {
	o = o.withDefaults()
	var p problems
	p.check(o.Products == 0 || o.Products >= max(o.Groups, 1), "products: must be 0 (from the free disk) or >= groups, got %d", o.Products)
	p.check(o.Groups >= 1 && o.Groups <= 8, "groups: must be 1..8 (the demo campaigns bid on groups 1..8), got %d", o.Groups)
	p.check(o.Users >= 1, "users: must be >= 1, got %d", o.Users)
	p.check(o.IDs >= 2 && o.IDs <= 100, "ids: must be 2..100, got %d", o.IDs)
	p.check(o.StoreRate > 0 && o.BidRate > 0, "rate, bid-rate: must be > 0")
	p.check(o.Duration > 0, "duration: must be > 0")
	return p.err()
}

// ScaleProductsForDisk is the largest multiple of a million products, at
// most ScaleMaxProducts, whose ingest fits free bytes; an error below
// ScaleMinProducts.
func ScaleProductsForDisk(free uint64) (int, error) {
	var n uint64
	if free > ScaleDiskReserve {
		n = (free - ScaleDiskReserve) / ScaleDiskPerProduct
	}
	n = min(n/1_000_000*1_000_000, ScaleMaxProducts)
	if n < ScaleMinProducts {
		return 0, fmt.Errorf("%w: %.1f GB free holds %d products (%d bytes each, %d GiB left free), fewer than the scenario's minimum %d; set the count (-products, RTBD_BENCH_SCALE_PRODUCTS) or free disk",
			ErrInvalid, float64(free)/1e9, n, ScaleDiskPerProduct, ScaleDiskReserve>>30, ScaleMinProducts)
	}
	return int(n), nil
}

// freeDisk is the space available to unprivileged users on the file
// system of dir (or of its nearest existing parent).
func freeDisk(dir string) (uint64, error) {
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Statfs_t
		err := unix.Statfs(d, &st)
		if err == nil {
			return st.Bavail * uint64(st.Bsize), nil
		}
		if !errors.Is(err, unix.ENOENT) || d == filepath.Dir(d) {
			return 0, fmt.Errorf("bench: statfs %s: %w", d, err)
		}
	}
}

// ScaleIngest is what the scale scenario measured of its ingest, kept
// beside the index (scaleIngestFile) for later runs on it.
type ScaleIngest struct {
	Products    int     `json:"products"`
	Groups      int     `json:"groups"`
	Start       string  `json:"start"`
	WallSec     float64 `json:"wall_sec"`
	RowsPerSec  float64 `json:"rows_per_sec"`
	MaxRSSBytes int64   `json:"max_rss_bytes"` // the ingest's peak RSS (ru_maxrss)
	CPUSec      float64 `json:"cpu_sec"`
	// GeneratorCPUSec is the harness's CPU generating the feed.
	GeneratorCPUSec float64 `json:"generator_cpu_sec"`
	IndexBytes      int64   `json:"index_bytes"`
	FreeBytesBefore uint64  `json:"free_bytes_before"`
	Summary         string  `json:"summary,omitempty"`
}

const scaleIngestFile = "scale-ingest.json"

// readScaleIngest reads the ingest record beside an index in dir; false
// when there is none (or no published index).
func readScaleIngest(dir string) (ScaleIngest, bool) {
	var si ScaleIngest
	if _, err := catalog.ReadPointer(dir, catalog.CurrentFile); err != nil {
		return si, false
	}
	b, err := os.ReadFile(filepath.Join(dir, scaleIngestFile))
	if err != nil || json.Unmarshal(b, &si) != nil || si.Products < 1 {
		return si, false
	}
	return si, true
}

// dirBytes is the disk used by the files under dir (allocated blocks,
// each inode once), like du.
func dirBytes(dir string) (int64, error) {
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st := info.Sys().(*syscall.Stat_t); !seen[st.Ino] {
			seen[st.Ino] = true
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}

// runScaleIngest streams the synthetic feed of n products (feedgen, seed
// 1, CSV) through a pipe into `rtbd ingest -data dir -format csv -` (the
// bulk path) and measures the ingest process.
func runScaleIngest(ctx context.Context, exe, dir string, n, groups int, logFile string, free uint64, logf func(string, ...any)) (ScaleIngest, error) {
	si := ScaleIngest{Products: n, Groups: groups, FreeBytesBefore: free}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return si, fmt.Errorf("bench: %w", err)
	}
	pr, stdin, err := os.Pipe()
	if err != nil {
		return si, fmt.Errorf("bench: %w", err)
	}
	cpu0, _ := selfCPU()
	t0 := time.Now()
	c, err := childproc.Start(childproc.Spec{Name: "rtbd ingest", Path: exe, Stdin: pr, Log: logFile,
		Args: []string{"ingest", "-data", dir, "-format", "csv", "-progress", "log", "-log-interval", "30s", "-"}})
	pr.Close()
	if err != nil {
		stdin.Close()
		return si, err
	}
	defer context.AfterFunc(ctx, c.Kill)()
	bw := bufio.NewWriterSize(stdin, 1<<20)
	_, werr := feedgen.Write(bw, feed.CSV, feedgen.Options{Products: n, Groups: groups, Seed: 1})
	werr = cmp.Or(werr, bw.Flush())
	_ = stdin.Close()
	cpu1, _ := selfCPU()
	if err := c.Err(); err != nil {
		return si, fmt.Errorf("%w: rtbd ingest of %d products: %w (feed: %v); its output ends: %s", childproc.ErrChild, n, err, werr, c.Tail())
	}
	if werr != nil {
		return si, fmt.Errorf("bench: writing the feed into rtbd ingest: %w", werr)
	}
	wall := time.Since(t0)
	si.Start, si.WallSec, si.RowsPerSec = t0.UTC().Format(time.RFC3339), wall.Seconds(), float64(n)/wall.Seconds()
	si.GeneratorCPUSec = (cpu1 - cpu0).Seconds()
	si.CPUSec = (c.State().UserTime() + c.State().SystemTime()).Seconds()
	if ru, ok := c.State().SysUsage().(*syscall.Rusage); ok {
		si.MaxRSSBytes = ru.Maxrss << 10
	}
	for _, line := range strings.Split(c.Tail(), "\n") {
		if strings.Contains(line, "rows/s") || strings.Contains(line, "products") && strings.Contains(line, "elapsed") {
			si.Summary = strings.TrimSpace(line)
		}
	}
	if si.IndexBytes, err = dirBytes(dir); err != nil {
		return si, fmt.Errorf("bench: size of %s: %w", dir, err)
	}
	b, _ := json.MarshalIndent(si, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, scaleIngestFile), append(b, '\n'), 0o644); err != nil {
		return si, fmt.Errorf("bench: %w", err)
	}
	logf("ingested %d products in %.0f s (%.0f rows/s), ingest peak RSS %d MiB, CPU %.0f s; index %.2f GB",
		n, si.WallSec, si.RowsPerSec, si.MaxRSSBytes>>20, si.CPUSec, float64(si.IndexBytes)/1e9)
	return si, nil
}

// evictFromPageCache asks the kernel to drop the page cache of every file
// under dir (posix_fadvise DONTNEED; only clean pages of these files go,
// nothing else on the machine), so that the next lookups read the disk.
func evictFromPageCache(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return nil // removed meanwhile
		}
		defer f.Close()
		return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
}

// scaleUsers are the scale scenario's users, uniform ids first:
// scale-u-N and scale-z-N (Zipf-popular ids), N = 1..Users.
var scaleUsers = []benchUsers{{prefix: "scale-u-", uniform: true, seed: 21}, {prefix: "scale-z-", seed: 22}}

// RunScale runs the talk's scale: a catalog of Products ingested through
// the bulk path from a feed generated into `rtbd ingest`, then one catalog
// node at default caches measured at IDs-product lookups with uniform ids
// (mostly cold) and Zipf ids, through catalog/remote and through a bidder
// on the remote catalog whose users viewed products of the big catalog.
func RunScale(ctx context.Context, o ScaleOptions) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	logf := logTo(o.Log, "bench: ")
	var cleanups cleanupStack
	defer cleanups.run()
	exe, err := executable(o.Exe)
	if err != nil {
		return nil, err
	}
	workDir, err := makeWorkDir(o.WorkDir, &cleanups)
	if err != nil {
		return nil, err
	}
	si, err := scaleIndex(ctx, o, exe, workDir, logf)
	if err != nil {
		return nil, err
	}
	meta := Meta{Title: fmt.Sprintf("the talk's scale: %d products on one catalog node", si.Products), Config: map[string]string{
		"scenario": "scale", "products": strconv.Itoa(si.Products), "groups": strconv.Itoa(si.Groups), "ids": strconv.Itoa(o.IDs),
		"store_rate": fmtRate(o.StoreRate), "bid_rate": fmtRate(o.BidRate), "duration": o.Duration.String(), "warmup": o.Warmup.String(),
		"users": strconv.Itoa(o.Users), "data": o.DataDir,
	}, Notes: scaleIngestNotes(si)}
	rep := NewReport(meta)
	if o.IngestOnly {
		return rep, nil
	}

	// The node at default caches.
	node := newCatalogNode("catalog-node", exe, o.DataDir, workDir, o.NodeArgs)
	if err := node.launch(ctx, &cleanups, logf); err != nil {
		return rep, err
	}
	st0, _ := readStatus(node.PID())
	client, err := dialCatalog(ctx, remote.Options{Target: "static:///" + node.Addr(), CallTimeout: 5 * time.Second}, &cleanups)
	if err != nil {
		return rep, err
	}
	lookups := func(name string, uniform bool, n int, seed uint64) (*storeTarget, error) {
		reqs, err := workload.Catalog{Products: si.Products, Groups: si.Groups, IDs: o.IDs, Uniform: uniform}.Requests(n, seed)
		return &storeTarget{name: name, store: client, stream: &requestStream{reqs: reqs}}, err
	}

	// Warm-up (other seeds than the measured runs): 20,000 Zipf lookups,
	// then 5,000 uniform ones, so that the node's own cache holds what a
	// node serving for a while holds (index and filter blocks, popular
	// products) before the page cache is dropped for the cold runs.
	var warmed []string
	for _, uniform := range []bool{false, true} {
		n := 20_000
		if uniform {
			n = 5_000
		}
		t, err := lookups("warm-up", uniform, n, 99)
		if err != nil {
			return rep, err
		}
		wres, err := Run(ctx, t, Options{Concurrency: 8, Requests: int64(n), Timeout: 5 * time.Second})
		if err != nil {
			return rep, fmt.Errorf("bench: warm-up: %w", err)
		}
		warmed = append(warmed, fmt.Sprintf("%d %s (%.0f/s)", wres.Requests, scalePopularity(uniform), wres.AchievedRate))
	}
	st1, _ := readStatus(node.PID())
	rep.Notes = append(rep.Notes, fmt.Sprintf("catalog node at default caches: RSS %d MiB when ready, %d MiB after a warm-up of %s lookups of %d ids (closed loop, 8 workers); peak %d MiB",
		st0.VmRSSBytes>>20, st1.VmRSSBytes>>20, strings.Join(warmed, " then "), o.IDs, st1.VmHWMBytes>>20))
	logf("%s", rep.Notes[len(rep.Notes)-1])

	// The measured runs, uniform ids first, each after the index's files
	// are evicted from the page cache: uniform ids are mostly cold.
	var entries []TableEntry
	measure := func(group string, load LoadModel, t Target, w Watch, uniform bool) error {
		if uniform {
			if err := evictFromPageCache(o.DataDir); err != nil {
				logf("evicting the index from the page cache: %v", err)
			}
		}
		logf("run %s: %s req/s open loop for %v", t.Name(), fmtRate(load.Rate), o.Duration)
		res, _, err := load.run(ctx, t, w)
		if res != nil {
			if uniform {
				res.Notes = append(res.Notes, "the index's files were evicted from the page cache (posix_fadvise DONTNEED) just before: uniform ids over the whole catalog are mostly cold")
			}
			rep.Results = append(rep.Results, res)
			entries = append(entries, TableEntry{Result: res, Group: group})
			logf("  %s: %s, p99.9 %s ms, errors %d, no-bids %d", res.Target, summary(res), fmtMs(usToMs(res.Latency.P999Us)), res.Errors.Total, res.NoBids)
		}
		if err != nil {
			return fmt.Errorf("bench: %s: %w", t.Name(), err)
		}
		return nil
	}
	nodeLoad := LoadModel{Options: Options{Rate: o.StoreRate, Duration: o.Duration, Warmup: o.Warmup, Timeout: 5 * time.Second, Seed: 1}}
	for _, uniform := range []bool{true, false} {
		t, err := lookups(fmt.Sprintf("node %s/%d", scalePopularity(uniform), o.IDs), uniform, 50_000, 1)
		if err != nil {
			return rep, err
		}
		if err := measure("store level (gRPC GetProductMasters)", nodeLoad, t, node.watch(), uniform); err != nil {
			return rep, err
		}
	}
	if !o.SkipBidder {
		b, err := startScaleBidder(ctx, o, si, exe, workDir, node, &cleanups, logf)
		if err != nil {
			return rep, err
		}
		bidLoad := LoadModel{Options: Options{Rate: o.BidRate, Duration: o.Duration, Warmup: o.Warmup, Timeout: time.Second, Tmax: 100 * time.Millisecond, Seed: 1}}
		watch := Watch{Processes: append(b.watch().Processes, node.watch().Processes...)}
		for _, u := range scaleUsers {
			wl := bidWorkload{users: o.Users, weight: 15, userPrefix: u.prefix}
			t := bidTarget(fmt.Sprintf("bidder %s/%d", scalePopularity(u.uniform), o.IDs), b.Addr(), wl, nil, 256)
			if err := measure("bidder level (remote catalog)", bidLoad, t, watch, u.uniform); err != nil {
				return rep, err
			}
		}
	}
	stEnd, _ := readStatus(node.PID())
	rep.Notes = append(rep.Notes, fmt.Sprintf("catalog node RSS at the end: %d MiB (peak %d MiB)", stEnd.VmRSSBytes>>20, stEnd.VmHWMBytes>>20))
	rep.Tables = append(rep.Tables, BuildTable(fmt.Sprintf("The talk's scale: %d products, %d-id lookups", si.Products, o.IDs), entries))
	return rep, nil
}

// scalePopularity names the ids' popularity in target names and notes.
func scalePopularity(uniform bool) string {
	if uniform {
		return "uniform"
	}
	return "zipf"
}

// scaleIndex returns the record of the index in DataDir, ingesting it
// first into an empty DataDir.
func scaleIndex(ctx context.Context, o ScaleOptions, exe, workDir string, logf func(string, ...any)) (ScaleIngest, error) {
	si, have := readScaleIngest(o.DataDir)
	if have && (o.Products == 0 || o.Products == si.Products) && si.Groups == o.Groups {
		logf("using the index in %s: %d products in %d groups, ingested %s", o.DataDir, si.Products, si.Groups, si.Start)
		return si, nil
	}
	if ents, _ := os.ReadDir(o.DataDir); len(ents) > 0 {
		return si, fmt.Errorf("%w: data dir %s is not empty and holds no index of this scenario with %d products in %d groups: remove it or choose another",
			ErrInvalid, o.DataDir, o.Products, o.Groups)
	}
	free, err := freeDisk(o.DataDir)
	if err != nil {
		return si, err
	}
	n := o.Products
	if n == 0 {
		if n, err = ScaleProductsForDisk(free); err != nil {
			return si, err
		}
		logf("%.1f GB free on the file system of %s: %d products", float64(free)/1e9, o.DataDir, n)
	} else if need := uint64(n)*ScaleDiskPerProduct + ScaleDiskReserve/2; need > free {
		return si, fmt.Errorf("%w: %d products need about %.1f GB free in %s, %.1f GB are", ErrInvalid, n, float64(need)/1e9, o.DataDir, float64(free)/1e9)
	}
	logf("ingesting %d products in %d groups into %s: feedgen (seed 1, CSV) piped into %s ingest -format csv - (bulk path)", n, o.Groups, o.DataDir, exe)
	return runScaleIngest(ctx, exe, o.DataDir, n, o.Groups, logPath(workDir, "ingest"), free, logf)
}

// startScaleBidder starts a bidder on the remote catalog (the node) whose
// users, uniform and Zipf, have viewed products of the big catalog.
func startScaleBidder(ctx context.Context, o ScaleOptions, si ScaleIngest, exe, workDir string, node *server, cleanups *cleanupStack,
	logf func(string, ...any)) (*server, error) {
	demo := DemoSize{Products: 20_000, Groups: si.Groups, Users: 1}
	demoDir, err := demo.prepare(ctx, filepath.Join(workDir, "demo"), exe, workDir, logf)
	if err != nil {
		return nil, err
	}
	w := workload.Catalog{Products: si.Products, Groups: si.Groups, IDs: o.IDs}
	if err := writeBenchUsers(ctx, demoDir, w, o.Users, scaleUsers, logf); err != nil {
		return nil, err
	}
	b := newBidder("bidder-remote", exe, filepath.Join(demoDir, "rtbd.yaml"), workDir, append([]string{"-catalog", "static:///" + node.Addr()}, o.BidderArgs...))
	return b, b.launch(ctx, cleanups, logf)
}

func scaleIngestNotes(si ScaleIngest) []string {
	return []string{
		fmt.Sprintf("ingest (bulk path; the feed generated by the harness and piped into rtbd ingest's stdin, never written to disk): %d products in %d groups, wall %.0f s, %.0f rows/s, ingest CPU %.0f s, generator CPU %.0f s",
			si.Products, si.Groups, si.WallSec, si.RowsPerSec, si.CPUSec, si.GeneratorCPUSec),
		fmt.Sprintf("ingest peak RSS (ru_maxrss): %d MiB; index on disk %.2f GB (%.0f bytes per product); %.1f GB were free before",
			si.MaxRSSBytes>>20, float64(si.IndexBytes)/1e9, float64(si.IndexBytes)/float64(max(si.Products, 1)), float64(si.FreeBytesBefore)/1e9),
	}
}

func scaleMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	o := ScaleOptions{}.withDefaults()
	fs := flag.NewFlagSet("rtbd bench scale", flag.ContinueOnError)
	c.register(fs, o.StoreRate, 100*time.Millisecond, o.Duration, 2*time.Second)
	if s := os.Getenv("RTBD_BENCH_SCALE_PRODUCTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%w: RTBD_BENCH_SCALE_PRODUCTS: %q is not a count", ErrUsage, s)
		}
		o.Products = n
	}
	fs.IntVar(&o.Products, "products", o.Products, "products (0: the largest that fits the free disk, 20M..100M; env RTBD_BENCH_SCALE_PRODUCTS)")
	fs.IntVar(&o.Groups, "groups", o.Groups, "product groups (1..8)")
	fs.StringVar(&o.DataDir, "data", o.DataDir, "index directory (reused when it holds this scenario's index)")
	fs.IntVar(&o.Users, "users", o.Users, "bidder users per popularity")
	fs.IntVar(&o.IDs, "ids", o.IDs, "ids per lookup")
	fs.Float64Var(&o.BidRate, "bid-rate", o.BidRate, "bids/s of the bidder-level runs")
	fs.BoolVar(&o.SkipBidder, "skip-bidder", false, "no bidder-level runs")
	fs.BoolVar(&o.IngestOnly, "ingest-only", false, "stop after the ingest")
	fs.Var(setFlag{&o.BidderArgs}, "bidder-set", "bidder setting KEY=VALUE")
	fs.Var(setFlag{&o.NodeArgs}, "node-set", "catalog node setting KEY=VALUE")
	nearFlag(fs, &o.BidderArgs)
	if _, err := c.parse(fs, args, stderr); err != nil {
		return err
	}
	o.StoreRate, o.Duration, o.Warmup, o.Exe, o.WorkDir, o.Log = c.load.Rate, c.load.Duration, c.load.Warmup, c.exe, c.work, stderr
	return c.runAndWrite("scale", o.Validate(), stdout, stderr, func() (*Report, error) { return RunScale(ctx, o) })
}
