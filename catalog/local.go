package catalog

import (
	"context"
	"errors"
	"fmt"
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
	HotCacheEntries int
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

	mu       sync.Mutex // serialises Reload and Close
	closed   bool
	stop     chan struct{}
	done     chan struct{}
	switches atomic.Int64
	lookups  atomic.Int64
}

// version is one open index version. refs counts the Local's own reference
// (while it is current) plus one per request in flight.
type version struct {
	name    string
	db      *pebble.DB
	hot     *hotCache
	readers *fileLock
	refs    atomic.Int64
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
	}
}

// OpenLocal opens the live version of the index in dir. A missing
// directory, no published version, or an unreadable one is an error that
// names the path.
func OpenLocal(dir string, opts LocalOptions) (*Local, error) {
	opts.ensureDefaults()
	l := &Local{dir: dir, opts: opts, cache: pebble.NewCache(opts.BlockCacheBytes)}
	name, err := ReadPointer(dir, CurrentFile)
	if err != nil {
		l.cache.Unref()
		return nil, fmt.Errorf("catalog: data dir %s: %w", dir, err)
	}
	v, err := l.open(name)
	if err != nil {
		l.cache.Unref()
		return nil, err
	}
	l.cur.Store(v)
	l.registerMetrics()
	if opts.WatchInterval > 0 {
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		go l.watch()
	}
	opts.Logger.Info("catalog index opened", zap.String("dir", dir), zap.String("version", name))
	return l, nil
}

func (l *Local) open(name string) (*version, error) {
	rl, err := lockShared(readersLockPath(l.dir, name))
	if err != nil {
		return nil, fmt.Errorf("catalog: index version %s: %w", VersionPath(l.dir, name), err)
	}
	db, err := openReadOnly(VersionPath(l.dir, name), l.cache, l.opts.Logger)
	if err != nil {
		rl.Close()
		return nil, err
	}
	v := &version{name: name, db: db, hot: newHotCache(l.opts.HotCacheEntries), readers: rl}
	v.refs.Store(1)
	return v, nil
}

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
	name, err := ReadPointer(l.dir, CurrentFile)
	if err != nil {
		return false, err
	}
	old := l.cur.Load()
	if old != nil && old.name == name {
		return false, nil
	}
	v, err := l.open(name)
	if err != nil {
		return false, err
	}
	l.cur.Store(v)
	l.switches.Add(1)
	if old != nil {
		old.release()
	}
	l.opts.Logger.Info("catalog index switched", zap.String("dir", l.dir),
		zap.String("from", nameOf(old)), zap.String("to", name))
	// Now that the old version may be unread, drop versions nobody needs.
	if removed, _ := RemoveUnusedVersions(l.dir); len(removed) > 0 {
		l.opts.Logger.Info("catalog versions removed", zap.Strings("versions", removed))
	}
	return true, nil
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
		case <-t.C:
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
	if err := ValidateRequest(req, l.opts.MaxIDs); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer v.release()
	l.lookups.Add(1)
	resp := &catalogpb.ProductMastersResponse{}
	var key [KeyLen]byte
	resp.Product1S, err = v.list(ctx, req.ProductGroupId, req.Product1Ids, req.Product1QuantityAtMost, &key)
	if err != nil {
		return nil, err
	}
	resp.Product2S, err = v.list(ctx, req.ProductGroupId, req.Product2Ids, req.Product2QuantityAtMost, &key)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// list resolves one id list.
func (v *version) list(ctx context.Context, g int64, ids []int64, atMost int32, key *[KeyLen]byte) ([]*catalogpb.Product, error) {
	if atMost <= 0 || len(ids) == 0 {
		return nil, nil
	}
	n := min(int(atMost), len(ids))
	out := make([]*catalogpb.Product, 0, n)
	var seen map[int64]struct{} // only for long lists; short ones scan out
	if n > 32 {
		seen = make(map[int64]struct{}, n)
	}
	for _, id := range ids {
		if len(out) == n {
			break
		}
		if seen != nil {
			if _, dup := seen[id]; dup {
				continue
			}
		} else if contains(out, id) {
			continue
		}
		p, err := v.get(ctx, g, id, key)
		if err != nil {
			return nil, err
		}
		if p == nil || !p.InStock {
			continue
		}
		out = append(out, p)
		if seen != nil {
			seen[id] = struct{}{}
		}
	}
	return out, nil
}

func contains(ps []*catalogpb.Product, id int64) bool {
	for _, p := range ps {
		if p.ProductId == id {
			return true
		}
	}
	return false
}

// get returns product id of group g, nil if absent.
func (v *version) get(ctx context.Context, g, id int64, key *[KeyLen]byte) (*catalogpb.Product, error) {
	if id <= 0 {
		return nil, nil
	}
	if v.hot != nil {
		if p, ok := v.hot.get(g, id); ok {
			return p, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	PutKey(key, g, id)
	val, closer, err := v.db.Get(key[:])
	var p *catalogpb.Product
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("catalog: reading product %d/%d: %w", g, id, err)
	default:
		p = new(catalogpb.Product)
		err = DecodeValue(g, id, val, p)
		closer.Close()
		if err != nil {
			return nil, err
		}
	}
	if v.hot != nil {
		v.hot.put(g, id, p)
	}
	return p, nil
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
