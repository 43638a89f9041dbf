package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// LocalOptions configure a Local store. Zero values take the defaults noted.
type LocalOptions struct {
	// BlockCacheBytes is Pebble's block cache, shared by the versions this
	// store opens. Default 64 MiB. Memory does not grow with the catalog:
	// this cache and the hot cache bound it.
	BlockCacheBytes int64
	// HotCacheEntries bounds the cache of decoded products (and of known
	// absent ids) in front of Pebble. Default 50,000 (about 0.6 KiB each; 1M-product node RSS stays under 300 MiB with the default block cache); negative disables it.
	// On a catalog node (WireCache) an entry holds the product's protobuf
	// encoding and the decoded product's strings alias it (1M-product
	// node after 600,000 random lookups: VmHWM 220-232 MiB, 10M: 209 MiB,
	// make bench-rss, 2026-11-30, with MallocArenas). Once
	// full, the cache admits a product on its second miss within a window
	// (see hotCache), so one-off ids do not evict popular ones.
	HotCacheEntries int
	// WireCache: the hot cache keeps each product as its protobuf encoding,
	// made when it is read, with the decoded product's strings pointing
	// into it, so the text is held once. For catalog nodes, which answer
	// with those bytes (catalog/node sets it); a bidder's local index,
	// which only needs decoded products, leaves it off.
	WireCache bool
	// MaxIDs is the most ids a request may carry (both lists). Default 1000.
	MaxIDs int
	// WatchInterval is how often CURRENT is checked for a new version.
	// Default 1s; negative disables watching (call Reload yourself).
	WatchInterval time.Duration
	// Logger; nil logs nothing.
	Logger *zap.Logger
	// Registerer for the store's metrics; nil registers none.
	Registerer prometheus.Registerer
}

func (o *LocalOptions) ensureDefaults() {
	if o.BlockCacheBytes == 0 {
		o.BlockCacheBytes = 64 << 20
	}
	if o.HotCacheEntries == 0 {
		o.HotCacheEntries = 50_000
	}
	if o.MaxIDs == 0 {
		o.MaxIDs = 1000
	}
	if o.WatchInterval == 0 {
		o.WatchInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Local serves product masters from the index in a data directory. It is
// safe for concurrent use. It follows the directory's CURRENT version:
// a new version is opened and swapped in without failing a request, and the
// old one closed when its last request is done.
type Local struct {
	dir   string
	opts  LocalOptions
	cache *pebble.Cache
	cur   atomic.Pointer[version]

	mu     sync.Mutex // serialises Reload and Close
	closed bool
	stop   chan struct{}
	done   chan struct{}
	// idle gets a token when a retired version's last reader lets go, so
	// the watcher sweeps it off the disk then rather than at the next switch.
	idle chan struct{}
	// sweepDue: a sweep found the directory locked by an ingest; the
	// watcher retries it each tick. Guarded by mu.
	sweepDue bool
	switches atomic.Int64
	lookups  atomic.Int64
}

// version is one open index version. refs counts the Local's own reference
// (while it is current) plus one per request in flight.
type version struct {
	name    string
	db      *pebble.DB
	hot     *hotCache
	sim     *simCache  // decoded similar lists (nil with the hot cache off)
	memo    *MergeMemo // merged similar_to_viewed answers (nil with the hot cache off)
	wire    bool       // LocalOptions.WireCache
	readers *fileLock
	refs    atomic.Int64
	// hash is the version's content hash; iv its IndexVersion with the
	// generation CURRENT gives it now (a re-publish of the same version
	// changes only that), shared by every answer.
	hash uint64
	iv   atomic.Pointer[catalogpb.IndexVersion]
	// chain of deltas, read from CHANGES at the first Changes call.
	chainOnce sync.Once
	chain     []changeStep
	// unions: the latest answers that join several steps, by the since
	// hash (every client of a node asks the same after a publish).
	unionMu sync.Mutex
	unions  []union
	// retired is called once after the last reference is dropped (set by
	// Reload before it drops the Local's own reference; nil on the current
	// version, so Close does not trigger it).
	retired func()
}

func (v *version) acquire() bool {
	for {
		r := v.refs.Load()
		if r <= 0 {
			return false
		}
		if v.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

func (v *version) release() {
	if v.refs.Add(-1) == 0 {
		v.db.Close()
		v.readers.Close()
		if v.retired != nil {
			v.retired()
		}
	}
}

// OpenLocal opens the live version of the index in dir. A missing
// directory, no published version, or an unreadable one is an error that
// names the path.
func OpenLocal(dir string, opts LocalOptions) (*Local, error) {
	opts.ensureDefaults()
	l := &Local{dir: dir, opts: opts, cache: pebble.NewCache(opts.BlockCacheBytes)}
	name, gen, err := ReadCurrent(dir)
	if err != nil {
		l.cache.Unref()
		return nil, fmt.Errorf("catalog: data dir %s: %w", dir, err)
	}
	v, err := l.open(name, gen)
	if err != nil {
		l.cache.Unref()
		return nil, err
	}
	l.cur.Store(v)
	l.registerMetrics()
	if opts.WatchInterval > 0 {
		l.stop, l.done, l.idle = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
		go l.watch()
	}
	opts.Logger.Info("catalog index opened", zap.String("dir", dir), zap.String("version", name))
	return l, nil
}

func (l *Local) open(name string, gen uint64) (*version, error) {
	rl, err := lockShared(readersLockPath(l.dir, name))
	if err != nil {
		return nil, fmt.Errorf("catalog: index version %s: %w", VersionPath(l.dir, name), err)
	}
	db, err := openReadOnly(VersionPath(l.dir, name), l.cache, l.opts.Logger)
	if err != nil {
		rl.Close()
		return nil, err
	}
	v := &version{name: name, db: db, hot: newHotCache(l.opts.HotCacheEntries), readers: rl, wire: l.opts.WireCache,
		sim: newSimCache(l.opts.HotCacheEntries / 4), memo: NewMergeMemo(l.opts.HotCacheEntries / 16)}
	if v.hash, err = l.contentHash(name, db); err != nil {
		db.Close()
		rl.Close()
		return nil, err
	}
	v.setGeneration(gen)
	v.refs.Store(1)
	return v, nil
}

// contentHash is the content hash of version name from its META file or,
// for a version built without one, from a scan of db (once per open; the
// version directory is not written).
func (l *Local) contentHash(name string, db *pebble.DB) (uint64, error) {
	h, ok, err := readContentHash(VersionPath(l.dir, name))
	if ok {
		return h, nil
	}
	if err != nil {
		l.opts.Logger.Warn("catalog version META unreadable; hashing the version", zap.String("version", name), zap.Error(err))
	}
	start := time.Now()
	if h, err = scanHash(db); err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrCorrupt, VersionPath(l.dir, name), err)
	}
	l.opts.Logger.Info("catalog version without META hashed", zap.String("version", name),
		zap.Duration("took", time.Since(start)))
	return h, nil
}

func (v *version) setGeneration(gen uint64) {
	v.iv.Store(&catalogpb.IndexVersion{Generation: gen, ContentHash: v.hash})
}

func (v *version) indexVersion() IndexVersion {
	p := v.iv.Load()
	return IndexVersion{Generation: p.Generation, ContentHash: p.ContentHash}
}

// IndexVersion is the version serving now (zero once closed).
func (l *Local) IndexVersion() IndexVersion {
	if v := l.cur.Load(); v != nil {
		return v.indexVersion()
	}
	return IndexVersion{}
}

// Changes reports what changed between the version whose content hash is
// since.ContentHash and the one serving now: nothing if they hold the same
// products; the keys the deltas between them changed, if the serving
// version's chain of deltas starts a step at since; else Full. Keys may be
// shared with the store and must not be modified.
func (l *Local) Changes(since IndexVersion) (Changes, error) {
	v, err := l.acquire()
	if err != nil {
		return Changes{}, err
	}
	defer v.release()
	c := Changes{Version: v.indexVersion()}
	if since.ContentHash == c.Version.ContentHash {
		return c, nil
	}
	v.chainOnce.Do(func() {
		chain, err := readChain(VersionPath(l.dir, v.name), v.hash)
		if err != nil {
			l.opts.Logger.Warn("catalog version's chain of changes unreadable; answering full", zap.String("version", v.name), zap.Error(err))
		}
		v.chain = chain
	})
	v.unionMu.Lock()
	for _, u := range v.unions {
		if u.since == since.ContentHash {
			v.unionMu.Unlock()
			c.Keys = u.keys
			return c, nil
		}
	}
	v.unionMu.Unlock()
	c.Keys, c.Full = changesSince(v.chain, v.hash, since.ContentHash)
	if !c.Full {
		v.unionMu.Lock()
		if len(v.unions) == maxUnions {
			v.unions = v.unions[1:]
		}
		v.unions = append(v.unions, union{since.ContentHash, c.Keys})
		v.unionMu.Unlock()
	}
	return c, nil
}

// union is a Changes answer kept for the next client at the same version.
type union struct {
	since uint64
	keys  []ProductKey
}

// maxUnions bounds the answers a version keeps (each at most the chain's
// keys, shared with it when a single step answers).
const maxUnions = 4

// Version is the name of the version serving now.
func (l *Local) Version() string {
	if v := l.cur.Load(); v != nil {
		return v.name
	}
	return ""
}

// Dir is the data directory.
func (l *Local) Dir() string { return l.dir }

// Reload switches to the version named by CURRENT if it changed. Requests
// in flight finish on the old version; new ones use the new one.
func (l *Local) Reload() (switched bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	name, gen, err := ReadCurrent(l.dir)
	if err != nil {
		return false, err
	}
	old := l.cur.Load()
	if old != nil && old.name == name {
		if old.iv.Load().Generation != gen { // the same version published again
			old.setGeneration(gen)
		}
		return false, nil
	}
	v, err := l.open(name, gen)
	if err != nil {
		return false, err
	}
	l.cur.Store(v)
	l.switches.Add(1)
	if old != nil {
		if l.idle != nil {
			// Written before our release, read after the last one: the
			// atomic refs order the two.
			old.retired = l.versionIdle
		}
		old.release()
	}
	l.opts.Logger.Info("catalog index switched", zap.String("dir", l.dir),
		zap.String("from", nameOf(old)), zap.String("to", name))
	// Now that the old version may be unread, drop versions nobody needs.
	// One still read by a request in flight is swept by the watcher when
	// that request lets go (versionIdle).
	l.sweep()
	return true, nil
}

// sweep removes the versions no one needs (sweepVersions) and logs them.
// While an ingest holds the directory's lock, the sweep stays due and the
// watcher retries it each tick (the ingest's Publish sweeps too). A
// directory we may not lock (read-only) is left alone. The caller holds mu.
func (l *Local) sweep() {
	removed, err := sweepVersions(l.dir)
	l.sweepDue = errors.Is(err, ErrLocked)
	if len(removed) > 0 {
		l.opts.Logger.Info("catalog versions removed", zap.String("dir", l.dir), zap.Strings("versions", removed))
	}
}

// versionIdle runs on the goroutine that dropped a retired version's last
// reference (a request's, usually): it only wakes the watcher.
func (l *Local) versionIdle() {
	select {
	case l.idle <- struct{}{}:
	default: // a sweep is already due
	}
}

func nameOf(v *version) string {
	if v == nil {
		return ""
	}
	return v.name
}

func (l *Local) watch() {
	defer close(l.done)
	t := time.NewTicker(l.opts.WatchInterval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-l.stop:
			return
		case <-l.idle:
			l.mu.Lock()
			if !l.closed {
				l.sweep()
			}
			l.mu.Unlock()
		case <-t.C:
			l.mu.Lock()
			if l.sweepDue && !l.closed {
				l.sweep()
			}
			l.mu.Unlock()
			if _, err := l.Reload(); err != nil {
				if errors.Is(err, ErrClosed) {
					return
				}
				if err.Error() != lastErr { // say each distinct problem once
					l.opts.Logger.Error("catalog index reload failed; still serving the old version",
						zap.String("dir", l.dir), zap.Error(err))
				}
				lastErr = err.Error()
			} else {
				lastErr = ""
			}
		}
	}
}

// Close stops watching and closes the index once requests in flight end.
func (l *Local) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
	if v := l.cur.Swap(nil); v != nil {
		v.release()
	}
	l.cache.Unref()
	return nil
}

func (l *Local) acquire() (*version, error) {
	for {
		v := l.cur.Load()
		if v == nil {
			return nil, ErrClosed
		}
		if v.acquire() {
			return v, nil
		}
		// v was retired between Load and acquire: the next Load sees its
		// successor (or nil once closed).
	}
}

// ValidateRequest checks a request against the rules every store shares.
func ValidateRequest(req *catalogpb.ProductMastersRequest, maxIDs int) error {
	if req == nil {
		return fmt.Errorf("%w: nil request", ErrInvalidArgument)
	}
	if req.ProductGroupId <= 0 {
		return fmt.Errorf("%w: product_group_id must be > 0, got %d", ErrInvalidArgument, req.ProductGroupId)
	}
	if n := len(req.Product1Ids) + len(req.Product2Ids); n > maxIDs {
		return fmt.Errorf("%w: %d product ids, more than the maximum %d", ErrInvalidArgument, n, maxIDs)
	}
	return nil
}

// GetProductMasters answers req from the live version (see the package
// comment for the rules). The returned products are shared with the hot
// cache and must not be modified.
func (l *Local) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	resp := &catalogpb.ProductMastersResponse{}
	if err := l.GetProductMastersInto(ctx, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// GetProductMastersInto is GetProductMasters answering into resp: its lists
// are emptied and refilled, their capacity reused, so that a caller that
// keeps resp (catalog.Fetcher) allocates nothing per lookup. On error resp
// is emptied.
func (l *Local) GetProductMastersInto(ctx context.Context, req *catalogpb.ProductMastersRequest, resp *catalogpb.ProductMastersResponse) error {
	resetResp(resp)
	if err := ValidateRequest(req, l.opts.MaxIDs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	v, err := l.acquire()
	if err != nil {
		return err
	}
	defer v.release()
	l.lookups.Add(1)
	lk := lookup{ctx: ctx, v: v, g: req.ProductGroupId}
	defer lk.close()
	ents, err := lk.list(req.Product1Ids, req.Product1QuantityAtMost)
	if err != nil {
		return err
	}
	resp.Product1S = appendProducts(resp.Product1S, ents)
	ids2, err := lk.secondIDs(req, nil)
	if err != nil {
		resetResp(resp)
		return err
	}
	ents, err = lk.list(ids2, req.Product2QuantityAtMost)
	if err != nil {
		resetResp(resp)
		return err
	}
	resp.Product2S = appendProducts(resp.Product2S, ents)
	resp.Version = v.iv.Load()
	return nil
}

// appendProducts appends the products of ents to dst.
func appendProducts(dst []*catalogpb.Product, ents []*cached) []*catalogpb.Product {
	if len(ents) == 0 {
		return dst
	}
	dst = slices.Grow(dst, len(ents))
	for _, e := range ents {
		dst = append(dst, &e.p)
	}
	return dst
}

// AppendProductMasters appends to dst the protobuf encoding of the
// ProductMastersResponse that GetProductMasters returns for req, and the
// number of products in each list. Products in the hot cache keep their
// encoding, so a catalog node answers by copying bytes. Errors are
// GetProductMasters' and ErrInvalidUTF8 (a product proto would refuse to
// marshal).
func (l *Local) AppendProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest, dst []byte) ([]byte, [2]int, error) {
	var counts [2]int
	if err := ValidateRequest(req, l.opts.MaxIDs); err != nil {
		return dst, counts, err
	}
	if err := ctx.Err(); err != nil {
		return dst, counts, fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	v, err := l.acquire()
	if err != nil {
		return dst, counts, err
	}
	defer v.release()
	l.lookups.Add(1)
	lk := lookup{ctx: ctx, v: v, g: req.ProductGroupId}
	defer lk.close()
	if v.hot != nil {
		v.hot.touch(lk.g, req.Product1Ids[:min(len(req.Product1Ids), 2*max(0, int(req.Product1QuantityAtMost)))])
		v.hot.touch(lk.g, req.Product2Ids[:min(len(req.Product2Ids), 2*max(0, int(req.Product2QuantityAtMost)))])
	}
	var wire []byte // the similar lists used, for the answer
	ids2, err := lk.secondIDs(req, &wire)
	if err != nil {
		return dst, counts, err
	}
	for li, list := range [2]struct {
		ids    []int64
		atMost int32
	}{{req.Product1Ids, req.Product1QuantityAtMost}, {ids2, req.Product2QuantityAtMost}} {
		ents, err := lk.list(list.ids, list.atMost)
		if err != nil {
			return dst, counts, err
		}
		for _, e := range ents {
			w, err := e.wireBytes()
			if err != nil {
				return dst, counts, err
			}
			dst = appendBytesField(dst, protowireNumber(li+1), w)
		}
		counts[li] = len(ents)
	}
	dst = appendIndexVersion(dst, 3, v.iv.Load())
	return append(dst, wire...), counts, nil
}

// lookup is one request's reads of one version and group. Ids the hot
// cache answers cost no Pebble access; the others are read in ascending key
// order through one Pebble iterator per request (SeekGE, each seek forward
// of the last), which is cheaper than a Get per id: no iterator set-up per
// key, and no bloom filter probe (filters only help for absent keys, and
// the hot cache remembers those).
type lookup struct {
	ctx  context.Context
	v    *version
	g    int64
	rd   *pebbleReader // opened at the first hot-cache miss
	ents [32]*cached   // list's result for short lists (a heavy template asks 20)
	got  [32]int64     // ids of list's result for short lists
	sim  *simScratch   // similar_to_viewed's merge (pooled; returned at close)
	// hot-cache gets, counted into the cache at close
	hits, misses int64
}

// pebbleReader is the part of a lookup that only misses need.
type pebbleReader struct {
	it    *pebble.Iterator
	key   [KeyLen]byte
	buf   [16]pending
	order [16]int
}

// pending is an id being resolved in a batch.
type pending struct {
	id    int64
	p     *cached
	known bool // p is the answer (hot cache hit)
}

// secondIDs is the id list of req's second list: product2_ids, or with
// similar_to_viewed and none given, the ids similarIDs resolves from the
// viewed products' similar lists (valid until the lookup is closed).
func (lk *lookup) secondIDs(req *catalogpb.ProductMastersRequest, wire *[]byte) ([]int64, error) {
	if len(req.Product2Ids) > 0 || !req.SimilarToViewed || req.Product2QuantityAtMost <= 0 || len(req.Product1Ids) == 0 {
		return req.Product2Ids, nil
	}
	if err := lk.ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	if lk.sim == nil {
		lk.sim = simScratchPool.Get().(*simScratch)
	}
	return similarIDs(lk.v.db, lk.v.sim, lk.v.memo, lk.g, req.Product1Ids, req.Product2QuantityAtMost, lk.sim, wire)
}

func (lk *lookup) close() {
	if lk.sim != nil {
		simScratchPool.Put(lk.sim)
		lk.sim = nil
	}
	if lk.rd != nil && lk.rd.it != nil {
		lk.rd.it.Close()
	}
	if lk.v.hot != nil {
		lk.v.hot.count(lk.hits, lk.misses)
	}
}

// hotGet is lk.v.hot.get, counted.
func (lk *lookup) hotGet(id int64) (*cached, bool) {
	p, ok := lk.v.hot.get(lk.g, id)
	if ok {
		lk.hits++
	} else {
		lk.misses++
	}
	return p, ok
}

// list resolves one id list. Ids are taken in order; when one misses the
// hot cache, it and the ids after it, as many as the list still needs
// (the ones the serial rule would read anyway), are resolved together.
// The result is valid until the next call.
func (lk *lookup) list(ids []int64, atMost int32) ([]*cached, error) {
	if atMost <= 0 || len(ids) == 0 {
		return nil, nil
	}
	n := min(int(atMost), len(ids))
	out := lk.ents[:0]
	if n > len(lk.ents) {
		out = make([]*cached, 0, n)
	}
	var seen map[int64]struct{} // only for long lists; short ones scan got
	if n > 32 {
		seen = make(map[int64]struct{}, n)
	}
	// got holds the ids of out side by side: scanning it reads one cache
	// line, where scanning out would read every product again.
	got := lk.got[:0]
	dup := func(id int64) bool {
		if seen != nil {
			_, ok := seen[id]
			return ok
		}
		return slices.Contains(got, id)
	}
	add := func(p *cached) {
		if p != nil && p.p.InStock {
			out = append(out, p)
			if seen != nil {
				seen[p.p.ProductId] = struct{}{}
			} else {
				got = append(got, p.p.ProductId)
			}
		}
	}
	hot := lk.v.hot
	for i := 0; i < len(ids) && len(out) < n; {
		id := ids[i]
		if id <= 0 || dup(id) {
			i++
			continue
		}
		if hot != nil {
			if p, ok := lk.hotGet(id); ok {
				add(p)
				i++
				continue
			}
		}
		// A miss: batch it with the next distinct ids the list still needs.
		if lk.rd == nil {
			lk.rd = new(pebbleReader)
		}
		need := n - len(out)
		batch := lk.rd.buf[:0]
		if need > len(lk.rd.buf) {
			batch = make([]pending, 0, need)
		}
		batch = append(batch, pending{id: id})
		var inBatch map[int64]struct{}
		if need > 32 {
			inBatch = map[int64]struct{}{id: {}}
		}
		for i++; i < len(ids) && len(batch) < need; i++ {
			id := ids[i]
			if id <= 0 || dup(id) {
				continue
			}
			if inBatch != nil {
				if _, ok := inBatch[id]; ok {
					continue
				}
				inBatch[id] = struct{}{}
			} else if batchHas(batch, id) {
				continue
			}
			e := pending{id: id}
			if hot != nil {
				e.p, e.known = lk.hotGet(id)
			}
			batch = append(batch, e)
		}
		if err := lk.read(batch); err != nil {
			return nil, err
		}
		for k := range batch {
			add(batch[k].p)
		}
	}
	return out, nil
}

func batchHas(b []pending, id int64) bool {
	for k := range b {
		if b[k].id == id {
			return true
		}
	}
	return false
}

// read resolves batch's unknown entries from Pebble in ascending id order
// and offers them to the hot cache.
func (lk *lookup) read(batch []pending) error {
	rd := lk.rd
	order := rd.order[:0]
	if len(batch) > len(rd.order) {
		order = make([]int, 0, len(batch))
	}
	for k := range batch {
		if !batch[k].known {
			order = append(order, k)
		}
	}
	// Insertion sort: batches are short (a request's quantity).
	for a := 1; a < len(order); a++ {
		for b := a; b > 0 && batch[order[b]].id < batch[order[b-1]].id; b-- {
			order[b], order[b-1] = order[b-1], order[b]
		}
	}
	if len(order) == 0 {
		return nil
	}
	if err := lk.ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	if rd.it == nil {
		it, err := lk.v.db.NewIter(nil)
		if err != nil {
			return fmt.Errorf("catalog: reading group %d: %w", lk.g, err)
		}
		rd.it = it
	}
	for j, k := range order {
		if j > 0 && j%16 == 0 { // long lists: stay within the deadline
			if err := lk.ctx.Err(); err != nil {
				return fmt.Errorf("%w: %w", ErrDeadline, err)
			}
		}
		e := &batch[k]
		putKey(&rd.key, lk.g, e.id)
		if rd.it.SeekGE(rd.key[:]) && string(rd.it.Key()) == string(rd.key[:]) {
			val, err := rd.it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("catalog: reading product %d/%d: %w", lk.g, e.id, err)
			}
			p := new(cached)
			if err := DecodeValue(lk.g, e.id, val, &p.p); err != nil {
				return err
			}
			if lk.v.wire {
				p.aliasWire()
			}
			e.p = p
		} else if err := rd.it.Error(); err != nil {
			return fmt.Errorf("catalog: reading product %d/%d: %w", lk.g, e.id, err)
		}
		if lk.v.hot != nil {
			lk.v.hot.put(lk.g, e.id, e.p)
		}
	}
	return nil
}

// Stats are counters of a Local store.
type Stats struct {
	Version                   string
	Lookups, Switches         int64
	HotHits, HotMisses        int64
	HotEntries, HotCapacity   int64
	BlockCacheHits, BlockMiss int64
}

// Stats returns the store's counters (hot cache figures are the current
// version's: they restart at a switch).
func (l *Local) Stats() Stats {
	s := Stats{Lookups: l.lookups.Load(), Switches: l.switches.Load()}
	if l.opts.HotCacheEntries > 0 {
		s.HotCapacity = int64(l.opts.HotCacheEntries)
	}
	if v, err := l.acquire(); err == nil {
		s.Version = v.name
		s.HotHits, s.HotMisses, s.HotEntries = v.hot.stats()
		m := v.db.Metrics()
		s.BlockCacheHits, s.BlockMiss = m.BlockCache.Hits, m.BlockCache.Misses
		v.release()
	}
	return s
}

// indexAge is the age in seconds at now of the version serving now (0
// when none is open or its name carries no time).
func (l *Local) indexAge(now time.Time) float64 {
	t, ok := VersionTime(l.Version())
	if !ok {
		return 0
	}
	return now.Sub(t).Seconds()
}

func (l *Local) registerMetrics() {
	r := l.opts.Registerer
	if r == nil {
		return
	}
	stat := func(f func(Stats) int64) func() float64 {
		return func() float64 { return float64(f(l.Stats())) }
	}
	cs := []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rtbd_catalog_local_lookups_total", Help: "Requests answered by the local index."},
			func() float64 { return float64(l.lookups.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rtbd_catalog_version_switches_total", Help: "Index version switches without restart."},
			func() float64 { return float64(l.switches.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_index_age_seconds", Help: "Age of the index version serving now: now minus the time that version was built (a full ingest or a delta builds a new one), in seconds (0 before one is open)."},
			func() float64 { return l.indexAge(time.Now()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_hot_cache_hits", Help: "Hot product cache hits since the current version opened."}, stat(func(s Stats) int64 { return s.HotHits })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_hot_cache_misses", Help: "Hot product cache misses since the current version opened."}, stat(func(s Stats) int64 { return s.HotMisses })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_hot_cache_entries", Help: "Entries in the hot product cache."}, stat(func(s Stats) int64 { return s.HotEntries })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_hot_cache_capacity", Help: "Capacity of the hot product cache (catalog.hot_cache_entries)."}, stat(func(s Stats) int64 { return s.HotCapacity })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_block_cache_hits", Help: "Pebble block cache hits (current version)."}, stat(func(s Stats) int64 { return s.BlockCacheHits })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_catalog_block_cache_misses", Help: "Pebble block cache misses (current version)."}, stat(func(s Stats) int64 { return s.BlockMiss })),
	}
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			l.opts.Logger.Warn("catalog metric not registered", zap.Error(err))
		}
	}
}
