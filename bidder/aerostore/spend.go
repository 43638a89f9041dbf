package aerostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/spend"
)

// Defaults of Options.
const (
	DefaultNamespace = "rtbd"
	DefaultSpendSet  = "spend"
	DefaultFreqSet   = "freq"
	DefaultUserSet   = "users"
	DefaultDayTTL    = 400 * 24 * time.Hour
	DefaultTimeout   = time.Second
)

// Sentinel errors.
var (
	// ErrInvalid is wrapped by errors for bad options.
	ErrInvalid = errors.New("aerostore: invalid")
	// ErrTTLRefused is wrapped when the namespace refuses writes carrying a
	// TTL (result code 22 FAIL_FORBIDDEN), which a server does while the
	// namespace's nsup-period is 0, its default.
	ErrTTLRefused = errors.New("aerostore: write with a TTL refused (FAIL_FORBIDDEN: is nsup-period 0?)")
)

// Options configures the stores. The zero value is usable.
type Options struct {
	// Namespace holding every set. Default "rtbd" (config aerospike.namespace).
	Namespace string
	// SpendSet, FreqSet and UserSet name the sets. Defaults "spend", "freq", "users".
	SpendSet, FreqSet, UserSet string
	// DayTTL is the lifetime of a day's spend record. Default 400 days.
	DayTTL time.Duration
	// UserTTL is the lifetime of a user profile after its last write.
	// Default 0: the namespace's default-ttl.
	UserTTL time.Duration
	// Timeout bounds a call whose context has no deadline. Default 1s.
	Timeout time.Duration
	// MaxViewed and MaxGroups bound RecordView like user.Options. Defaults 50 and 20.
	MaxViewed, MaxGroups int
	// KeyPrefix is prepended to the key of every spend and freq record
	// (and of Check's probe). Default "". Tests on a shared cluster use the
	// production set names with a per-run prefix, because every set a
	// namespace has seen counts against its 4,095 sets even once emptied.
	KeyPrefix string
}

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.SpendSet == "" {
		o.SpendSet = DefaultSpendSet
	}
	if o.FreqSet == "" {
		o.FreqSet = DefaultFreqSet
	}
	if o.UserSet == "" {
		o.UserSet = DefaultUserSet
	}
	if o.DayTTL <= 0 {
		o.DayTTL = DefaultDayTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxViewed <= 0 {
		o.MaxViewed = 50
	}
	if o.MaxGroups <= 0 {
		o.MaxGroups = 20
	}
}

// Connect opens a client to hosts, "host:port[,host:port...]" (port
// default 3000), and waits for the cluster to be reachable.
func Connect(hosts string, policy *as.ClientPolicy) (*as.Client, error) {
	var hs []*as.Host
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		name, port := h, 3000
		if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.HasSuffix(h, "]") {
			p, err := strconv.Atoi(h[i+1:])
			if err != nil || p <= 0 || p > 65535 {
				return nil, fmt.Errorf("%w: aerospike host %q: bad port", ErrInvalid, h)
			}
			name, port = h[:i], p
		}
		hs = append(hs, as.NewHost(strings.Trim(name, "[]"), port))
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%w: aerospike hosts: empty", ErrInvalid)
	}
	if policy == nil {
		policy = as.NewClientPolicy()
	}
	c, err := as.NewClientWithPolicyAndHost(policy, hs...)
	if err != nil {
		return nil, fmt.Errorf("aerostore: connect %s: %w", hosts, err)
	}
	return c, nil
}

// SpendStore is the Aerospike spend.Store (see the package comment). Safe
// for concurrent use; it does not own the client.
type SpendStore struct {
	c    *as.Client
	opts Options

	mu sync.Mutex // guards applied
	// applied holds, per delta id and record, the adds applied by a flush
	// that failed on other records; a retry of the same deltas skips them.
	applied map[appliedKey]struct{}

	onKey func(*as.Key) // tests only: sees every key the store builds
}

// NewSpendStore returns a spend store on c.
func NewSpendStore(c *as.Client, opts Options) *SpendStore {
	opts.defaults()
	return &SpendStore{c: c, opts: opts, applied: map[appliedKey]struct{}{}}
}

// key is the key of record k (without KeyPrefix) in set. It reports the
// key to onKey when a test set it.
func (s *SpendStore) key(set, k string) (*as.Key, error) {
	key, err := as.NewKey(s.opts.Namespace, set, s.opts.KeyPrefix+k)
	if err != nil {
		return nil, fmt.Errorf("aerostore: key %q: %w", s.opts.KeyPrefix+k, err)
	}
	if s.onKey != nil {
		s.onKey(key)
	}
	return key, nil
}

func (s *SpendStore) timeout(ctx context.Context) (time.Duration, error) {
	return callTimeout(ctx, s.opts.Timeout)
}

// callTimeout is the time one Aerospike call may take: what is left of
// ctx's deadline, or def when ctx has none. It fails with ctx's error when
// ctx is done or its deadline has passed.
func callTimeout(ctx context.Context, def time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d, ok := ctx.Deadline(); ok {
		t := time.Until(d)
		if t <= 0 {
			return 0, context.DeadlineExceeded
		}
		return t, nil
	}
	return def, nil
}

func (s *SpendStore) batchPolicy(t time.Duration) *as.BatchPolicy {
	p := as.NewBatchPolicy()
	p.TotalTimeout = t
	p.SocketTimeout = t
	p.MaxRetries = 0
	return p
}

// rec aggregates the adds to one record of a flush.
type rec struct {
	id    string // set/key
	key   *as.Key
	bins  []string
	add   []int64 // per bin, the sum over the flush of what is not applied yet
	ttl   uint32
	ids   []string // the deltas adding to this record in this flush
	after []int64  // per bin, the value after the whole batch
	op    *as.BatchWrite
}

// appliedKey names one delta's add to one record, applied by a flush that
// failed on other records.
type appliedKey struct{ delta, rec string }

// Flush implements spend.Store (see the package comment).
func (s *SpendStore) Flush(ctx context.Context, deltas []spend.Delta) ([]spend.Total, error) {
	if err := spend.ValidateDeltas(deltas); err != nil {
		return nil, err
	}
	if len(deltas) == 0 {
		return []spend.Total{}, nil
	}
	if _, err := s.timeout(ctx); err != nil {
		return nil, err
	}
	now := time.Now()
	recs := map[string]*rec{}
	var order []*rec
	locked := true
	// contrib[i] lists, per delta, its records and what it added to each.
	type contrib struct {
		r   *rec
		add []int64
	}
	contribs := make([][]contrib, len(deltas))
	get := func(set, k string, bins []string, ttl uint32) (*rec, error) {
		id := set + "/" + k
		if r := recs[id]; r != nil {
			return r, nil
		}
		key, err := s.key(set, k)
		if err != nil {
			return nil, err
		}
		r := &rec{id: id, key: key, bins: bins, add: make([]int64, len(bins)), ttl: ttl}
		recs[id] = r
		order = append(order, r)
		return r, nil
	}
	s.mu.Lock() // held while the flush is built, not during the call
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	// add counts v into r unless an earlier, partly failed flush of this
	// delta already applied it to r.
	add := func(d *spend.Delta, r *rec, v ...int64) {
		if _, done := s.applied[appliedKey{d.ID, r.id}]; done {
			return
		}
		for b := range v {
			r.add[b] += v[b]
		}
		r.ids = append(r.ids, d.ID)
	}
	dayTTL := uint32(s.opts.DayTTL / time.Second)
	for i := range deltas {
		d := &deltas[i]
		r, err := get(s.opts.SpendSet, d.Campaign+"|d|"+d.Day, []string{"m", "i"}, dayTTL)
		if err != nil {
			return nil, err
		}
		add(d, r, d.Micros, d.Imps)
		contribs[i] = append(contribs[i], contrib{r, []int64{d.Micros, d.Imps}})
		r, err = get(s.opts.SpendSet, d.Campaign+"|t", []string{"m", "i"}, as.TTLDontExpire)
		if err != nil {
			return nil, err
		}
		add(d, r, d.Micros, d.Imps)
		contribs[i] = append(contribs[i], contrib{r, []int64{d.Micros, d.Imps}})
		for _, f := range d.Freq {
			ttl := int64(math.Ceil(f.Expires.Sub(now).Seconds()))
			ttl = min(max(ttl, 1), 10*365*24*3600)
			r, err := get(s.opts.FreqSet, d.Campaign+"|"+strconv.FormatInt(f.Window, 10)+"|"+f.User, []string{"c"}, uint32(ttl))
			if err != nil {
				return nil, err
			}
			add(d, r, f.Count)
			r.ttl = max(r.ttl, uint32(ttl))
			contribs[i] = append(contribs[i], contrib{r, []int64{f.Count}})
		}
	}
	s.mu.Unlock()
	locked = false
	if err := s.apply(ctx, order); err != nil {
		return nil, err
	}
	s.mu.Lock()
	for i := range deltas {
		for _, c := range contribs[i] {
			delete(s.applied, appliedKey{deltas[i].ID, c.r.id})
		}
	}
	s.mu.Unlock()
	// Values as of each delta: the value after the batch minus what later
	// deltas of this flush added to the same record.
	out := make([]spend.Total, len(deltas))
	for i := len(deltas) - 1; i >= 0; i-- {
		d := &deltas[i]
		o := &out[i]
		o.Campaign, o.Day = d.Campaign, d.Day
		if len(d.Freq) > 0 {
			o.Freq = make([]int64, len(d.Freq))
		}
		for k, c := range contribs[i] {
			switch {
			case k == 0:
				o.DayMicros, o.DayImps = c.r.after[0], c.r.after[1]
			case k == 1:
				o.TotalMicros, o.TotalImps = c.r.after[0], c.r.after[1]
			default:
				o.Freq[k-2] = c.r.after[0]
			}
		}
		for _, c := range contribs[i] {
			for b := range c.add {
				c.r.after[b] -= c.add[b]
			}
		}
	}
	return out, nil
}

// Bounds of the KEY_BUSY retry inside one Flush.
const (
	keyBusyRetries = 4
	keyBusyBackoff = 2 * time.Millisecond // doubled per retry
)

// apply sends one BatchOperate for recs and fills each record's after
// values. Records answering KEY_BUSY (definitely not applied) are sent
// again, alone, up to keyBusyRetries times with a doubling backoff. When a
// record still fails, the records that were applied are remembered in
// s.applied, so the caller's retry of the same deltas adds only what is
// missing.
func (s *SpendStore) apply(ctx context.Context, recs []*rec) error {
	pending := recs
	var failed []error
	for attempt := 0; len(pending) > 0; attempt++ {
		t, err := s.timeout(ctx)
		if err != nil {
			failed = append(failed, err)
			break
		}
		ops := make([]as.BatchRecordIfc, len(pending))
		for j, r := range pending {
			wp := as.NewBatchWritePolicy()
			wp.Expiration = r.ttl
			o := make([]*as.Operation, 0, 2*len(r.bins))
			for b, name := range r.bins {
				o = append(o, as.AddOp(as.NewBin(name, r.add[b])))
			}
			for _, name := range r.bins {
				o = append(o, as.GetBinOp(name))
			}
			r.op = as.NewBatchWrite(wp, r.key, o...)
			ops[j] = r.op
		}
		aerr := s.c.BatchOperate(s.batchPolicy(t), ops)
		var busy []*rec
		for _, r := range pending {
			switch {
			case r.op.ResultCode == types.OK && r.op.Record != nil:
				r.after = make([]int64, len(r.bins))
				for b, name := range r.bins {
					v, err := intBin(r.op.Record.Bins, name)
					if err != nil {
						return fmt.Errorf("aerostore: flush: record %v: %w", r.key.Value(), err)
					}
					r.after[b] = v
				}
				s.mu.Lock()
				for _, id := range r.ids {
					s.applied[appliedKey{id, r.id}] = struct{}{}
				}
				s.mu.Unlock()
			case r.op.ResultCode == types.KEY_BUSY && !r.op.InDoubt && attempt < keyBusyRetries:
				busy = append(busy, r)
			case r.op.ResultCode == types.FAIL_FORBIDDEN:
				failed = append(failed, fmt.Errorf("%w: record %v: %w", ErrTTLRefused, r.key.Value(), r.op.Err))
			default:
				err := r.op.Err
				if err == nil && aerr != nil {
					err = aerr
				}
				failed = append(failed, fmt.Errorf("record %v: result %v (in doubt %v): %w", r.key.Value(), r.op.ResultCode, r.op.InDoubt, err))
			}
		}
		pending = busy
		if len(pending) > 0 {
			if err := sleepCtx(ctx, keyBusyBackoff<<attempt); err != nil {
				failed = append(failed, err)
				break
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("aerostore: flush: %d of %d records failed (the applied ones are not added again on retry): %w", len(failed), len(recs), errors.Join(failed...))
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func intBin(bins as.BinMap, name string) (int64, error) {
	switch v := bins[name].(type) {
	case nil:
		return 0, nil
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case as.OpResults: // several results for one bin (the add's, then the read's): the last is the read
		if len(v) == 0 {
			return 0, nil
		}
		return intBin(as.BinMap{name: v[len(v)-1]}, name)
	default:
		return 0, fmt.Errorf("bin %s: unexpected %T", name, v)
	}
}

// Read implements spend.Store: one BatchGet of the day and total records.
func (s *SpendStore) Read(ctx context.Context, campaigns []string, day string) ([]spend.Total, error) {
	if err := spend.ValidateRead(campaigns, day); err != nil {
		return nil, err
	}
	out := make([]spend.Total, len(campaigns))
	if len(campaigns) == 0 {
		return out, nil
	}
	t, err := s.timeout(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]*as.Key, 0, 2*len(campaigns))
	for _, c := range campaigns {
		for _, k := range []string{c + "|d|" + day, c + "|t"} {
			key, err := s.key(s.opts.SpendSet, k)
			if err != nil {
				return nil, err
			}
			keys = append(keys, key)
		}
	}
	p := s.batchPolicy(t)
	p.MaxRetries = 2 // reads are safe to retry
	recsOut, aerr := s.c.BatchGet(p, keys, "m", "i")
	if aerr != nil && !aerr.Matches(types.KEY_NOT_FOUND_ERROR) {
		return nil, fmt.Errorf("aerostore: read: %w", aerr)
	}
	if len(recsOut) != len(keys) {
		return nil, fmt.Errorf("aerostore: read: %d records for %d keys", len(recsOut), len(keys))
	}
	for i, c := range campaigns {
		o := &out[i]
		o.Campaign, o.Day = c, day
		var vals [4]int64
		for j, r := range recsOut[2*i : 2*i+2] {
			if r == nil {
				continue
			}
			m, err1 := intBin(r.Bins, "m")
			n, err2 := intBin(r.Bins, "i")
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("aerostore: read %q: %w", c, err)
			}
			vals[2*j], vals[2*j+1] = m, n
		}
		o.DayMicros, o.DayImps, o.TotalMicros, o.TotalImps = vals[0], vals[1], vals[2], vals[3]
	}
	return out, nil
}

// Check writes and deletes a probe record with a 60 s TTL in the spend set,
// as a flush's day record does. It fails wrapping ErrTTLRefused, with a
// message naming nsup-period and the namespace, when the namespace refuses
// writes with a TTL (nsup-period 0, the server's default), so a bidder
// stops at start instead of failing every flush.
func (s *SpendStore) Check(ctx context.Context) error {
	t, err := s.timeout(ctx)
	if err != nil {
		return err
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	key, err := s.key(s.opts.SpendSet, "probe|"+hex.EncodeToString(nonce[:]))
	if err != nil {
		return err
	}
	wp := as.NewWritePolicy(0, 60)
	wp.TotalTimeout, wp.SocketTimeout = t, t
	if aerr := s.c.Put(wp, key, as.BinMap{"p": 1}); aerr != nil {
		if aerr.Matches(types.FAIL_FORBIDDEN) {
			return fmt.Errorf("%w: namespace %q refused a write with a TTL (FAIL_FORBIDDEN): set nsup-period (e.g. 120) for it in aerospike.conf, or allow-ttl-without-nsup true", ErrTTLRefused, s.opts.Namespace)
		}
		return fmt.Errorf("aerostore: check namespace %q: %w", s.opts.Namespace, aerr)
	}
	if _, aerr := s.c.Delete(wp, key); aerr != nil {
		return fmt.Errorf("aerostore: check namespace %q: delete probe: %w", s.opts.Namespace, aerr)
	}
	return nil
}
