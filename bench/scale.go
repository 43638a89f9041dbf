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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/childproc"
)

// The scale scenario's bounds and its disk estimate.
const (
	// ScaleMaxProducts is the talk's catalog: 100,000,000 products on one node.
	ScaleMaxProducts = 100_000_000
	// ScaleMinProducts is the smallest catalog the scenario accepts from
	// its disk check.
	ScaleMinProducts = 20_000_000
	// ScaleDiskPerProduct is the disk one product needs while it is
	// ingested: about 300 bytes in the index plus the external sort's run
	// files (uncompressed records, removed once the tables are written),
	// with a margin.
	ScaleDiskPerProduct = 700
	// ScaleDiskReserve is left free on the file system whatever the count.
	ScaleDiskReserve = 8 << 30
)

// ScaleOptions configure RunScale. Zero values take the defaults noted.
type ScaleOptions struct {
	// Products in the catalog. 0: the largest multiple of a million, at
	// most ScaleMaxProducts, whose ingest fits the free disk of DataDir
	// (ScaleProductsForDisk), or the count of the index already there.
	Products int
	// Groups of the catalog. Default 8 (the demo's, whose campaigns bid on
	// groups 1..8).
	Groups int
	// DataDir holds the index: used if it holds one built by this scenario
	// (DataDir/scale-ingest.json), else ingested there. Default
	// /tmp/rtbd-scale.
	DataDir string
	// Users per popularity written into the bidder's user store. Default
	// 100,000.
	Users int
	// IDs per lookup. Default 15 (the medium template: 5 viewed + 10
	// recommended).
	IDs int
	// StoreRate and BidRate are the open-loop rates of the store-level and
	// bidder-level runs. Defaults 300 and 100 req/s.
	StoreRate, BidRate float64
	// Duration and Warmup of each run. Defaults 20 s and 2 s.
	Duration, Warmup time.Duration
	// SkipBidder leaves out the bidder-level runs.
	SkipBidder bool
	// IngestOnly stops after the ingest.
	IngestOnly bool
	// Exe is the rtbd binary. "": this executable.
	Exe string
	// BidderArgs and NodeArgs are extra flags of the started bidder and
	// node.
	BidderArgs, NodeArgs []string
	// WorkDir keeps logs and the demo directory. "": a temporary one.
	WorkDir string
	// Log receives progress lines. nil: none.
	Log io.Writer
}

func (o ScaleOptions) withDefaults() ScaleOptions {
	o.Groups = cmp.Or(o.Groups, 8)
	o.DataDir = cmp.Or(o.DataDir, "/tmp/rtbd-scale")
	o.Users = cmp.Or(o.Users, 100_000)
	o.IDs = cmp.Or(o.IDs, 15)
	o.StoreRate = cmp.Or(o.StoreRate, 300)
	o.BidRate = cmp.Or(o.BidRate, 100)
	o.Duration = cmp.Or(o.Duration, 20*time.Second)
	o.Warmup = cmp.Or(o.Warmup, 2*time.Second)
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

// ScaleProductsForDisk is the product count the scale scenario ingests
// with free bytes on the index's file system: the largest multiple of a
// million, at most ScaleMaxProducts, needing ScaleDiskPerProduct bytes
// each and leaving ScaleDiskReserve free. An error when that is below
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

// ScaleIngest is what the scale scenario measured of its ingest; it is
// kept beside the index (scaleIngestFile) for later runs on it.
type ScaleIngest struct {
	Products   int     `json:"products"`
	Groups     int     `json:"groups"`
	Start      string  `json:"start"`
	WallSec    float64 `json:"wall_sec"`
	RowsPerSec float64 `json:"rows_per_sec"`
	// MaxRSSBytes is the ingest process's peak RSS (ru_maxrss, from
	// wait4).
	MaxRSSBytes int64   `json:"max_rss_bytes"`
	CPUSec      float64 `json:"cpu_sec"`
	// GeneratorCPUSec is the harness's CPU while it generated the feed
	// into the ingest's stdin.
	GeneratorCPUSec float64 `json:"generator_cpu_sec"`
	IndexBytes      int64   `json:"index_bytes"`
	FreeBytesBefore uint64  `json:"free_bytes_before"`
	Summary         string  `json:"summary,omitempty"`
}

const scaleIngestFile = "scale-ingest.json"

// readScaleIngest reads the ingest record beside an index dir built by
// the scale scenario; ok false when there is none (or no published index).
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
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
			total += st.Blocks * 512
			return nil
		}
		total += info.Size()
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
		return si, fmt.Errorf("%w: rtbd ingest of %d products: %w (feed: %v); its output ends: %s", ErrChild, n, err, werr, c.Tail())
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

// scaleProfiles returns the profiles of users 1..count whose products are
// the ids of CatalogWorkload requests over the big catalog: request i's
// group, its first third of ids as viewed and the rest as recommended,
// as the templates ask (light 1+2, medium 5+10, heavy 10+20), so a bid of
// the template of ids products looks them all up in one call.
func scaleProfiles(products, groups, ids, count int, uniform bool, seed uint64) ([]user.Profile, error) {
	reqs, err := CatalogWorkload{Products: products, Groups: groups, IDs: ids, Uniform: uniform}.Requests(count, seed)
	if err != nil {
		return nil, err
	}
	nv := max(1, ids/3)
	out := make([]user.Profile, count)
	for i, r := range reqs {
		p := &out[i]
		p.Viewed = []user.GroupIDs{{Group: r.ProductGroupId, IDs: dedupIDs(r.Product1Ids[:nv])}}
		p.Recommended = []user.GroupIDs{{Group: r.ProductGroupId, IDs: dedupIDs(r.Product1Ids[nv:])}}
		p.Segments = []string{"electronics"}
	}
	return out, nil
}

// dedupIDs drops repeated ids (a Zipf draw repeats popular ones), keeping
// the first of each.
func dedupIDs(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// benchUsers is one set of generated users: prefix + 1..count, whose ids
// are drawn uniformly or Zipf-popular (CatalogWorkload) from a catalog.
type benchUsers struct {
	prefix  string
	uniform bool
	seed    uint64
}

// writeBenchUsers writes sets of users into the Pebble user store at dir
// (a bidder's data_dir/users; the bidder must not be running), each user
// with ids products of the catalog of products in groups.
func writeBenchUsers(ctx context.Context, dir string, products, groups, ids, count int, sets ...benchUsers) error {
	s, err := pebblestore.Open(dir, pebblestore.Options{MaxRecommended: 100, MaxViewed: 50})
	if err != nil {
		return fmt.Errorf("bench: users: %w", err)
	}
	for _, set := range sets {
		ps, err := scaleProfiles(products, groups, ids, count, set.uniform, set.seed)
		if err != nil {
			s.Close()
			return err
		}
		for i := range ps {
			if err := s.Put(ctx, set.prefix+strconv.Itoa(i+1), &ps[i]); err != nil {
				s.Close()
				return fmt.Errorf("bench: users: %w", err)
			}
		}
	}
	return s.Close()
}

// RunScale runs the talk's scale: a catalog of Products (from the free
// disk when 0) ingested through the bulk path from a generated feed
// streamed into `rtbd ingest` (wall time, rows/s, peak RSS, index size),
// then one catalog node at default caches (RSS after warm-up) measured at
// IDs-product lookups with uniform ids (after its index is evicted from
// the page cache: mostly cold) and Zipf ids, through the harness's
// catalog/remote client and through a bidder on the remote catalog whose
// users have viewed products of the big catalog.
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
	t0 := time.Now()
	if err := node.start(ctx, false); err != nil {
		return rep, err
	}
	cleanups.add(func() { node.stop(15 * time.Second) })
	logf("catalog node pid %d on %s, ready in %v", node.PID(), node.Addr(), time.Since(t0).Round(time.Millisecond))
	st0, _ := readStatus(node.PID())
	client, err := remote.New(remote.Options{Target: "static:///" + node.Addr(), CallTimeout: 5 * time.Second})
	if err != nil {
		return rep, err
	}
	cleanups.add(func() { client.Close() })
	if err := waitStore(ctx, client, 30*time.Second); err != nil {
		return rep, fmt.Errorf("bench: catalog node: %w", err)
	}
	lookups := func(name string, uniform bool, n int, seed uint64) (*storeTarget, error) {
		reqs, err := CatalogWorkload{Products: si.Products, Groups: si.Groups, IDs: o.IDs, Uniform: uniform}.Requests(n, seed)
		return &storeTarget{name: name, store: client, stream: &requestStream{reqs: reqs}}, err
	}

	// Warm-up (other seeds than the measured runs): Zipf lookups, then
	// uniform ones, so that the node's own cache holds what a node serving
	// for a while holds (the tables' index and filter blocks, the popular
	// products) before the page cache is dropped for the cold runs.
	var warmed []string
	for _, w := range []struct {
		uniform bool
		n       int
	}{{false, 20_000}, {true, 5_000}} {
		t, err := lookups("warm-up", w.uniform, w.n, 99)
		if err != nil {
			return rep, err
		}
		wres, err := Run(ctx, t, Options{Concurrency: 8, Requests: int64(w.n), Timeout: 5 * time.Second})
		if err != nil {
			return rep, fmt.Errorf("bench: warm-up: %w", err)
		}
		warmed = append(warmed, fmt.Sprintf("%d %s (%.0f/s)", wres.Requests, scalePopularity(w.uniform), wres.AchievedRate))
	}
	st1, _ := readStatus(node.PID())
	rep.Notes = append(rep.Notes, fmt.Sprintf("catalog node at default caches: RSS %d MiB when ready, %d MiB after a warm-up of %s lookups of %d ids (closed loop, 8 workers); peak %d MiB",
		st0.VmRSSBytes>>20, st1.VmRSSBytes>>20, strings.Join(warmed, " then "), o.IDs, st1.VmHWMBytes>>20))
	logf("%s", rep.Notes[len(rep.Notes)-1])

	// The measured runs, uniform ids first, after the index's files are
	// evicted from the page cache (posix_fadvise DONTNEED): uniform ids
	// over the whole catalog are mostly cold.
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
			logf("  %s: p50 %s ms, p99 %s ms, p99.9 %s ms, %s req/s, errors %d, no-bids %d", res.Target, fmtMs(usToMs(res.Latency.P50Us)),
				fmtMs(usToMs(res.Latency.P99Us)), fmtMs(usToMs(res.Latency.P999Us)), fmtRate(res.AchievedRate), res.Errors.Total, res.NoBids)
		}
		if err != nil {
			return fmt.Errorf("bench: %s: %w", t.Name(), err)
		}
		return nil
	}
	nodeLoad := LoadModel{Options: Options{Rate: o.StoreRate, Duration: o.Duration, Warmup: o.Warmup, Timeout: 5 * time.Second, Seed: 1}}
	nodeWatch := Watch{Processes: []WatchProcess{{Name: "catalog-node", PID: node.PID()}}}
	for _, uniform := range []bool{true, false} {
		t, err := lookups(fmt.Sprintf("node %s/%d", scalePopularity(uniform), o.IDs), uniform, 50_000, 1)
		if err != nil {
			return rep, err
		}
		if err := measure("store level (gRPC GetProductMasters)", nodeLoad, t, nodeWatch, uniform); err != nil {
			return rep, err
		}
	}
	if !o.SkipBidder {
		b, err := startScaleBidder(ctx, o, si, exe, workDir, node, logf)
		if err != nil {
			return rep, err
		}
		cleanups.add(func() { b.stop(15 * time.Second) })
		bidLoad := LoadModel{Options: Options{Rate: o.BidRate, Duration: o.Duration, Warmup: o.Warmup, Timeout: time.Second, Tmax: 100 * time.Millisecond, Seed: 1}}
		watch := Watch{Processes: []WatchProcess{{Name: "bidder-remote", PID: b.PID()}, {Name: "catalog-node", PID: node.PID()}}}
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
// first when DataDir holds none of this scenario with these products and
// groups (an empty or absent DataDir).
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
func startScaleBidder(ctx context.Context, o ScaleOptions, si ScaleIngest, exe, workDir string, node *server, logf func(string, ...any)) (*server, error) {
	bo := BidderOptions{DemoSize: DemoSize{Products: 20_000, Groups: si.Groups, Users: 1}}.withDefaults()
	bo.DemoDir = filepath.Join(workDir, "demo")
	demoDir, err := prepareDemo(ctx, bo, exe, workDir, logf)
	if err != nil {
		return nil, err
	}
	usersDir := filepath.Join(demoDir, "bidder", "users")
	t0 := time.Now()
	if err := writeBenchUsers(ctx, usersDir, si.Products, si.Groups, o.IDs, o.Users, scaleUsers...); err != nil {
		return nil, err
	}
	logf("wrote %d uniform and %d Zipf users (ids of the %d-product catalog) into %s in %v", o.Users, o.Users, si.Products, usersDir, time.Since(t0).Round(time.Millisecond))
	b := newBidder("bidder-remote", exe, filepath.Join(demoDir, "rtbd.yaml"), workDir, append([]string{"-catalog", "static:///" + node.Addr()}, o.BidderArgs...))
	return b, b.start(ctx, false)
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
	c.register(fs, o.StoreRate, 100*time.Millisecond, o.Duration, o.Warmup)
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
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c.runAndWrite("scale", stdout, stderr, func() (*Report, error) { return RunScale(ctx, o) })
}
