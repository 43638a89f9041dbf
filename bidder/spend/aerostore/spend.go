package aerostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/spend"
)

// Store is the Aerospike spend.Store (see the package comment). Safe
// for concurrent use; it does not own the client.
type Store struct {
	c    *as.Client
	opts aero.Options

	onKey func(*as.Key) // tests only: sees every key the store builds
}

// New returns a spend store on c.
func New(c *as.Client, opts aero.Options) *Store {
	opts.Defaults()
	return &Store{c: c, opts: opts}
}

// key is the key of record k (without KeyPrefix) in set. It reports the
// key to onKey when a test set it.
func (s *Store) key(set, k string) (*as.Key, error) {
	key, err := as.NewKey(s.opts.Namespace, set, s.opts.KeyPrefix+k)
	if err != nil {
		return nil, fmt.Errorf("aerostore: key %q: %w", s.opts.KeyPrefix+k, err)
	}
	if s.onKey != nil {
		s.onKey(key)
	}
	return key, nil
}

func (s *Store) timeout(ctx context.Context) (time.Duration, error) {
	return aero.CallTimeout(ctx, s.opts.Timeout)
}

func (s *Store) batchPolicy(t time.Duration) *as.BatchPolicy {
	p := as.NewBatchPolicy()
	p.TotalTimeout = t
	p.SocketTimeout = t
	p.MaxRetries = 0
	return p
}

// rec aggregates the adds to one record of a flush of deltas without
// notices.
type rec struct {
	key   *as.Key
	bins  []string
	add   []int64 // per bin, the sum over the flush
	ttl   uint32
	after []int64 // per bin, the value after the whole batch
	op    *as.BatchWrite
}

// Flush implements spend.Store (see the package comment): the deltas with
// notices (a Writer's) are charged once per notice, origin by origin; those
// without are added as they are.
func (s *Store) Flush(ctx context.Context, deltas []spend.Delta) ([]spend.Total, error) {
	if err := spend.ValidateDeltas(deltas); err != nil {
		return nil, err
	}
	if len(deltas) == 0 {
		return []spend.Total{}, nil
	}
	if _, err := s.timeout(ctx); err != nil {
		return nil, err
	}
	out := make([]spend.Total, len(deltas))
	byOrigin := map[string][]int{}
	var origins []string
	var plain []int
	for i := range deltas {
		if len(deltas[i].Notices) == 0 {
			plain = append(plain, i)
			continue
		}
		o := deltas[i].Origin
		if byOrigin[o] == nil {
			origins = append(origins, o)
		}
		byOrigin[o] = append(byOrigin[o], i)
	}
	for _, o := range origins {
		if err := s.flushNotices(ctx, deltas, byOrigin[o], out); err != nil {
			return nil, err
		}
	}
	if len(plain) > 0 {
		if err := s.flushPlain(ctx, deltas, plain, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// flushPlain adds the deltas idx (without notices) in one BatchOperate,
// aggregated per record, and fills their totals in out.
func (s *Store) flushPlain(ctx context.Context, deltas []spend.Delta, idx []int, out []spend.Total) error {
	now := time.Now()
	recs := map[string]*rec{}
	var order []*rec
	// contrib[i] lists, per delta, its records and what it added to each.
	type contrib struct {
		r   *rec
		add []int64
	}
	contribs := make([][]contrib, len(deltas))
	add := func(i int, set, k string, bins []string, ttl uint32, v ...int64) error {
		id := set + "/" + k
		r := recs[id]
		if r == nil {
			key, err := s.key(set, k)
			if err != nil {
				return err
			}
			r = &rec{key: key, bins: bins, add: make([]int64, len(bins)), ttl: ttl}
			recs[id] = r
			order = append(order, r)
		}
		r.ttl = max(r.ttl, ttl)
		for b := range v {
			r.add[b] += v[b]
		}
		contribs[i] = append(contribs[i], contrib{r, v})
		return nil
	}
	dayTTL := uint32(s.opts.DayTTL / time.Second)
	for _, i := range idx {
		d := &deltas[i]
		if err := add(i, s.opts.SpendSet, d.Campaign+"|d|"+d.Day, []string{"m", "i"}, dayTTL, d.Micros, d.Imps); err != nil {
			return err
		}
		if err := add(i, s.opts.SpendSet, d.Campaign+"|t", []string{"m", "i"}, as.TTLDontExpire, d.Micros, d.Imps); err != nil {
			return err
		}
		for _, f := range d.Freq {
			if err := add(i, s.opts.FreqSet, d.Campaign+"|"+strconv.FormatInt(f.Window, 10)+"|"+f.User, []string{"c"}, ttlUntil(f.Expires, now), f.Count); err != nil {
				return err
			}
		}
		if d.Counts != nil {
			if err := add(i, s.opts.SpendSet, d.Campaign+"|o", countBins, as.TTLDontExpire, d.Counts[:]...); err != nil {
				return err
			}
		}
	}
	if err := s.apply(ctx, order); err != nil {
		return err
	}
	// Values as of each delta: the value after the batch minus what later
	// deltas of this flush added to the same record.
	for k := len(idx) - 1; k >= 0; k-- {
		i := idx[k]
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
			case k-2 < len(d.Freq):
				o.Freq[k-2] = c.r.after[0]
			default: // the counts record
				copy(o.Counts[:], c.r.after)
			}
		}
		for _, c := range contribs[i] {
			for b := range c.add {
				c.r.after[b] -= c.add[b]
			}
		}
	}
	return nil
}

// Bounds of the KEY_BUSY retry inside one Flush.
const (
	keyBusyRetries = 4
	keyBusyBackoff = 2 * time.Millisecond // doubled per retry
)

// apply sends one BatchOperate for recs (retrying records that answer
// KEY_BUSY, see operate) and fills each record's after values. When a
// record still fails, Flush fails; the records that were applied stay
// applied, and a retry of the same deltas adds to them again (deltas
// without notices are at least once).
func (s *Store) apply(ctx context.Context, recs []*rec) error {
	ops := make([]as.BatchRecordIfc, len(recs))
	for j, r := range recs {
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
	if err := s.operate(ctx, ops); err != nil {
		return err
	}
	var failed []error
	for _, r := range recs {
		if r.op.ResultCode != types.OK || r.op.Record == nil {
			failed = append(failed, recordErr(&r.op.BatchRecord, r.key))
			continue
		}
		r.after = make([]int64, len(r.bins))
		for b, name := range r.bins {
			v, err := intBin(r.op.Record.Bins, name)
			if err != nil {
				return fmt.Errorf("aerostore: flush: record %v: %w", r.key.Value(), err)
			}
			r.after[b] = v
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("aerostore: flush: %d of %d records failed: %w", len(failed), len(recs), errors.Join(failed...))
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
func (s *Store) Read(ctx context.Context, campaigns []string, day string) ([]spend.Total, error) {
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
	keys := make([]*as.Key, 0, 3*len(campaigns))
	for _, c := range campaigns {
		for _, k := range []string{c + "|d|" + day, c + "|t", c + "|o"} {
			key, err := s.key(s.opts.SpendSet, k)
			if err != nil {
				return nil, err
			}
			keys = append(keys, key)
		}
	}
	p := s.batchPolicy(t)
	p.MaxRetries = 2 // reads are safe to retry
	recsOut, aerr := s.c.BatchGet(p, keys, readBins...)
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
		for j, r := range recsOut[3*i : 3*i+2] {
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
		if r := recsOut[3*i+2]; r != nil {
			for b, name := range countBins {
				v, err := intBin(r.Bins, name)
				if err != nil {
					return nil, fmt.Errorf("aerostore: read %q: %w", c, err)
				}
				o.Counts[b] = v
			}
		}
	}
	return out, nil
}

// countBins are the bins of a campaign's counts record ("CAMPAIGN|o"):
// its outcome counters (spend.CountName, at most 15 bytes each).
var countBins = func() []string {
	b := make([]string, spend.NumCounts)
	for i := range b {
		b[i] = spend.CountName(i)
	}
	return b
}()

// readBins are the bins Read asks for: m and i of the day and total
// records, the counters of the counts record.
var readBins = append([]string{"m", "i"}, countBins...)

// Check writes and deletes a probe record with a 60 s TTL in the spend set,
// as a flush's day record does. It fails wrapping aero.ErrTTLRefused, with a
// message naming nsup-period and the namespace, when the namespace refuses
// writes with a TTL (nsup-period 0, the server's default), so a bidder
// stops at start instead of failing every flush.
func (s *Store) Check(ctx context.Context) error {
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
		return aero.CheckErr(s.opts.Namespace, s.opts.SpendSet, aerr)
	}
	if _, aerr := s.c.Delete(wp, key); aerr != nil {
		return fmt.Errorf("aerostore: check namespace %q: delete probe: %w", s.opts.Namespace, aerr)
	}
	return nil
}
