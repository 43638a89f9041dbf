package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/catalog/workload"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/ingest/feedgen"
)

// Store targets of the store scenario (bench/README.md).
const (
	StoreLocal     = "local"
	StoreGRPC      = "grpc"
	StoreGRPCNear  = "grpc-near"
	StoreRedis     = "redis"
	StoreAerospike = "aerospike"
)

// storeTargets are the store targets in their default order.
var storeTargets = []string{StoreLocal, StoreGRPC, StoreGRPCNear, StoreRedis, StoreAerospike}

// StoreOptions configure RunStore: each field is the `rtbd bench store` flag named beside it
// (bench/FLAGS.md), and a zero value takes that flag's default.
type StoreOptions struct {
	Products, Groups   int       // -products, -groups: the catalog of `rtbd gen -products N -groups G -seed 1`
	Weights            []int     // -weights
	Uniform            bool      // -uniform
	Requests           int       // -requests
	Targets            []string  // -targets, measured in this order; default all, aerospike only with AerospikeHosts
	Load               LoadModel // the load flags; its Seed seeds the request stream
	DataDir            string    // -data: used if it holds a published index (of Products and Groups), else built there; "": in WorkDir
	Exe                string    // -rtbd: the binary started as the catalog node
	NodeArgs           []string  // -node-set: the catalog node's extra flags ("-set", "KEY=VALUE")
	GRPCTarget         string    // -grpc: running catalog nodes serving Products and Groups, measured instead of a started one
	ConnsPerNode       int       // -conns-per-node; default the remote client's
	NearCacheBytes     int64     // -near-cache; default the bidder's catalog.near_cache_bytes default
	RedisAddr          string    // -redis: the harness writes the products into it (keys p:*)
	RedisServer        string    // -redis-server
	AerospikeHosts     string    // -aerospike: enables the aerospike target
	AerospikeNamespace string    // -aerospike-ns; the products go to its set "products"
	Verify             int       // -verify: requests per weight checked before measuring; negative: none
	WorkDir            string    // -work; "": a temporary directory, removed at the end
	Log                io.Writer // progress lines; nil: none
}

// storeDefaults are StoreOptions' defaults, which the flags share.
var storeDefaults = StoreOptions{Products: 100_000, Groups: 10, Requests: 20_000, AerospikeNamespace: "test", Verify: 200}

func (o StoreOptions) withDefaults() StoreOptions {
	o.Products = cmp.Or(o.Products, storeDefaults.Products)
	o.Groups = cmp.Or(o.Groups, storeDefaults.Groups)
	if len(o.Weights) == 0 {
		o.Weights = TalkWeights
	}
	o.Requests = cmp.Or(o.Requests, storeDefaults.Requests)
	if len(o.Targets) == 0 {
		o.Targets = slices.DeleteFunc(slices.Clone(storeTargets), func(t string) bool { return t == StoreAerospike && o.AerospikeHosts == "" })
	}
	o.RedisServer = cmp.Or(o.RedisServer, DefaultRedisServer)
	o.AerospikeNamespace = cmp.Or(o.AerospikeNamespace, storeDefaults.AerospikeNamespace)
	o.Verify = cmp.Or(o.Verify, storeDefaults.Verify)
	o.Log = cmp.Or(o.Log, io.Discard)
	return o
}

// Validate reports every problem of o (after defaults), naming the option.
func (o StoreOptions) Validate() error {
	o = o.withDefaults()
	var p problems
	for _, w := range o.Weights {
		if err := (workload.Catalog{Products: o.Products, Groups: o.Groups, IDs: w}).Validate(); err != nil {
			p.merge(err)
			break
		}
	}
	p.check(o.Requests >= 1, "requests: must be >= 1, got %d", o.Requests)
	for i, t := range o.Targets {
		p.check(slices.Contains(storeTargets, t), "targets: unknown %q (want %s)", t, strings.Join(storeTargets, ", "))
		p.check(t != StoreAerospike || o.AerospikeHosts != "", "targets: aerospike needs -aerospike HOSTS")
		p.check(!slices.Contains(o.Targets[:i], t), "targets: %q twice", t)
	}
	p.check(o.ConnsPerNode >= 0 && o.NearCacheBytes >= 0, "conns-per-node, near-cache: must be >= 0")
	p.merge(o.Load.Validate())
	return p.err()
}

// storeRun is one opened store target with what to watch while loading it.
type storeRun struct {
	name      string
	store     productStore
	watch     Watch
	inProcess bool
	note      string
	near      prometheus.Gatherer // the client's near-cache metrics (grpc-near); nil else
}

// RunStore runs the store scenario: per weight, the same request stream at the same load to each
// target in turn, after checking that they answer the first Verify requests identically. It starts
// what it needs on loopback and stops it before returning. The report has one Result per (weight,
// target), named "TARGET/WEIGHT", and a Table with ratios to the first target's row of each weight.
func RunStore(ctx context.Context, o StoreOptions) (*Report, error) {
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

	dataDir := cmp.Or(o.DataDir, filepath.Join(workDir, "catalog"))
	if _, err := catalog.ReadPointer(dataDir, catalog.CurrentFile); err == nil {
		logf("using the index in %s (assumed: %d products in %d groups)", dataDir, o.Products, o.Groups)
	} else {
		logf("building the index of %d products in %d groups in %s", o.Products, o.Groups, dataDir)
		t0 := time.Now()
		if err := BuildSyntheticIndex(dataDir, o.Products, o.Groups); err != nil {
			return nil, err
		}
		logf("index built in %v", time.Since(t0).Round(time.Millisecond))
	}
	cfg, err := configs.Load("")
	if err != nil {
		return nil, fmt.Errorf("bench: config: %w", err)
	}
	o.NearCacheBytes = cmp.Or(o.NearCacheBytes, cfg.Catalog.NearCacheBytes) // the bidder's default
	var runs []*storeRun
	for _, t := range o.Targets {
		r, err := openStore(ctx, t, o, dataDir, workDir, cfg, &cleanups, logf)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}

	reqs := map[int][]*catalogpb.ProductMastersRequest{}
	for _, w := range o.Weights {
		wl := workload.Catalog{Products: o.Products, Groups: o.Groups, IDs: w, Uniform: o.Uniform}
		if reqs[w], err = wl.Requests(o.Requests, o.Load.Seed); err != nil {
			return nil, err
		}
		if o.Verify > 0 && len(runs) > 1 {
			if err := verifyStores(ctx, runs, reqs[w][:min(o.Verify, len(reqs[w]))]); err != nil {
				return nil, err
			}
		}
	}
	if o.Verify > 0 && len(runs) > 1 {
		logf("verified: %s answer the first %d requests of each weight identically", strings.Join(o.Targets, ", "), o.Verify)
	}

	meta := Meta{Title: "store level: " + strings.Join(o.Targets, ", "), Config: o.Load.describe()}
	maps.Copy(meta.Config, map[string]string{"scenario": "store", "products": strconv.Itoa(o.Products), "groups": strconv.Itoa(o.Groups),
		"weights": joinInts(o.Weights), "popularity": map[bool]string{false: "zipf s=1.1", true: "uniform"}[o.Uniform],
		"distinct_requests": strconv.Itoa(o.Requests)})
	for _, r := range runs {
		meta.Notes = append(meta.Notes, r.name+": "+r.note)
	}
	rep := NewReport(meta)
	var entries []TableEntry
	for _, w := range o.Weights {
		for _, r := range runs {
			name := fmt.Sprintf("%s/%d", r.name, w)
			res, err := measureStore(ctx, o, r, name, reqs[w], rep, logf)
			if err != nil && (res == nil || !errors.Is(err, ErrAborted)) {
				return nil, fmt.Errorf("bench: %s: %w", name, err)
			}
			rep.Results = append(rep.Results, res)
			// The first target's row names itself: BuildTable makes it the baseline.
			entries = append(entries, TableEntry{Result: res, Group: fmt.Sprintf("%d products", w),
				Baseline: fmt.Sprintf("%s/%d", runs[0].name, w), InProcess: r.inProcess})
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

// measureStore loads one store target with reqs. A near cache (grpc-near) runs warm, as a
// bidder's does: one pass over the distinct requests first, so the misses left are evictions,
// not first reads; its hit ratio goes into the notes.
func measureStore(ctx context.Context, o StoreOptions, r *storeRun, name string, reqs []*catalogpb.ProductMastersRequest, rep *Report, logf func(string, ...any)) (*Result, error) {
	logf("run %s: %s", name, o.Load.describe()["load"])
	var near0 NearStats
	if r.near != nil {
		t0 := time.Now()
		for _, req := range reqs {
			if _, err := lookup(ctx, r.store, req, 5*time.Second); err != nil {
				return nil, fmt.Errorf("warming the near cache: %w", err)
			}
		}
		logf("  %s: near cache warmed with one pass over the %d distinct requests in %v", name, len(reqs), time.Since(t0).Round(time.Millisecond))
		near0 = gatherNearStats(r.near)
	}
	t := &storeTarget{name: name, store: r.store, stream: &requestStream{reqs: reqs}}
	res, search, err := o.Load.run(ctx, t, r.watch)
	if search != nil {
		rep.Searches = append(rep.Searches, search)
	}
	if res == nil {
		return nil, err
	}
	if r.near != nil {
		ns := gatherNearStats(r.near).Sub(near0)
		res.Notes = append(res.Notes, fmt.Sprintf("near cache (%d bytes) over the run and its warmup, after one warming pass over the distinct requests: %s", o.NearCacheBytes, ns))
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: near cache %s", name, ns))
	}
	logf("  %s: %s, errors %d", name, summary(res), res.Errors.Total)
	return res, err
}

// openStore opens one store target, starting what it needs; cleanups undoes it (also on failure).
func openStore(ctx context.Context, name string, o StoreOptions, dataDir, workDir string, cfg *configs.Config,
	cleanups *cleanupStack, logf func(string, ...any)) (*storeRun, error) {
	r := &storeRun{name: name}
	switch name {
	case StoreLocal:
		lo := catalog.LocalOptionsFromConfig(cfg.Catalog, nil, nil)
		lo.WatchInterval = -1
		l, err := catalog.OpenLocal(dataDir, lo)
		if err != nil {
			return nil, err
		}
		cleanups.add(func() { l.Close() })
		r.store, r.inProcess = l, true
		r.note = "catalog.Local inside the harness process (same settings as the node's: hot cache, block cache); its CPU is in the harness column"

	case StoreGRPC, StoreGRPCNear:
		target := o.GRPCTarget
		r.note = "running catalog nodes at " + target + " through catalog/remote"
		if target == "" {
			exe, err := executable(o.Exe)
			if err != nil {
				return nil, err
			}
			n := newCatalogNode("catalog-node"+strings.TrimPrefix(name, "grpc"), exe, dataDir, workDir, o.NodeArgs)
			if err := n.launch(ctx, cleanups, logf); err != nil {
				return nil, err
			}
			target = "static:///" + n.Addr()
			r.watch = n.watch()
			r.note = fmt.Sprintf("a catalog node (pid %d, %s) reached through catalog/remote (round robin, health-checked)", n.PID(), n.Addr())
		}
		ro := remote.Options{Target: target, ConnsPerNode: o.ConnsPerNode, CallTimeout: time.Second}
		if name == StoreGRPCNear {
			reg := prometheus.NewRegistry()
			ro.Registerer, r.near, ro.NearCacheBytes = reg, reg, o.NearCacheBytes
			r.note += fmt.Sprintf("; the client's near cache on (%d bytes)", o.NearCacheBytes)
		}
		c, err := dialCatalog(ctx, ro, cleanups)
		if err != nil {
			return nil, err
		}
		r.store = c

	case StoreRedis:
		addr := o.RedisAddr
		r.note = "Redis at " + addr + "; one MGET per request"
		if addr == "" {
			if _, err := os.Stat(o.RedisServer); err != nil {
				return nil, fmt.Errorf("bench: redis target: %s not found (install redis-server, give -redis ADDR, or leave redis out of -targets): %w", o.RedisServer, err)
			}
			rdir := filepath.Join(workDir, "redis")
			if err := os.MkdirAll(rdir, 0o755); err != nil {
				return nil, fmt.Errorf("bench: %w", err)
			}
			s := newRedisServer(o.RedisServer, rdir, workDir)
			if err := s.launch(ctx, cleanups, logf); err != nil {
				return nil, err
			}
			addr = s.Addr()
			r.watch = s.watch()
			r.note = fmt.Sprintf("redis-server (pid %d, %s, persistence off); one MGET of all the request's ids, decoded and filtered by the catalog's rules in the harness", s.PID(), addr)
		}
		rs := newRedisStore(addr, 64)
		cleanups.add(func() { rs.Close() })
		r.store = rs // loading it below tells when addr does not answer

	case StoreAerospike:
		s, err := newAerospikeStore(o.AerospikeHosts, o.AerospikeNamespace)
		if err != nil {
			return nil, err
		}
		cleanups.add(func() { s.Close() })
		r.store = s
		r.note = "Aerospike at " + o.AerospikeHosts + ", namespace " + o.AerospikeNamespace + "; one BatchGet per request"
	}
	if kv, ok := r.store.(interface {
		load(context.Context, iter.Seq[*catalogpb.Product]) (int, error)
	}); ok {
		t0 := time.Now()
		n, err := kv.load(ctx, syntheticProducts(o.Products, o.Groups))
		if err != nil {
			return nil, err
		}
		logf("loaded %d products into %s in %v", n, name, time.Since(t0).Round(time.Millisecond))
	}
	return r, nil
}

// lookup asks s for req within timeout.
func lookup(ctx context.Context, s productStore, req *catalogpb.ProductMastersRequest, timeout time.Duration) (*catalogpb.ProductMastersResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.GetProductMasters(ctx, req)
}

// dialCatalog opens a catalog/remote client, closed by cleanups, and waits up to 30 s for its first
// successful lookup (it connects in the background).
func dialCatalog(ctx context.Context, ro remote.Options, cleanups *cleanupStack) (*remote.Client, error) {
	c, err := remote.New(ro)
	if err != nil {
		return nil, err
	}
	cleanups.add(func() { c.Close() })
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := &catalogpb.ProductMastersRequest{ProductGroupId: 1, Product1QuantityAtMost: 1, Product1Ids: []int64{1}}
	for {
		_, err := lookup(ctx, c, req, time.Second)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bench: catalog at %s: no successful lookup within 30s: %w", ro.Target, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// verifyStores checks that every store answers reqs like the first one.
func verifyStores(ctx context.Context, runs []*storeRun, reqs []*catalogpb.ProductMastersRequest) error {
	for i, req := range reqs {
		var want string
		for j, r := range runs {
			resp, err := lookup(ctx, r.store, req, 5*time.Second)
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

// answerKey renders a response's products (id and main fields) for comparison.
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

// syntheticProducts are the products of `rtbd gen -products n -groups groups -seed 1`.
func syntheticProducts(n, groups int) iter.Seq[*catalogpb.Product] {
	return func(yield func(*catalogpb.Product) bool) {
		opts := feedgen.Options{Products: n, Groups: groups, Seed: 1}
		for i := range n {
			p := feedgen.Product(i, opts)
			if !yield(&p) {
				return
			}
		}
	}
}

// BuildSyntheticIndex builds and publishes in dir the index of syntheticProducts(n, groups).
func BuildSyntheticIndex(dir string, n, groups int) (err error) {
	lock, err := catalog.LockDir(dir) // creates dir
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
	for p := range syntheticProducts(n, groups) {
		if err = b.Put(p); err != nil {
			return err
		}
	}
	name, err := b.Finish()
	if err != nil {
		return err
	}
	return catalog.Publish(dir, name)
}
