// Package pebblestore is the embedded spend.Store: a Pebble database in the
// bidder's own data directory (conventionally data_dir + "/spend"). It is the
// default when no shared store (Redis, Aerospike) is configured, and is
// right for a single bidder only: nothing is shared with other processes.
//
// # Keys
//
//	"s|" + campaign + "|d|" + day   -> micros (8 bytes BE) + impressions (8 bytes BE)
//	"s|" + campaign + "|t"          -> lifetime micros + impressions
//	"o|" + campaign                 -> lifetime outcome counters: per counter,
//	                                   uvarint name length, name
//	                                   (spend.CountName), uvarint value
//	"f" + expires (8 bytes BE unix s) + campaign + "|" + window (8 BE) + user -> count (8 BE)
//	"n|" + campaign + "|" + notice key -> expires (8 bytes BE unix s): charged notices
//	"x|" + delta id                 -> expires (8 bytes BE unix s): applied ids
//	                                   of deltas without notices
//
// Bid shading's counts (shading.Store) have keys "h|" and "hx|": see
// shading.go.
//
// Frequency keys start with their expiry so that expired counts are dropped
// by one DeleteRange; notice keys and applied ids are dropped by a scan. Both
// happen inside a Flush at most once per Options.SweepInterval.
//
// # Flush
//
// Flush is a read-modify-write of every touched key in one batch,
// serialised by a mutex and committed with Sync: it is atomic, durable when
// it returns. A notice (spend.NoticeKey) whose key the store holds is a
// duplicate and adds nothing; the others are charged and their keys set, in
// the same batch, kept until the notice's Expires. A delta without notices
// is applied at most once per id within spend.DedupeWindow. The outcome is
// never in doubt: a context that ends before the commit fails the call
// with nothing applied, and after the commit it is ignored.
package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/internal/pebbledb"

	"github.com/rtbd/rtbd/bidder/spend"
)

// ErrClosed is returned after Close.
var ErrClosed = errors.New("pebblestore: closed")

// Options configures Open. The zero value is usable.
type Options struct {
	// FS is the file system; default vfs.Default. Tests use vfs.NewMem().
	FS vfs.FS
	// Now is the clock for expiries. Default time.Now.
	Now func() time.Time
	// SweepInterval is the least time between two sweeps of expired keys.
	// Default 10 minutes.
	SweepInterval time.Duration
	// NoSync commits without fsync (tests only). Default false: Sync.
	NoSync bool
	// Logger receives Pebble's log lines. Default zap.NewNop().
	Logger *zap.Logger
}

// Store is the Pebble spend store. Safe for concurrent use.
type Store struct {
	db        *pebble.DB
	opts      Options
	wo        *pebble.WriteOptions
	mu        sync.Mutex // serialises Flush and guards closed, lastSweep
	closed    bool
	lastSweep time.Time
}

// Open opens (creating if needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	// Every notice of a flush is looked up, and most are new: the bloom
	// filters answer those misses without reading blocks.
	db, err := pebbledb.Open(dir, pebbledb.Options{FS: opts.FS, Logger: opts.Logger, CacheBytes: 32 << 20, Bloom: true})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: %s: %w", dir, err)
	}
	wo := pebble.Sync
	if opts.NoSync {
		wo = pebble.NoSync
	}
	return &Store{db: db, opts: opts, wo: wo, lastSweep: opts.Now()}, nil
}

// Close closes the database. Further calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

func dayKey(campaign, day string) []byte {
	return append(append(append([]byte("s|"), campaign...), "|d|"...), day...)
}

func totalKey(campaign string) []byte {
	return append(append([]byte("s|"), campaign...), "|t"...)
}

func freqKey(campaign string, f *spend.FreqDelta) []byte {
	k := make([]byte, 0, 1+8+len(campaign)+1+8+len(f.User))
	k = append(k, 'f')
	k = binary.BigEndian.AppendUint64(k, uint64(f.Expires.Unix()))
	k = append(k, campaign...)
	k = append(k, '|')
	k = binary.BigEndian.AppendUint64(k, uint64(f.Window))
	return append(k, f.User...)
}

func idKey(id string) []byte { return append([]byte("x|"), id...) }

func countsKey(campaign string) []byte { return append([]byte("o|"), campaign...) }

// encodeCounts is the value of a counts key.
func encodeCounts(c *spend.Counts) []byte {
	var v []byte
	for i, n := range c {
		name := spend.CountName(i)
		v = binary.AppendUvarint(v, uint64(len(name)))
		v = append(v, name...)
		v = binary.AppendUvarint(v, uint64(n))
	}
	return v
}

// decodeCounts reads a counts value into c; names it does not know are skipped.
func decodeCounts(v []byte, c *spend.Counts) error {
	for len(v) > 0 {
		l, n := binary.Uvarint(v)
		if n <= 0 || uint64(len(v)-n) < l {
			return errors.New("pebblestore: corrupt counters")
		}
		name := string(v[n : n+int(l)])
		v = v[n+int(l):]
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return errors.New("pebblestore: corrupt counters")
		}
		v = v[n:]
		if i := spend.CountIndex(name); i >= 0 {
			c[i] = int64(x)
		}
	}
	return nil
}

// readCounts returns the counters of campaign.
func readCounts(g func([]byte) ([]byte, func() error, error), campaign string) (spend.Counts, error) {
	var c spend.Counts
	v, closer, err := g(countsKey(campaign))
	if errors.Is(err, pebble.ErrNotFound) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	err = decodeCounts(v, &c)
	_ = closer()
	return c, err
}

func noticeKey(campaign string, n *spend.Notice) []byte {
	return append(append(append([]byte("n|"), campaign...), '|'), spend.NoticeKey(n)...)
}

// get reads up to two uint64s of key (zeros when missing).
func get(g func([]byte) ([]byte, func() error, error), key []byte) (a, b uint64, found bool, err error) {
	v, closer, err := g(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	if len(v) >= 8 {
		a = binary.BigEndian.Uint64(v)
	}
	if len(v) >= 16 {
		b = binary.BigEndian.Uint64(v[8:])
	}
	_ = closer()
	return a, b, true, nil
}

func pair(a, b uint64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), a)
	return binary.BigEndian.AppendUint64(v, b)
}

// Flush implements spend.Store (see the package comment).
func (s *Store) Flush(ctx context.Context, deltas []spend.Delta) ([]spend.Total, error) {
	if err := spend.ValidateDeltas(deltas); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.opts.Now()
	b := s.db.NewBatch()
	defer b.Close()
	// The counters written so far in this flush, read back by later
	// deltas: a map in front of the database instead of an indexed batch,
	// which would index every notice key too.
	written := map[string][]byte{}
	set := func(k, v []byte) error {
		written[string(k)] = v
		return b.Set(k, v, nil)
	}
	bget := func(k []byte) ([]byte, func() error, error) {
		if v, ok := written[string(k)]; ok {
			return v, func() error { return nil }, nil
		}
		v, c, err := s.db.Get(k)
		if err != nil {
			return nil, nil, err
		}
		return v, c.Close, nil
	}
	totals := make([]spend.Total, len(deltas))
	idExp := binary.BigEndian.AppendUint64(nil, uint64(now.Add(spend.DedupeWindow).Unix()))
	fresh, err := s.freshNotices(deltas)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: flush: %w", err)
	}
	for i := range deltas {
		d := &deltas[i]
		addM, addI, addF, dups, applied, err := s.adds(b, set, bget, d, idExp, fresh[i])
		if err != nil {
			return nil, fmt.Errorf("pebblestore: flush: %w", err)
		}
		t := &totals[i]
		t.Campaign, t.Day, t.Duplicates = d.Campaign, d.Day, dups
		if d.Counts != nil {
			if t.Counts, err = readCounts(bget, d.Campaign); err != nil {
				return nil, fmt.Errorf("pebblestore: flush: %w", err)
			}
			if applied {
				for c, v := range d.Counts {
					t.Counts[c] += v
				}
				if err := set(countsKey(d.Campaign), encodeCounts(&t.Counts)); err != nil {
					return nil, fmt.Errorf("pebblestore: flush: %w", err)
				}
			}
		}
		for ki, k := range [2][]byte{dayKey(d.Campaign, d.Day), totalKey(d.Campaign)} {
			m, n, _, err := get(bget, k)
			if err != nil {
				return nil, fmt.Errorf("pebblestore: flush: %w", err)
			}
			if addI > 0 || addM > 0 {
				m += uint64(addM)
				n += uint64(addI)
				if err := set(k, pair(m, n)); err != nil {
					return nil, fmt.Errorf("pebblestore: flush: %w", err)
				}
			}
			if ki == 0 {
				t.DayMicros, t.DayImps = int64(m), int64(n)
			} else {
				t.TotalMicros, t.TotalImps = int64(m), int64(n)
			}
		}
		if len(d.Freq) > 0 {
			t.Freq = make([]int64, len(d.Freq))
		}
		for j := range d.Freq {
			f := &d.Freq[j]
			k := freqKey(d.Campaign, f)
			c, _, _, err := get(bget, k)
			if err != nil {
				return nil, fmt.Errorf("pebblestore: flush: %w", err)
			}
			if addF[j] > 0 {
				c += uint64(addF[j])
				if err := set(k, binary.BigEndian.AppendUint64(nil, c)); err != nil {
					return nil, fmt.Errorf("pebblestore: flush: %w", err)
				}
			}
			t.Freq[j] = int64(c)
		}
	}
	if now.Sub(s.lastSweep) >= s.opts.SweepInterval {
		if err := s.sweep(b, now); err != nil {
			return nil, err
		}
		s.lastSweep = now
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.Commit(s.wo); err != nil {
		return nil, fmt.Errorf("pebblestore: commit: %w", err)
	}
	return totals, nil
}

// adds returns what delta d adds, recording its keys into b: for a delta
// with notices, the charges of the notices whose key is new (and how many
// were duplicates); for one without, everything unless its id was applied
// (applied says whether it is, and so whether its Counts are to be added).
func (s *Store) adds(b *pebble.Batch, set func(k, v []byte) error, bget func([]byte) ([]byte, func() error, error), d *spend.Delta, idExp []byte, keys []noteKey) (micros, imps int64, freq []int64, dups int64, applied bool, err error) {
	freq = make([]int64, len(d.Freq))
	if len(d.Notices) == 0 {
		_, _, dup, err := get(bget, idKey(d.ID))
		if err != nil || dup {
			return 0, 0, freq, 0, false, err
		}
		if err := set(idKey(d.ID), idExp); err != nil {
			return 0, 0, nil, 0, false, err
		}
		for j := range d.Freq {
			freq[j] = d.Freq[j].Count
		}
		return d.Micros, d.Imps, freq, 0, true, nil
	}
	for k := range d.Notices {
		n := &d.Notices[k]
		if !keys[k].fresh {
			dups++
			continue
		}
		if err := b.Set(keys[k].key, binary.BigEndian.AppendUint64(nil, uint64(n.Expires.Unix())), nil); err != nil {
			return 0, 0, nil, 0, false, err
		}
		micros += n.Micros
		imps++
		if n.FreqRef > 0 {
			freq[n.FreqRef-1]++
		}
	}
	return micros, imps, freq, dups, true, nil
}

// noteKey is one notice of a flush: its store key and whether it is to be
// charged (new to the store and its first copy in the flush).
type noteKey struct {
	key   []byte
	fresh bool
}

// freshNotices returns, per delta, its notices' keys and whether each is
// to be charged. One iterator seeking the keys in order costs far less
// than a lookup per notice.
func (s *Store) freshNotices(deltas []spend.Delta) ([][]noteKey, error) {
	out := make([][]noteKey, len(deltas))
	var all []*noteKey
	for i := range deltas {
		d := &deltas[i]
		out[i] = make([]noteKey, len(d.Notices))
		for k := range d.Notices {
			out[i][k] = noteKey{key: noticeKey(d.Campaign, &d.Notices[k])}
			all = append(all, &out[i][k])
		}
	}
	if len(all) == 0 {
		return out, nil
	}
	// Stable: of several copies of one notice, the first in the flush is
	// the one charged.
	slices.SortStableFunc(all, func(a, b *noteKey) int { return bytes.Compare(a.key, b.key) })
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: all[0].key, UpperBound: append(slices.Clone(all[len(all)-1].key), 0)})
	if err != nil {
		return nil, err
	}
	for j, n := range all {
		if j > 0 && bytes.Equal(all[j-1].key, n.key) {
			continue // a second copy: not fresh
		}
		n.fresh = !(it.SeekGE(n.key) && bytes.Equal(it.Key(), n.key))
	}
	return out, it.Close()
}

// sweep deletes expired frequency counts, notice keys and applied ids into b.
func (s *Store) sweep(b *pebble.Batch, now time.Time) error {
	end := binary.BigEndian.AppendUint64([]byte{'f'}, uint64(now.Unix()))
	if err := b.DeleteRange([]byte{'f'}, end, nil); err != nil {
		return fmt.Errorf("pebblestore: sweep: %w", err)
	}
	for _, r := range [...][2]string{{"n|", "n}"}, {"x|", "x}"}} {
		if err := s.sweepExpired(b, []byte(r[0]), []byte(r[1]), uint64(now.Unix())); err != nil {
			return err
		}
	}
	return nil
}

// sweepExpired deletes into b the keys in [lo, hi) whose value, an expiry
// in unix seconds, is not after sec.
func (s *Store) sweepExpired(b *pebble.Batch, lo, hi []byte, sec uint64) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("pebblestore: sweep: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v := it.Value()
		if len(v) == 8 && binary.BigEndian.Uint64(v) <= sec {
			if err := b.Delete(append([]byte(nil), it.Key()...), nil); err != nil {
				_ = it.Close()
				return fmt.Errorf("pebblestore: sweep: %w", err)
			}
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebblestore: sweep: %w", err)
	}
	return nil
}

// Read implements spend.Store.
func (s *Store) Read(ctx context.Context, campaigns []string, day string) ([]spend.Total, error) {
	if err := spend.ValidateRead(campaigns, day); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	dbget := func(k []byte) ([]byte, func() error, error) {
		v, c, err := s.db.Get(k)
		if err != nil {
			return nil, nil, err
		}
		return v, c.Close, nil
	}
	out := make([]spend.Total, len(campaigns))
	for i, c := range campaigns {
		dm, di, _, err := get(dbget, dayKey(c, day))
		if err != nil {
			return nil, fmt.Errorf("pebblestore: read: %w", err)
		}
		tm, ti, _, err := get(dbget, totalKey(c))
		if err != nil {
			return nil, fmt.Errorf("pebblestore: read: %w", err)
		}
		out[i] = spend.Total{Campaign: c, Day: day, DayMicros: int64(dm), DayImps: int64(di), TotalMicros: int64(tm), TotalImps: int64(ti)}
		if out[i].Counts, err = readCounts(dbget, c); err != nil {
			return nil, fmt.Errorf("pebblestore: read: %w", err)
		}
	}
	return out, nil
}

// FreqCount returns the stored count of user for campaign in window, for
// tests and tools (the bid path never reads the store).
func (s *Store) FreqCount(campaign, user string, window int64, expires time.Time) (int64, error) {
	c, _, _, err := get(func(k []byte) ([]byte, func() error, error) {
		v, cl, err := s.db.Get(k)
		if err != nil {
			return nil, nil, err
		}
		return v, cl.Close, nil
	}, freqKey(campaign, &spend.FreqDelta{User: user, Window: window, Expires: expires}))
	return int64(c), err
}
