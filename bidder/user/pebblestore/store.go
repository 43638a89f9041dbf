package pebblestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/internal/pebbledb"

	"github.com/rtbd/rtbd/bidder/user"
)

// Options configure a Store. Zero values take the defaults noted.
type Options struct {
	// BlockCacheBytes is Pebble's block cache. Default 32 MiB.
	BlockCacheBytes int64
	// Logger receives Pebble's log lines (info at debug level). nil: none.
	Logger *zap.Logger
	// Registerer for rtbd_user_lookups_total{result=hit|miss|error} and
	// rtbd_user_views_total. nil: the counters exist but are not
	// registered. Registering a second Store on one Registerer reuses the
	// first one's counters.
	Registerer prometheus.Registerer
	// MaxViewed is the most viewed products kept per group; RecordView
	// drops the oldest beyond it and Put rejects more. Default 50.
	MaxViewed int
	// MaxGroups is the most product groups kept in Viewed (RecordView drops
	// the group viewed longest ago) and accepted by Put in Viewed and in
	// Recommended. Default 20.
	MaxGroups int
	// MaxRecommended is the most recommended products Put accepts per
	// group. Default 100.
	MaxRecommended int
	// TTL is how long a profile lives after its last write (RecordView,
	// Put, BulkWriter.Put); a read never renews it. An expired profile reads
	// as absent and is deleted by the read that finds it. 0: profiles never
	// expire (config user.ttl, default 720h).
	TTL time.Duration
	// MatchTTL is how long a match entry (PutMatch) lives after its last
	// write. 0: entries never expire (config user.match_ttl, default 720h).
	MatchTTL time.Duration
	// CacheEntries is how many users' stored profiles Get keeps in memory
	// (direct-mapped: a user read evicts the one hashing to the same
	// entry; profiles over 2 KiB stored are not kept), and whether each
	// has none: Get of a recent user then skips Pebble. Every write
	// through the Store invalidates its user's entry. Default 65,536;
	// negative: no cache.
	CacheEntries int
	// FS is the file system Pebble uses. nil: the operating system's
	// (vfs.Default); tests may pass vfs.NewMem().
	FS vfs.FS
}

func (o *Options) ensureDefaults() error {
	if o.BlockCacheBytes == 0 {
		o.BlockCacheBytes = 32 << 20
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.MaxViewed == 0 {
		o.MaxViewed = 50
	}
	if o.MaxGroups == 0 {
		o.MaxGroups = 20
	}
	if o.MaxRecommended == 0 {
		o.MaxRecommended = 100
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.CacheEntries == 0 {
		o.CacheEntries = 1 << 16
	}
	var errs []error
	for _, f := range []struct {
		name string
		neg  bool
		v    any
	}{
		{"block cache bytes", o.BlockCacheBytes < 0, o.BlockCacheBytes},
		{"max viewed", o.MaxViewed < 0, o.MaxViewed},
		{"max groups", o.MaxGroups < 0, o.MaxGroups},
		{"max recommended", o.MaxRecommended < 0, o.MaxRecommended},
		{"ttl", o.TTL < 0, o.TTL},
		{"match ttl", o.MatchTTL < 0, o.MatchTTL},
	} {
		if f.neg {
			errs = append(errs, fmt.Errorf("user: options: %s: must be >= 0, got %v", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// numStripes is the number of write locks; a user's writes all take the
// lock of their uid's hash.
const numStripes = 256

// stripe serialises the read-modify-writes of the users hashing to it and
// owns their scratch space (so RecordView allocates nothing).
type stripe struct {
	mu  sync.Mutex
	p   user.Profile
	key []byte
	val []byte
	_   [40]byte // keep neighbouring stripes' locks on different cache lines
}

// Store is the embedded profile store: a Pebble database in one directory.
// All methods are safe for concurrent use. Writes (Put, RecordView) of one
// uid are serialised; Get reads without locks (a read concurrent with a write
// sees the profile before or after it, never a mix).
type Store struct {
	db   *pebble.DB
	opts Options
	seed maphash.Seed

	// mu is held shared by every operation and exclusively by Close, so
	// that the DB is never used after it is closed.
	mu     sync.RWMutex
	closed bool

	stripes [numStripes]stripe
	keys    sync.Pool // *[]byte, for Get
	cache   *valueCache
	in      user.Interner

	hit, miss, fail, views prometheus.Counter
}

// Open opens (creating if needed) the profile store in dir, e.g. the
// bidder's data directory + "/users". The directory is locked: one process
// at a time.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	db, err := pebbledb.Open(dir, pebbledb.Options{FS: opts.FS, Logger: opts.Logger, CacheBytes: opts.BlockCacheBytes, Bloom: true, BlockSize: 4 << 10})
	if err != nil {
		return nil, fmt.Errorf("user: store %s: %w", dir, err)
	}
	s := &Store{db: db, opts: opts, seed: maphash.MakeSeed(), cache: newValueCache(opts.CacheEntries)}
	s.keys.New = func() any {
		b := make([]byte, 0, 1+user.MaxUIDLen)
		return &b
	}
	s.registerMetrics(opts.Registerer)
	return s, nil
}

func (s *Store) registerMetrics(reg prometheus.Registerer) {
	lookups := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_user_lookups_total",
		Help: "User profile lookups (Store.Get) by result: hit, miss (no profile), error (invalid uid, corrupt profile, closed store, I/O).",
	}, []string{"result"})
	views := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_user_views_total",
		Help: "Product views recorded (Store.RecordView that succeeded).",
	})
	if reg != nil {
		lookups = register(reg, lookups)
		views = register(reg, views)
	}
	s.hit = lookups.WithLabelValues("hit")
	s.miss = lookups.WithLabelValues("miss")
	s.fail = lookups.WithLabelValues("error")
	s.views = views
}

// register registers c, or returns the collector already registered under
// the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
	}
	return c
}

// appendKey appends the Pebble key of uid: "u" + uid.
func appendKey(dst []byte, uid string) []byte {
	dst = append(dst, 'u')
	return append(dst, uid...)
}

func (s *Store) stripe(uid string) *stripe {
	return &s.stripes[maphash.String(s.seed, uid)%numStripes]
}

// lockStripe takes s.mu shared and uid's stripe, with uid's key in st.key,
// for a write of uid; release both with unlockStripe. It fails with
// user.ErrClosed once the store is closed.
func (s *Store) lockStripe(uid string) (*stripe, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, user.ErrClosed
	}
	st := s.stripe(uid)
	st.mu.Lock()
	st.key = appendKey(st.key[:0], uid)
	return st, nil
}

// setProfile writes uid's stored value st.val at st.key (the caller holds
// uid's stripe) and invalidates uid's value cache entry: every write of a
// profile goes through it, so that Get never serves an older value.
func (s *Store) setProfile(uid string, st *stripe) error {
	err := s.db.Set(st.key, st.val, pebble.NoSync)
	s.cache.invalidate(maphash.String(s.seed, uid))
	return err
}

func (s *Store) unlockStripe(st *stripe) {
	st.mu.Unlock()
	s.mu.RUnlock()
}

func (s *Store) limits() user.Limits {
	return user.Limits{MaxGroups: s.opts.MaxGroups, MaxViewed: s.opts.MaxViewed, MaxRecommended: s.opts.MaxRecommended}
}

// Get reads the profile of uid into p (reset first, its slices reused) and
// reports whether there is one. It allocates nothing of its own once p's
// capacities suffice (segments are interned), on a hit or a miss; Pebble
// itself allocates one 16-byte slice per disk table it reads on a hit (none
// from the memtable). A user read recently is answered from the value
// cache (Options.CacheEntries) without asking Pebble.
// The profile is decoded out of Pebble's buffer before that is released, so
// p owns all its memory. Errors: ctx's, user.ErrInvalidUID, user.ErrClosed, user.ErrCorrupt
// (a stored value that does not decode) or an I/O error; p is empty then.
func (s *Store) Get(ctx context.Context, uid string, p *user.Profile) (found bool, err error) {
	p.Reset()
	if err := ctx.Err(); err != nil {
		s.fail.Inc()
		return false, err
	}
	if !user.ValidUID(uid) {
		s.fail.Inc()
		return false, user.CheckUID(uid)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.fail.Inc()
		return false, user.ErrClosed
	}
	h := maphash.String(s.seed, uid)
	cs, hit, gen := s.cache.lookup(h, uid)
	if hit {
		if cs.absent {
			cs.mu.Unlock()
			s.miss.Inc()
			return false, nil
		}
		found, err = s.decode(uid, cs.val, p)
		cs.mu.Unlock()
		return s.settleGet(uid, found, err)
	}
	kp := s.keys.Get().(*[]byte)
	key := appendKey((*kp)[:0], uid)
	v, closer, err := s.db.Get(key)
	*kp = key
	s.keys.Put(kp)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			s.cache.fill(h, gen, uid, nil, false)
			s.miss.Inc()
			return false, nil
		}
		s.fail.Inc()
		return false, fmt.Errorf("user: get: %w", err)
	}
	s.cache.fill(h, gen, uid, v, true)
	found, err = s.decode(uid, v, p) // copies out of v
	_ = closer.Close()               // v is invalid from here on
	return s.settleGet(uid, found, err)
}

// decode decodes the stored value v of uid into p: found false when it has
// expired.
func (s *Store) decode(uid string, v []byte, p *user.Profile) (found bool, err error) {
	body, live := unstamp(v, time.Now())
	if !live {
		return false, nil
	}
	if err := s.in.Decode(body, p); err != nil {
		return false, fmt.Errorf("user: uid %q: %w", uid, err)
	}
	return true, nil
}

// settleGet counts Get's result and deletes an expired profile. The caller
// holds s.mu shared.
func (s *Store) settleGet(uid string, found bool, err error) (bool, error) {
	switch {
	case err != nil:
		s.fail.Inc()
	case !found:
		s.miss.Inc()
		s.dropExpired(uid)
	default:
		s.hit.Inc()
	}
	return found, err
}

// stampTag starts a stored value that carries an expiry: stampTag, the
// expiry in Unix nanoseconds (8 bytes, big endian), then the profile. A
// value starting with anything else (a profile's format version) never
// expires.
const stampTag = 0xE7

const stampLen = 9

// appendStamped appends the stored value of p: stamped with now+ttl when
// ttl > 0.
func appendStamped(dst []byte, p *user.Profile, ttl time.Duration, now time.Time) []byte {
	if ttl > 0 {
		dst = append(dst, stampTag)
		dst = binary.BigEndian.AppendUint64(dst, uint64(now.Add(ttl).UnixNano()))
	}
	return user.AppendProfile(dst, p)
}

// unstamp returns the profile bytes of the stored value v and whether it is
// live at now.
func unstamp(v []byte, now time.Time) (body []byte, live bool) {
	if len(v) == 0 || v[0] != stampTag {
		return v, true
	}
	if len(v) < stampLen {
		return v, true // decodes as corrupt
	}
	exp := int64(binary.BigEndian.Uint64(v[1:stampLen]))
	return v[stampLen:], now.UnixNano() < exp
}

// dropExpired deletes uid's profile if it is still expired once uid's
// writes are held off (a RecordView may have renewed it meanwhile).
// Failures are left for the next read.
func (s *Store) dropExpired(uid string) {
	s.mu.RUnlock() // Get holds it; lockStripe takes it again
	defer s.mu.RLock()
	st, err := s.lockStripe(uid)
	if err != nil {
		return
	}
	defer s.unlockStripe(st)
	v, closer, err := s.db.Get(st.key)
	if err != nil {
		return
	}
	_, live := unstamp(v, time.Now())
	_ = closer.Close()
	if !live {
		_ = s.db.Delete(st.key, pebble.NoSync)
		s.cache.invalidate(maphash.String(s.seed, uid))
	}
}

// RecordView records that uid viewed product pid of group: pid moves to
// the front of the group's viewed list (added if new, never twice), the
// group moves to the front of Viewed, and the oldest products beyond
// MaxViewed and groups beyond MaxGroups are dropped. Concurrent calls for
// one uid are serialised, so none is lost. Durability: pebble.NoSync with
// the WAL on (see the package comment). Errors: ctx's, user.ErrInvalidUID,
// user.ErrInvalidProfile (group or pid <= 0), user.ErrClosed, user.ErrCorrupt (the stored
// profile does not decode; it is left as it is), or an I/O error.
func (s *Store) RecordView(ctx context.Context, uid string, group, pid int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !user.ValidUID(uid) {
		return user.CheckUID(uid)
	}
	if group <= 0 || pid <= 0 {
		return fmt.Errorf("%w: view of product %d in group %d: ids must be > 0", user.ErrInvalidProfile, pid, group)
	}
	st, err := s.lockStripe(uid)
	if err != nil {
		return err
	}
	defer s.unlockStripe(st)
	if err := s.load(st.key, &st.p); err != nil {
		return fmt.Errorf("user: uid %q: %w", uid, err)
	}
	st.p.RecordView(group, pid, s.opts.MaxGroups, s.opts.MaxViewed)
	st.val = appendStamped(st.val[:0], &st.p, s.opts.TTL, time.Now())
	if err := s.setProfile(uid, st); err != nil {
		return fmt.Errorf("user: record view: %w", err)
	}
	s.views.Inc()
	return nil
}

// load reads key into p (empty if absent or expired). Callers hold s.mu
// shared.
func (s *Store) load(key []byte, p *user.Profile) error {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		p.Reset()
		return nil
	}
	if err != nil {
		return err
	}
	body, live := unstamp(v, time.Now())
	if !live {
		_ = closer.Close()
		p.Reset()
		return nil
	}
	err = s.in.Decode(body, p)
	_ = closer.Close()
	return err
}

// Put replaces the profile of uid with p after checking it (p.Validate with
// the store's limits). p is not retained. Concurrent writes of one uid are
// serialised. Durability as RecordView's. Errors: ctx's, user.ErrInvalidUID,
// user.ErrInvalidProfile, user.ErrClosed, or an I/O error.
func (s *Store) Put(ctx context.Context, uid string, p *user.Profile) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := user.CheckPut(uid, p, s.limits()); err != nil {
		return err
	}
	st, err := s.lockStripe(uid)
	if err != nil {
		return err
	}
	defer s.unlockStripe(st)
	st.val = appendStamped(st.val[:0], p, s.opts.TTL, time.Now())
	if err := s.setProfile(uid, st); err != nil {
		return fmt.Errorf("user: put: %w", err)
	}
	return nil
}

// Close flushes the WAL to disk and closes the database. Calls in flight
// finish first; every call after Close returns user.ErrClosed. An open
// BulkWriter's uncommitted profiles are lost. Closing twice is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("user: close: %w", err)
	}
	return nil
}

// bulkBatchBytes is the size at which a BulkWriter commits its batch.
const bulkBatchBytes = 1 << 20

// BulkWriter loads many profiles fast (`rtbd gen -users N`): it validates
// each like Put and writes them in large batches without the per-user lock.
// A profile written through it replaces the stored one even if a
// RecordView of the same uid runs meanwhile, so use it to load, not beside
// live traffic. Profiles are visible once their batch is committed (every
// ~1 MiB, and at Close). A BulkWriter is not safe for concurrent use.
type BulkWriter struct {
	s      *Store
	b      *pebble.Batch
	key    []byte
	val    []byte
	n      int
	closed bool
}

// NewBulkWriter returns a writer that must be closed with Close to commit
// its last batch.
func (s *Store) NewBulkWriter() (*BulkWriter, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, user.ErrClosed
	}
	return &BulkWriter{s: s, b: s.db.NewBatch()}, nil
}

// Put adds the profile of uid (checked like Store.Put; p is not retained).
func (w *BulkWriter) Put(uid string, p *user.Profile) error {
	if w.closed {
		return user.ErrClosed
	}
	if err := user.CheckPut(uid, p, w.s.limits()); err != nil {
		return err
	}
	w.key = appendKey(w.key[:0], uid)
	w.val = appendStamped(w.val[:0], p, w.s.opts.TTL, time.Now())
	if err := w.b.Set(w.key, w.val, nil); err != nil {
		return fmt.Errorf("user: bulk: %w", err)
	}
	w.n++
	if w.b.Len() >= bulkBatchBytes {
		return w.commit(pebble.NoSync)
	}
	return nil
}

// Count is the number of profiles added so far.
func (w *BulkWriter) Count() int { return w.n }

func (w *BulkWriter) commit(o *pebble.WriteOptions) error {
	w.s.mu.RLock()
	defer w.s.mu.RUnlock()
	if w.s.closed {
		return user.ErrClosed
	}
	err := w.b.Commit(o)
	w.s.cache.invalidateAll()
	if err != nil {
		return fmt.Errorf("user: bulk commit: %w", err)
	}
	w.b.Reset()
	return nil
}

// Close commits the last batch with a WAL sync and releases the writer.
// Closing twice is a no-op.
func (w *BulkWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.commit(pebble.Sync)
	_ = w.b.Close()
	return err
}
