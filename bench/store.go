package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/ingest/feedgen"
)

// Store targets of the store scenario.
const (
	StoreLocal     = "local"     // catalog.Local in the harness process
	StoreGRPC      = "grpc"      // catalog nodes through catalog/remote
	StoreGRPCNear  = "grpc-near" // the same with the client's near cache on
	StoreRedis     = "redis"     // redis-server, one MGET per request
	StoreAerospike = "aerospike" // Aerospike, one BatchGet per request
)

// StoreOptions configure RunStore. Zero values take the defaults noted.
type StoreOptions struct {
	// Products and Groups of the synthetic catalog (`rtbd gen -products N
	// -groups G -seed 1`). Defaults 100,000 and 10.
	Products, Groups int
	// Weights are the products per request, one set of rows each.
	// Default TalkWeights (3, 15, 30).
	Weights []int
	// Uniform popularity instead of Zipf.
	Uniform bool
	// Requests is the number of distinct requests per weight (cycled).
	// Default 20,000.
	Requests int
	// Seed of the request stream. Default 1.
	Seed uint64
	// Targets to measure, in order: StoreLocal, StoreGRPC, StoreRedis,
	// StoreAerospike. Default: local, grpc, redis, and aerospike when
	// AerospikeHosts is set.
	Targets []string
	// Load is how each target is loaded; every target gets the same.
	Load LoadModel
	// DataDir is the index directory: used if it holds a published index
	// (which must be that of Products and Groups), else built there and
	// kept. "": built in a temporary directory, removed at the end.
	DataDir string
	// Exe is the rtbd binary started as the catalog node. "": this
	// process's executable (rtbd bench runs inside rtbd).
	Exe string
	// NodeArgs are extra flags for the catalog node (e.g. "-set",
	// "catalog.hot_cache_entries=0").
	NodeArgs []string
	// GRPCTarget measures running catalog nodes (a catalog/remote target,
	// e.g. static:///10.0.0.5:9090) instead of starting one. They must
	// serve the catalog of Products and Groups.
	GRPCTarget string
	// ConnsPerNode of the remote client. Default: the client's (2).
	ConnsPerNode int
	// NearCacheBytes is the near cache of the grpc-near target's client
	// (remote.Options' near cache size). Default the bidder's
	// catalog.near_cache_bytes default.
	NearCacheBytes int64
	// RedisAddr uses a running Redis (host:port) instead of starting
	// redis-server; the harness writes the products into it (keys p:*).
	RedisAddr string
	// RedisServer is the redis-server binary. Default DefaultRedisServer.
	RedisServer string
	// RedisPool is go-redis's pool size. Default 64.
	RedisPool int
	// AerospikeHosts (host:port[,host:port]) enables the aerospike target;
	// the products are written to AerospikeNamespace (default "test"), set
	// "products".
	AerospikeHosts, AerospikeNamespace string
	// Verify is how many requests per weight are checked, before any
	// measurement, to get identical answers from every target. Default
	// 200; negative: none.
	Verify int
	// WorkDir holds the children's logs and the temporary index. "": a
	// temporary directory, removed at the end.
	WorkDir string
	// Log receives progress lines. nil: none.
	Log io.Writer
	// TestOnlyCatalogDelay is slept before every lookup of every target:
	// an artificial regression in the catalog path, for testing Compare.
	// Never set it outside tests.
	TestOnlyCatalogDelay time.Duration
}

func (o StoreOptions) withDefaults() StoreOptions {
	o.Products = cmp.Or(o.Products, 100_000)
	o.Groups = cmp.Or(o.Groups, 10)
	if len(o.Weights) == 0 {
		o.Weights = TalkWeights
	}
	o.Requests = cmp.Or(o.Requests, 20_000)
	o.Seed = cmp.Or(o.Seed, 1)
	if o.NearCacheBytes == 0 {
		o.NearCacheBytes = 64 << 20
		if c, err := configs.Default(); err == nil && c.Catalog.NearCacheBytes > 0 {
			o.NearCacheBytes = c.Catalog.NearCacheBytes // the bidder's default
		}
	}
	if len(o.Targets) == 0 {
		o.Targets = []string{StoreLocal, StoreGRPC, StoreGRPCNear, StoreRedis}
		if o.AerospikeHosts != "" {
			o.Targets = append(o.Targets, StoreAerospike)
		}
	}
	o.RedisServer = cmp.Or(o.RedisServer, DefaultRedisServer)
	o.RedisPool = cmp.Or(o.RedisPool, 64)
	o.AerospikeNamespace = cmp.Or(o.AerospikeNamespace, "test")
	o.Verify = cmp.Or(o.Verify, 200)
	o.Log = cmp.Or(o.Log, io.Discard)
	return o
}

// Validate reports every problem of o (after defaults), naming the option.
func (o StoreOptions) Validate() error {
	o = o.withDefaults()
	var p problems
	for _, w := range o.Weights {
		wl := CatalogWorkload{Products: o.Products, Groups: o.Groups, IDs: w}
		if err := wl.Validate(); err != nil {
			p.addf("%v", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
			break
		}
	}
	if o.Requests < 1 {
		p.addf("requests: must be >= 1, got %d", o.Requests)
	}
	seen := map[string]bool{}
	for _, t := range o.Targets {
		switch t {
		case StoreLocal, StoreGRPC, StoreGRPCNear, StoreRedis:
		case StoreAerospike:
			if o.AerospikeHosts == "" {
				p.addf("targets: aerospike needs -aerospike HOSTS")
			}
		default:
			p.addf("targets: unknown %q (want local, grpc, grpc-near, redis, aerospike)", t)
		}
		if seen[t] {
			p.addf("targets: %q twice", t)
		}
		seen[t] = true
	}
	if o.ConnsPerNode < 0 || o.RedisPool < 0 {
		p.addf("conns-per-node, redis-pool: must be >= 0")
	}
	if o.NearCacheBytes < 0 {
		p.addf("near-cache: must be >= 0, got %d", o.NearCacheBytes)
	}
	if o.TestOnlyCatalogDelay < 0 {
		p.addf("test-only catalog delay: must be >= 0")
	}
	if err := o.Load.Validate(); err != nil {
		p.addf("%v", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	return p.err()
}

// storeRun is one opened store target with what to watch while loading it.
type storeRun struct {
	name      string
	store     productStore
	watch     Watch
	inProcess bool
	note      string
	// near gathers the client's near-cache metrics (grpc-near); nil else.
	near prometheus.Gatherer
}

// RunStore runs the store-level scenario: the same ProductMastersRequest
// stream, at the same load, sent straight to each store target in turn
// (per weight: local, grpc, redis, aerospike), after checking that they
// all answer the first Verify requests identically. It starts what it
// needs (a catalog node from Exe, redis-server) on loopback and stops it
// before returning. The report has one Result per (weight, target), named
// "TARGET/WEIGHT", and a Table with ratios to the local row of each weight.
func RunStore(ctx context.Context, o StoreOptions) (rep *Report, err error) {
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

	dataDir := o.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(workDir, "catalog")
	}
	if _, err := catalog.ReadPointer(dataDir, catalog.CurrentFile); err != nil {
		logf("building the index of %d products in %d groups in %s", o.Products, o.Groups, dataDir)
		t0 := time.Now()
		if err := BuildSyntheticIndex(dataDir, o.Products, o.Groups); err != nil {
			return nil, err
		}
		logf("index built in %v", time.Since(t0).Round(time.Millisecond))
	} else {
		logf("using the index in %s (assumed: %d products in %d groups)", dataDir, o.Products, o.Groups)
	}

	cfg, err := configs.Load("")
	if err != nil {
		return nil, fmt.Errorf("bench: config: %w", err)
	}
	var runs []*storeRun
	for _, t := range o.Targets {
		r, cleanup, err := openStore(ctx, t, o, dataDir, workDir, cfg, logf)
		if cleanup != nil {
			cleanups.add(cleanup)
		}
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}

	reqs := map[int][]*catalogpb.ProductMastersRequest{}
	for _, w := range o.Weights {
		wl := CatalogWorkload{Products: o.Products, Groups: o.Groups, IDs: w, Uniform: o.Uniform}
		if reqs[w], err = wl.Requests(o.Requests, o.Seed); err != nil {
			return nil, err
		}
		if o.Verify > 0 && len(runs) > 1 {
			if err := verifyStores(ctx, runs, reqs[w][:min(o.Verify, len(reqs[w]))]); err != nil {
				return nil, err
			}
		}
	}
	if o.Verify > 0 && len(runs) > 1 {
		logf("verified: %s answer the first %d requests of each weight identically", targetNames(runs), o.Verify)
	}

	meta := Meta{Title: "store level: " + targetNames(runs), Config: o.Load.describe()}
	meta.Config["scenario"] = "store"
	meta.Config["products"] = strconv.Itoa(o.Products)
	meta.Config["groups"] = strconv.Itoa(o.Groups)
	meta.Config["weights"] = joinInts(o.Weights)
	meta.Config["popularity"] = map[bool]string{false: "zipf s=1.1", true: "uniform"}[o.Uniform]
	meta.Config["distinct_requests"] = strconv.Itoa(o.Requests)
	if o.TestOnlyCatalogDelay > 0 {
		meta.Config["test_only_catalog_delay"] = o.TestOnlyCatalogDelay.String()
		meta.Notes = append(meta.Notes, "TEST ONLY: every lookup sleeps "+o.TestOnlyCatalogDelay.String()+" first (an artificial regression)")
	}
	for _, r := range runs {
		if r.note != "" {
			meta.Notes = append(meta.Notes, r.name+": "+r.note)
		}
	}
	rep = NewReport(meta)
	var entries []TableEntry
	for _, w := range o.Weights {
		base := ""
		for _, r := range runs {
			name := fmt.Sprintf("%s/%d", r.name, w)
			if base == "" {
				base = name
			}
			t := &storeTarget{name: name, store: r.store, stream: &requestStream{reqs: reqs[w]}, delay: o.TestOnlyCatalogDelay}
			logf("run %s: %s", name, o.Load.describe()["load"])
			var near0 NearStats
			if r.near != nil {
				// A bidder's near cache runs warm: one pass over the
				// distinct requests first, so the run measures the steady
				// state (the misses left are evictions, not first reads).
				took, err := warmStore(ctx, r.store, reqs[w])
				if err != nil {
					return nil, fmt.Errorf("bench: %s: warming the near cache: %w", name, err)
				}
				logf("  %s: near cache warmed with one pass over the %d distinct requests in %v", name, len(reqs[w]), took.Round(time.Millisecond))
				near0 = gatherNearStats(r.near)
			}
			res, search, err := o.Load.run(ctx, t, r.watch)
			if r.near != nil && res != nil {
				ns := gatherNearStats(r.near).Sub(near0)
				res.Notes = append(res.Notes, fmt.Sprintf("near cache (%d bytes) over the run and its warmup, after one warming pass over the distinct requests: %s", o.NearCacheBytes, ns))
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: near cache %s", name, ns))
			}
			if search != nil {
				rep.Searches = append(rep.Searches, search)
			}
			if err != nil && (res == nil || !errors.Is(err, ErrAborted)) {
				return nil, fmt.Errorf("bench: %s: %w", name, err)
			}
			if res == nil {
				continue
			}
			rep.Results = append(rep.Results, res)
			e := TableEntry{Result: res, Group: fmt.Sprintf("%d products", w), InProcess: r.inProcess}
			if name != base {
				e.Baseline = base
			}
			entries = append(entries, e)
			logf("  %s: avg %s ms, p50 %s ms, p99 %s ms, %s req/s, errors %d", name, fmtMs(res.Latency.AvgUs/1000),
				fmtMs(usToMs(res.Latency.P50Us)), fmtMs(usToMs(res.Latency.P99Us)), fmtRate(res.AchievedRate), res.Errors.Total)
			if err != nil {
				rep.Tables = append(rep.Tables, BuildTable("Store level (aborted)", entries))
				return rep, err
			}
		}
	}
	title := "Store level: the same ProductMastersRequest stream at the same load; ratios to " + runs[0].name
	rep.Tables = append(rep.Tables, BuildTable(title, entries))
	return rep, nil
}

func targetNames(runs []*storeRun) string {
	var s []string
	for _, r := range runs {
		s = append(s, r.name)
	}
	return strings.Join(s, ", ")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// openStore opens (starting what it needs) one store target. cleanup, when
// not nil, must be called even if err is not nil.
func openStore(ctx context.Context, name string, o StoreOptions, dataDir, workDir string, cfg *configs.Config, logf func(string, ...any)) (*storeRun, func(), error) {
	switch name {
	case StoreLocal:
		lo := catalog.LocalOptionsFromConfig(cfg.Catalog, nil, nil)
		lo.WatchInterval = -1
		l, err := catalog.OpenLocal(dataDir, lo)
		if err != nil {
			return nil, nil, err
		}
		return &storeRun{name: name, store: l, inProcess: true,
				note: "catalog.Local inside the harness process (same settings as the node's: hot cache, block cache); its CPU is in the harness column"},
			func() { l.Close() }, nil

	case StoreGRPC, StoreGRPCNear:
		var cleanups cleanupStack
		cleanup := cleanups.run
		target := o.GRPCTarget
		r := &storeRun{name: name}
		if target == "" {
			exe, err := executable(o.Exe)
			if err != nil {
				return nil, nil, err
			}
			nodeName := "catalog-node"
			if name == StoreGRPCNear {
				nodeName = "catalog-node-near"
			}
			n := newCatalogNode(nodeName, exe, dataDir, workDir, o.NodeArgs)
			if err := n.start(ctx, false); err != nil {
				return nil, nil, err
			}
			logf("started a catalog node: %s -mode=catalog (pid %d, gRPC %s)", exe, n.PID(), n.Addr())
			cleanups.add(func() { n.stop(15 * time.Second) })
			target = "static:///" + n.Addr()
			r.watch = Watch{Processes: []WatchProcess{{Name: nodeName, PID: n.PID()}}}
			r.note = fmt.Sprintf("a catalog node (pid %d, %s) reached through catalog/remote (round robin, health-checked)", n.PID(), n.Addr())
		} else {
			r.note = "running catalog nodes at " + target + " through catalog/remote"
		}
		ro := remote.Options{Target: target, ConnsPerNode: o.ConnsPerNode, CallTimeout: time.Second}
		if name == StoreGRPCNear {
			reg := prometheus.NewRegistry()
			ro.Registerer, r.near = reg, reg
			ro.NearCacheBytes = o.NearCacheBytes
			r.note += fmt.Sprintf("; the client's near cache on (%d bytes)", o.NearCacheBytes)
		}
		c, err := remote.New(ro)
		if err != nil {
			return nil, cleanup, err
		}
		cleanups.add(func() { c.Close() })
		if err := waitStore(ctx, c, 30*time.Second); err != nil {
			return nil, cleanup, fmt.Errorf("bench: catalog at %s: %w", target, err)
		}
		r.store = c
		return r, cleanup, nil

	case StoreRedis:
		var cleanups cleanupStack
		cleanup := cleanups.run
		addr := o.RedisAddr
		r := &storeRun{name: name}
		if addr == "" {
			if _, err := os.Stat(o.RedisServer); err != nil {
				return nil, nil, fmt.Errorf("bench: redis target: %s not found (install redis-server, give -redis ADDR, or leave redis out of -targets): %w", o.RedisServer, err)
			}
			rdir := filepath.Join(workDir, "redis")
			if err := os.MkdirAll(rdir, 0o755); err != nil {
				return nil, nil, fmt.Errorf("bench: %w", err)
			}
			s := newRedisServer(o.RedisServer, rdir, workDir)
			if err := s.start(ctx, false); err != nil {
				return nil, nil, err
			}
			logf("started %s (pid %d, %s)", o.RedisServer, s.PID(), s.Addr())
			cleanups.add(func() { s.stop(10 * time.Second) })
			addr = s.Addr()
			r.watch = Watch{Processes: []WatchProcess{{Name: "redis-server", PID: s.PID()}}}
			r.note = fmt.Sprintf("redis-server (pid %d, %s, persistence off); one MGET of all the request's ids, decoded and filtered by the catalog's rules in the harness", s.PID(), addr)
		} else {
			r.note = "Redis at " + addr + "; one MGET per request"
		}
		rs := newRedisStore(addr, o.RedisPool)
		cleanups.add(func() { rs.Close() })
		if err := rs.ping(ctx); err != nil {
			return nil, cleanup, fmt.Errorf("bench: redis at %s: %w", addr, err)
		}
		t0 := time.Now()
		n, err := rs.load(ctx, func(yield func(*catalogpb.Product) error) error { return EachIndexedProduct(dataDir, yield) })
		if err != nil {
			return nil, cleanup, err
		}
		logf("loaded %d products into redis in %v (pipelined SETs)", n, time.Since(t0).Round(time.Millisecond))
		r.store = rs
		return r, cleanup, nil

	case StoreAerospike:
		s, err := newAerospikeStore(o.AerospikeHosts, o.AerospikeNamespace)
		if err != nil {
			return nil, nil, err
		}
		r := &storeRun{name: name, store: s, note: "Aerospike at " + o.AerospikeHosts + ", namespace " + o.AerospikeNamespace + "; one BatchGet per request"}
		t0 := time.Now()
		n, err := s.load(ctx, func(yield func(*catalogpb.Product) error) error { return EachIndexedProduct(dataDir, yield) })
		if err != nil {
			return nil, func() { s.Close() }, err
		}
		logf("loaded %d products into aerospike in %v", n, time.Since(t0).Round(time.Millisecond))
		return r, func() { s.Close() }, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown target %q", ErrInvalid, name)
}

// waitStore calls s until a lookup succeeds (a remote client connects in
// the background), bounded by timeout.
func waitStore(ctx context.Context, s productStore, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := &catalogpb.ProductMastersRequest{ProductGroupId: 1, Product1QuantityAtMost: 1, Product1Ids: []int64{1}}
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		_, err := s.GetProductMasters(cctx, req)
		ccancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no successful lookup within %v: %w", timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// verifyStores checks that every store answers reqs like the first one.
func verifyStores(ctx context.Context, runs []*storeRun, reqs []*catalogpb.ProductMastersRequest) error {
	for i, req := range reqs {
		var want string
		for j, r := range runs {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := r.store.GetProductMasters(cctx, req)
			cancel()
			if err != nil {
				return fmt.Errorf("bench: verify: %s: request %d: %w", r.name, i, err)
			}
			got := answerKey(resp)
			if j == 0 {
				want = got
			} else if got != want {
				return fmt.Errorf("bench: verify: %s answers request %d (group %d, ids %v) with %s, %s with %s: the stores do not hold the same catalog",
					r.name, i, req.ProductGroupId, req.Product1Ids, got, runs[0].name, want)
			}
		}
	}
	return nil
}

// answerKey renders a response's product ids and a digest of their
// content for comparison.
func answerKey(resp *catalogpb.ProductMastersResponse) string {
	var b strings.Builder
	for li, l := range [2][]*catalogpb.Product{resp.Product1S, resp.Product2S} {
		fmt.Fprintf(&b, "list%d[", li+1)
		for _, p := range l {
			fmt.Fprintf(&b, "%d:%s:%d:%s ", p.ProductId, p.Title, p.PriceMicros, p.ImageUrl)
		}
		b.WriteString("]")
	}
	return b.String()
}

// BuildSyntheticIndex builds and publishes, in dir, the index of `rtbd gen
// -products n -groups groups -seed 1` (feedgen: product i has id i+1 and
// group 1 + i%groups) through catalog's bulk path (the path
// catalogtest.BuildSynthetic takes with its own products in tests).
func BuildSyntheticIndex(dir string, n, groups int) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	lock, err := catalog.LockDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	b, err := catalog.NewBuilder(dir, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			b.Abort()
		}
	}()
	opts := feedgen.Options{Products: n, Groups: groups, Seed: 1}
	var paths []string
	var sst *catalog.SST
	for g := 1; g <= groups; g++ {
		for i := g - 1; i < n; i += groups {
			if sst == nil {
				if sst, err = b.NewSST(); err != nil {
					return err
				}
			}
			p := feedgen.Product(i, opts)
			if err = sst.Add(&p); err != nil {
				return err
			}
			if sst.Len() == 1_000_000 {
				path, err := sst.Finish()
				if err != nil {
					return err
				}
				paths, sst = append(paths, path), nil
			}
		}
	}
	if sst != nil {
		path, err := sst.Finish()
		if err != nil {
			return err
		}
		paths = append(paths, path)
	}
	if err = b.IngestSSTs(paths); err != nil {
		return err
	}
	name, err := b.Finish()
	if err != nil {
		return err
	}
	return catalog.Publish(dir, name)
}

// EachIndexedProduct calls yield with every product of the live version of
// the index in dir, in key order (group, then id), stopping at yield's
// first error. It opens the version read-only beside any process serving it
// (published versions are immutable).
func EachIndexedProduct(dir string, yield func(*catalogpb.Product) error) error {
	name, err := catalog.ReadPointer(dir, catalog.CurrentFile)
	if err != nil {
		return fmt.Errorf("bench: index %s: %w", dir, err)
	}
	path := catalog.VersionPath(dir, name)
	db, err := pebble.Open(path, &pebble.Options{ReadOnly: true, ErrorIfNotExists: true, FS: noLockFS{vfs.Default}, Logger: quietPebbleLogger{}})
	if err != nil {
		return fmt.Errorf("bench: opening %s: %w", path, err)
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("bench: %s: %w", path, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		g, id, ok := catalog.ParseKey(it.Key())
		if !ok {
			continue // not a product key
		}
		p := new(catalogpb.Product)
		if err := catalog.DecodeValue(g, id, it.Value(), p); err != nil {
			return err
		}
		if err := yield(p); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("bench: reading %s: %w", path, err)
	}
	return nil
}

// noLockFS skips Pebble's directory lock, which it takes even read-only: a
// published version is immutable and may be read by several processes (as
// package catalog does).
type noLockFS struct{ vfs.FS }

func (noLockFS) Lock(string) (io.Closer, error) { return io.NopCloser(nil), nil }

// quietPebbleLogger drops Pebble's informational lines (WAL replay on
// open) from the bench's output; errors still panic or are returned.
type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any)  {}
func (quietPebbleLogger) Errorf(string, ...any) {}
func (quietPebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// splitList splits a comma-separated list, trimming spaces and dropping
// empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// makeWorkDir returns dir, created if needed, or a new temporary directory
// when dir is empty; cleanup removes only a temporary one.
func makeWorkDir(dir string) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("bench: %w", err)
		}
		return dir, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "rtbd-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("bench: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// cleanupStack holds the undo steps of a run in the order they were
// added; run calls them last first.
type cleanupStack []func()

func (c *cleanupStack) add(f func()) { *c = append(*c, f) }

func (c *cleanupStack) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

// logTo returns a printf to w that starts each line with prefix.
func logTo(w io.Writer, prefix string) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, prefix+format+"\n", args...) }
}
