package fraud

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/rtb"
)

// Sentinel errors.
var (
	// ErrInvalid is wrapped by New for bad options.
	ErrInvalid = errors.New("fraud: invalid options")
	// ErrTooBig is wrapped by a load that found a list over MaxEntries.
	ErrTooBig = errors.New("fraud: list too big")
	// ErrEmptyRedis is wrapped by a load refused because Redis looks
	// emptied (see the package comment).
	ErrEmptyRedis = errors.New("fraud: redis has no lists and no version; keeping the current ones")
)

// Defaults of Options.
const (
	DefaultPrefix         = "rtbd:fraud:"
	DefaultCheckInterval  = 10 * time.Second
	DefaultReloadInterval = 5 * time.Minute
	DefaultScanCount      = 1000
	DefaultLoadTimeout    = 2 * time.Minute
	DefaultCheckTimeout   = time.Second
	DefaultMaxEntries     = 5_000_000
)

// Options configures New. The zero value is usable.
type Options struct {
	// Prefix of the keys. Default "rtbd:fraud:" (config fraud.prefix).
	Prefix string
	// CheckInterval is how often the version key is read. Default 10s
	// (config fraud.check_interval).
	CheckInterval time.Duration
	// ReloadInterval forces a full load even when the version did not
	// change. Default 5m (config fraud.reload_interval).
	ReloadInterval time.Duration
	// ScanCount is SSCAN's COUNT hint. Default 1000.
	ScanCount int64
	// LoadTimeout bounds one full load; CheckTimeout one version read.
	// Defaults 2m and 1s.
	LoadTimeout, CheckTimeout time.Duration
	// MaxEntries is the most entries read from one list; a bigger list
	// fails the load (the current snapshot stays). Default 5,000,000.
	MaxEntries int
	// Logger default zap.NewNop(); Registerer nil: metrics not registered.
	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

// Lists is the in-memory copy of the block lists, kept in sync with Redis
// by a background loop (Start ... Close). Check is safe for concurrent use
// and never touches Redis.
type Lists struct {
	rdb  redis.UniversalClient
	opts Options
	log  *zap.Logger
	m    metrics

	snap     atomic.Pointer[Snapshot]
	loadMu   sync.Mutex // one load at a time
	lastFull atomic.Int64

	stop      chan struct{}
	wg        sync.WaitGroup
	startOnce sync.Once
	closeOnce sync.Once
}

type metrics struct {
	blocked  [numLists]prometheus.Counter
	rejected [numLists]prometheus.Counter
	entries  *prometheus.GaugeVec
	loadOK   prometheus.Counter
	loadErr  prometheus.Counter
	checkOK  prometheus.Counter
	checkErr prometheus.Counter
	version  prometheus.Gauge
	loadedAt prometheus.Gauge
}

// New returns Lists on rdb with an empty snapshot; call Start.
func New(rdb redis.UniversalClient, opts Options) (*Lists, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalid)
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.CheckInterval == 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.ReloadInterval == 0 {
		opts.ReloadInterval = DefaultReloadInterval
	}
	if opts.ScanCount == 0 {
		opts.ScanCount = DefaultScanCount
	}
	if opts.LoadTimeout == 0 {
		opts.LoadTimeout = DefaultLoadTimeout
	}
	if opts.CheckTimeout == 0 {
		opts.CheckTimeout = DefaultCheckTimeout
	}
	if opts.MaxEntries == 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.CheckInterval < 0 || opts.ReloadInterval < 0 || opts.ScanCount < 0 || opts.LoadTimeout < 0 || opts.CheckTimeout < 0 || opts.MaxEntries < 0 {
		return nil, fmt.Errorf("%w: intervals, timeouts, scan count and max entries must be > 0", ErrInvalid)
	}
	l := &Lists{rdb: rdb, opts: opts, log: opts.Logger, stop: make(chan struct{})}
	l.snap.Store(newBuilder().finish(0, time.Time{}))
	l.initMetrics()
	return l, nil
}

func (l *Lists) initMetrics() {
	blocked := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_fraud_blocked_total", Help: "Requests blocked by Check, by list."}, []string{"list"})
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_fraud_rejected_entries_total", Help: "List entries skipped at load because they do not parse, by list."}, []string{"list"})
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_fraud_syncs_total", Help: "Redis operations of the sync loop by kind (load, version) and result (ok, error)."}, []string{"kind", "result"})
	l.m.entries = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rtbd_fraud_entries", Help: "Entries in the snapshot in use, by list."}, []string{"list"})
	l.m.version = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_fraud_version", Help: "Version key value of the snapshot in use."})
	l.m.loadedAt = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_fraud_loaded_timestamp_seconds", Help: "When the snapshot in use was loaded (unix seconds)."})
	for i := range numLists {
		l.m.blocked[i] = blocked.WithLabelValues(List(i).String())
		l.m.rejected[i] = rejected.WithLabelValues(List(i).String())
		l.m.entries.WithLabelValues(List(i).String())
	}
	l.m.loadOK, l.m.loadErr = syncs.WithLabelValues("load", "ok"), syncs.WithLabelValues("load", "error")
	l.m.checkOK, l.m.checkErr = syncs.WithLabelValues("version", "ok"), syncs.WithLabelValues("version", "error")
	if reg := l.opts.Registerer; reg != nil {
		for _, c := range []prometheus.Collector{blocked, rejected, syncs, l.m.entries, l.m.version, l.m.loadedAt} {
			if err := reg.Register(c); err != nil {
				l.log.Warn("fraud: register metric", zap.Error(err))
			}
		}
	}
}

// Check reports whether a request is blocked by any list and the no-bid
// reason to answer (7 site/app, 4 IP/device/user, 5 data centre); see the
// package comment. No Redis round trip, no allocation; safe for concurrent
// use. Pass "" for what the request does not have.
func (l *Lists) Check(site, bundle, ip, ifa, uid string) (blocked bool, nbr rtb.NoBidReason) {
	ok, list := l.snap.Load().Check(site, bundle, ip, ifa, uid)
	if !ok {
		return false, 0
	}
	l.m.blocked[list].Inc()
	return true, list.NBR()
}

// Start loads the lists once (bounded by ctx) and starts the sync loop. It
// returns the first load's error, but the loop runs either way: with Redis
// down at start the lists are empty until Redis answers. Call it once.
func (l *Lists) Start(ctx context.Context) error {
	var err error
	l.startOnce.Do(func() {
		err = l.Reload(ctx, false)
		l.wg.Add(1)
		go l.loop()
	})
	return err
}

// Close stops the sync loop; the last snapshot stays usable.
func (l *Lists) Close() {
	l.closeOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *Lists) loop() {
	defer l.wg.Done()
	t := time.NewTicker(l.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.tick()
	}
}

// tick reloads when the version changed or the reload interval passed.
func (l *Lists) tick() {
	due := time.Since(time.Unix(0, l.lastFull.Load())) >= l.opts.ReloadInterval
	if !due {
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.CheckTimeout)
		v, err := l.version(ctx)
		cancel()
		if err != nil {
			l.m.checkErr.Inc()
			l.log.Warn("fraud: version check failed; keeping the current lists", zap.Error(err))
			return
		}
		l.m.checkOK.Inc()
		if v == l.snap.Load().Version {
			return
		}
	}
	ctx, cancel := l.loadContext()
	defer cancel()
	_ = l.Reload(ctx, false)
}

func (l *Lists) loadContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.LoadTimeout)
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (l *Lists) version(ctx context.Context) (int64, error) {
	s, err := l.rdb.Get(ctx, l.opts.Prefix+"version").Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fraud: version key %q is not an integer", s)
	}
	return v, nil
}

// Reload loads every list now and swaps the new snapshot in. On error the
// current snapshot stays. allowEmpty accepts a Redis with no lists and no
// version key even when the current snapshot has entries (see the package
// comment).
func (l *Lists) Reload(ctx context.Context, allowEmpty bool) error {
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	err := l.load(ctx, allowEmpty)
	if err != nil {
		l.m.loadErr.Inc()
		l.log.Warn("fraud: load failed; keeping the current lists", zap.Error(err))
		return err
	}
	l.m.loadOK.Inc()
	return nil
}

func (l *Lists) load(ctx context.Context, allowEmpty bool) error {
	ver, err := l.version(ctx)
	if err != nil {
		return fmt.Errorf("fraud: load: version: %w", err)
	}
	exists, err := l.rdb.Exists(ctx, l.opts.Prefix+"version").Result()
	if err != nil {
		return fmt.Errorf("fraud: load: %w", err)
	}
	b := newBuilder()
	for li := range numLists {
		key := l.opts.Prefix + List(li).String()
		n := 0
		var cursor uint64
		for {
			vals, next, err := l.rdb.SScan(ctx, key, cursor, "", l.opts.ScanCount).Result()
			if err != nil {
				return fmt.Errorf("fraud: load %s: %w", key, err)
			}
			for _, v := range vals {
				b.add(List(li), v)
			}
			n += len(vals)
			if n > l.opts.MaxEntries {
				return fmt.Errorf("%w: %s has more than %d entries", ErrTooBig, key, l.opts.MaxEntries)
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
	}
	s := b.finish(ver, time.Now())
	if exists == 0 && s.total() == 0 && l.snap.Load().total() > 0 && !allowEmpty {
		return ErrEmptyRedis
	}
	l.snap.Store(s)
	l.lastFull.Store(time.Now().UnixNano())
	for i := range numLists {
		l.m.entries.WithLabelValues(List(i).String()).Set(float64(s.Sizes[i]))
		if b.rejected[i] > 0 {
			l.m.rejected[i].Add(float64(b.rejected[i]))
		}
	}
	l.m.version.Set(float64(ver))
	l.m.loadedAt.Set(float64(s.LoadedAt.Unix()))
	l.log.Info("fraud: lists loaded", zap.Int64("version", ver), zap.Ints("sizes", s.Sizes[:]), zap.Ints("rejected", b.rejected[:]))
	return nil
}
