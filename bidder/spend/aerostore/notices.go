package aerostore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/spend"
)

// GuardLen is how many batch sequences (Delta.Seq) of one origin a counter
// record's guard bin remembers: the largest ones applied to it. A notice
// left in doubt by a crash must be replayed before that origin applies
// GuardLen later batches to the same record (see the package comment).
const GuardLen = 64

// Notice record bins: the origin that created it and, per counter record
// kind, the batch sequence that is to count it there.
const (
	binOrigin = "o"
	binDay    = "sd"
	binTotal  = "st"
	binFreq   = "sf"
)

// guardBin is the name of origin's guard bin in counter records: "g" and 12
// hex digits of SHA-256(origin), 13 bytes (bin names are at most 15).
func guardBin(origin string) string {
	h := sha256.Sum256([]byte(origin))
	return "g" + hex.EncodeToString(h[:6])
}

// counter is one counter record of a flush (day, total or freq).
type counter struct {
	key   *as.Key
	bins  []string // m, i (spend) or c (freq)
	ttl   uint32
	seq   int64 // the batch sequence its campaign is flushed with
	found bool
	gen   uint32
	vals  []int64 // before the add, then after
	guard []int64 // ascending
	add   []int64
}

// applied reports whether the batch seq of this origin has been applied
// to c: it is in the guard, or older than a full guard's oldest entry.
func (c *counter) applied(seq int64) bool {
	if _, ok := slices.BinarySearch(c.guard, seq); ok {
		return true
	}
	return len(c.guard) >= GuardLen && seq < c.guard[0]
}

// pnote is one distinct notice of a flush.
type pnote struct {
	n     *spend.Notice
	delta int
	seq   int64
	key   *as.Key
	ttl   uint32
	recs  [3]*counter // day, total, freq (nil: none)
	stamp [3]int64    // the batch sequence that is to count it in recs[k]
	gen   uint32
	mine  bool // created by, or stamped for, this origin
	count [3]bool
}

var stampBins = [3]string{binDay, binTotal, binFreq}

// flushNotices applies the deltas with notices of one origin (see the
// package comment) and fills their totals in out.
func (s *Store) flushNotices(ctx context.Context, deltas []spend.Delta, idx []int, out []spend.Total) error {
	origin := deltas[idx[0]].Origin
	gb := guardBin(origin)
	now := time.Now()
	// One sequence per campaign: the largest of its deltas, so that a
	// retry of the same deltas uses the same one.
	seqs := map[string]int64{}
	for _, i := range idx {
		d := &deltas[i]
		seqs[d.Campaign] = max(seqs[d.Campaign], d.Seq)
	}
	counters := map[string]*counter{}
	var corder []*counter
	counterOf := func(set, k string, bins []string, ttl uint32, seq int64) (*counter, error) {
		id := set + "/" + k
		if c := counters[id]; c != nil {
			c.ttl = max(c.ttl, ttl)
			return c, nil
		}
		key, err := s.key(set, k)
		if err != nil {
			return nil, err
		}
		c := &counter{key: key, bins: bins, ttl: ttl, seq: seq, vals: make([]int64, len(bins)), add: make([]int64, len(bins))}
		counters[id] = c
		corder = append(corder, c)
		return c, nil
	}
	dayTTL := uint32(s.opts.DayTTL / time.Second)
	seen := map[string]bool{}
	var notes []*pnote
	type deltaRecs struct{ day, total *counter }
	drecs := make(map[int]deltaRecs, len(idx))
	freqs := make(map[int][]*counter, len(idx))
	for _, i := range idx {
		d := &deltas[i]
		seq := seqs[d.Campaign]
		day, err := counterOf(s.opts.SpendSet, d.Campaign+"|d|"+d.Day, []string{"m", "i"}, dayTTL, seq)
		if err != nil {
			return err
		}
		total, err := counterOf(s.opts.SpendSet, d.Campaign+"|t", []string{"m", "i"}, as.TTLDontExpire, seq)
		if err != nil {
			return err
		}
		drecs[i] = deltaRecs{day, total}
		fs := make([]*counter, len(d.Freq))
		for j, f := range d.Freq {
			fc, err := counterOf(s.opts.FreqSet, d.Campaign+"|"+strconv.FormatInt(f.Window, 10)+"|"+f.User, []string{"c"}, ttlUntil(f.Expires, now), seq)
			if err != nil {
				return err
			}
			fs[j] = fc
		}
		freqs[i] = fs
		for k := range d.Notices {
			n := &d.Notices[k]
			nk := d.Campaign + "|" + spend.NoticeKey(n)
			if seen[nk] {
				out[i].Duplicates++ // the same notice twice in one flush
				continue
			}
			seen[nk] = true
			key, err := s.key(s.opts.NoticeSet, nk)
			if err != nil {
				return err
			}
			p := &pnote{n: n, delta: i, seq: seq, key: key, ttl: ttlUntil(n.Expires, now), recs: [3]*counter{day, total, nil}}
			if n.FreqRef > 0 {
				p.recs[2] = fs[n.FreqRef-1]
			}
			notes = append(notes, p)
		}
	}

	// 1. Create every notice record (create-only); read those that exist.
	ops := make([]as.BatchRecordIfc, len(notes))
	for j, p := range notes {
		wp := as.NewBatchWritePolicy()
		wp.RecordExistsAction = as.CREATE_ONLY
		wp.Expiration = p.ttl
		o := []*as.Operation{as.PutOp(as.NewBin(binOrigin, origin))}
		for k, c := range p.recs {
			if c != nil {
				o = append(o, as.PutOp(as.NewBin(stampBins[k], p.seq)))
				p.stamp[k] = p.seq
			}
		}
		ops[j] = as.NewBatchWrite(wp, p.key, o...)
	}
	if err := s.operate(ctx, ops); err != nil {
		return err
	}
	var exist []*pnote
	var failed []error
	for j, p := range notes {
		switch rc := ops[j].BatchRec().ResultCode; rc {
		case types.OK:
			p.mine = true
		case types.KEY_EXISTS_ERROR:
			exist = append(exist, p)
		default:
			failed = append(failed, recordErr(ops[j].BatchRec(), p.key))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("aerostore: flush: %d of %d notice records failed (nothing counted): %w", len(failed), len(notes), errors.Join(failed...))
	}
	if len(exist) > 0 {
		rops := make([]as.BatchRecordIfc, len(exist))
		for j, p := range exist {
			rops[j] = as.NewBatchRead(nil, p.key, []string{binOrigin, binDay, binTotal, binFreq})
		}
		if err := s.operate(ctx, rops); err != nil {
			return err
		}
		for j, p := range exist {
			r := rops[j].BatchRec()
			switch {
			case r.ResultCode == types.OK && r.Record != nil:
				p.gen = r.Record.Generation
				o, _ := r.Record.Bins[binOrigin].(string)
				p.mine = o == origin
				for k := range stampBins {
					v, err := intBin(r.Record.Bins, stampBins[k])
					if err != nil {
						return fmt.Errorf("aerostore: flush: notice %v: %w", p.key.Value(), err)
					}
					p.stamp[k] = v
				}
			case r.ResultCode == types.KEY_NOT_FOUND_ERROR:
				// Expired between the create and the read: the next
				// attempt creates it again.
				failed = append(failed, fmt.Errorf("notice %v vanished", p.key.Value()))
			default:
				failed = append(failed, recordErr(r, p.key))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("aerostore: flush: reading %d notice records: %w", len(exist), errors.Join(failed...))
		}
	}

	// 2. Read the counter records: values, generation, this origin's guard.
	if err := s.readCounters(ctx, corder, gb); err != nil {
		return err
	}

	// 3. Decide, per notice and counter record, whether it counts there;
	// restamp what an earlier batch of this origin left uncounted.
	var restamp []*pnote
	for _, p := range notes {
		if !p.mine {
			continue
		}
		re := false
		for k, c := range p.recs {
			if c == nil || c.applied(p.stamp[k]) {
				continue
			}
			p.count[k] = true
			if p.stamp[k] != p.seq {
				p.stamp[k] = p.seq
				re = true
			}
		}
		if re {
			restamp = append(restamp, p)
		}
	}
	if len(restamp) > 0 {
		wops := make([]as.BatchRecordIfc, len(restamp))
		for j, p := range restamp {
			wp := as.NewBatchWritePolicy()
			wp.GenerationPolicy = as.EXPECT_GEN_EQUAL
			wp.Generation = p.gen
			wp.Expiration = as.TTLDontUpdate
			var o []*as.Operation
			for k, c := range p.recs {
				if c != nil {
					o = append(o, as.PutOp(as.NewBin(stampBins[k], p.stamp[k])))
				}
			}
			wops[j] = as.NewBatchWrite(wp, p.key, o...)
		}
		if err := s.operate(ctx, wops); err != nil {
			return err
		}
		for j, p := range restamp {
			if r := wops[j].BatchRec(); r.ResultCode != types.OK {
				failed = append(failed, recordErr(r, p.key))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("aerostore: flush: restamping %d notice records (nothing counted): %w", len(restamp), errors.Join(failed...))
		}
	}

	// 4. Add what counts to each counter record, guarded by its generation
	// and recording the batch in the guard.
	for _, p := range notes {
		for k, c := range p.recs {
			if !p.count[k] {
				continue
			}
			if k < 2 {
				c.add[0] += p.n.Micros
				c.add[1]++
			} else {
				c.add[0]++
			}
		}
	}
	if err := s.writeCounters(ctx, corder, gb); err != nil {
		return err
	}

	// 5. Totals: the values after the flush; duplicates are the notices
	// that counted nowhere.
	for _, p := range notes {
		if !p.count[0] && !p.count[1] && !p.count[2] {
			out[p.delta].Duplicates++
		}
	}
	for _, i := range idx {
		d := &deltas[i]
		o := &out[i]
		o.Campaign, o.Day = d.Campaign, d.Day
		r := drecs[i]
		o.DayMicros, o.DayImps = r.day.vals[0], r.day.vals[1]
		o.TotalMicros, o.TotalImps = r.total.vals[0], r.total.vals[1]
		if len(d.Freq) > 0 {
			o.Freq = make([]int64, len(d.Freq))
			for j, c := range freqs[i] {
				o.Freq[j] = c.vals[0]
			}
		}
	}
	return nil
}

func ttlUntil(t, now time.Time) uint32 {
	ttl := int64(math.Ceil(t.Sub(now).Seconds()))
	return uint32(min(max(ttl, 1), 10*365*24*3600))
}

// readCounters reads cs' values, generations and guard bin gb.
func (s *Store) readCounters(ctx context.Context, cs []*counter, gb string) error {
	ops := make([]as.BatchRecordIfc, len(cs))
	for j, c := range cs {
		ops[j] = as.NewBatchRead(nil, c.key, append(slices.Clone(c.bins), gb))
	}
	if err := s.operate(ctx, ops); err != nil {
		return err
	}
	var failed []error
	for j, c := range cs {
		if err := c.load(ops[j].BatchRec(), gb); err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("aerostore: flush: reading %d counter records: %w", len(cs), errors.Join(failed...))
	}
	return nil
}

// load fills c from a read's result (a missing record is zero).
func (c *counter) load(r *as.BatchRecord, gb string) error {
	switch {
	case r.ResultCode == types.KEY_NOT_FOUND_ERROR:
		c.found, c.gen, c.guard = false, 0, nil
		clear(c.vals)
		return nil
	case r.ResultCode != types.OK || r.Record == nil:
		return recordErr(r, c.key)
	}
	c.found, c.gen = true, r.Record.Generation
	for b, name := range c.bins {
		v, err := intBin(r.Record.Bins, name)
		if err != nil {
			return fmt.Errorf("record %v: %w", c.key.Value(), err)
		}
		c.vals[b] = v
	}
	g, err := decodeGuard(r.Record.Bins[gb])
	if err != nil {
		return fmt.Errorf("record %v: %w", c.key.Value(), err)
	}
	c.guard = g
	return nil
}

// Bounds of the generation-conflict retries of one counter record.
const (
	genRetries = 8
	genBackoff = time.Millisecond // doubled per retry
)

// writeCounters adds each counter's add and records its batch sequence in
// its guard, with a write that expects the generation read (or creates the
// record). A record that changed meanwhile (another bidder's flush: a
// generation error, or a create that lost the race) is read again and
// written again; its add is unchanged because only this origin writes its
// guard. A counter that adds nothing is not written: no notice of this
// flush waits for it (a retried flush, or only duplicates).
func (s *Store) writeCounters(ctx context.Context, cs []*counter, gb string) error {
	pending := cs
	var failed []error
	for attempt := 0; len(pending) > 0; attempt++ {
		var ops []as.BatchRecordIfc
		var sent []*counter
		for _, c := range pending {
			if allZero(c.add) {
				continue
			}
			wp := as.NewBatchWritePolicy()
			wp.Expiration = c.ttl
			if c.found {
				wp.GenerationPolicy = as.EXPECT_GEN_EQUAL
				wp.Generation = c.gen
			} else {
				wp.RecordExistsAction = as.CREATE_ONLY
			}
			o := make([]*as.Operation, 0, 2*len(c.bins)+1)
			for b, name := range c.bins {
				o = append(o, as.AddOp(as.NewBin(name, c.add[b])))
			}
			o = append(o, as.PutOp(as.NewBin(gb, encodeGuard(insertGuard(c.guard, c.seq)))))
			for _, name := range c.bins {
				o = append(o, as.GetBinOp(name))
			}
			ops = append(ops, as.NewBatchWrite(wp, c.key, o...))
			sent = append(sent, c)
		}
		if len(ops) == 0 {
			break
		}
		if err := s.operate(ctx, ops); err != nil {
			return err
		}
		var retry []*counter
		for j, c := range sent {
			r := ops[j].BatchRec()
			switch {
			case r.ResultCode == types.OK && r.Record != nil:
				for b, name := range c.bins {
					v, err := intBin(r.Record.Bins, name)
					if err != nil {
						return fmt.Errorf("aerostore: flush: record %v: %w", c.key.Value(), err)
					}
					c.vals[b] = v
				}
				c.guard = insertGuard(c.guard, c.seq)
				clear(c.add)
			case (r.ResultCode == types.GENERATION_ERROR || r.ResultCode == types.KEY_EXISTS_ERROR) && attempt < genRetries:
				retry = append(retry, c)
			default:
				failed = append(failed, recordErr(r, c.key))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("aerostore: flush: %d counter records failed (a retry adds only what they miss): %w", len(failed), errors.Join(failed...))
		}
		if len(retry) > 0 {
			if err := sleepCtx(ctx, genBackoff<<attempt); err != nil {
				return err
			}
			// Re-read: values, generation; the guard is this origin's own.
			guards := make([][]int64, len(retry))
			for j, c := range retry {
				guards[j] = c.guard
			}
			if err := s.readCounters(ctx, retry, gb); err != nil {
				return err
			}
			for j, c := range retry {
				if !slices.Equal(guards[j], c.guard) {
					return fmt.Errorf("aerostore: flush: record %v: guard of origin changed by another flush (two bidders with one instance id?)", c.key.Value())
				}
			}
		}
		pending = retry
	}
	// Values of counters not written: as read.
	return nil
}

func allZero(v []int64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// insertGuard returns g (ascending) with seq added, keeping the GuardLen
// largest.
func insertGuard(g []int64, seq int64) []int64 {
	i, ok := slices.BinarySearch(g, seq)
	if ok {
		return g
	}
	n := slices.Insert(slices.Clone(g), i, seq)
	if len(n) > GuardLen {
		n = n[len(n)-GuardLen:]
	}
	return n
}

func encodeGuard(g []int64) []byte {
	b := make([]byte, 0, 8*len(g))
	for _, v := range g {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func decodeGuard(v any) ([]int64, error) {
	if v == nil {
		return nil, nil
	}
	b, ok := v.([]byte)
	if !ok || len(b)%8 != 0 {
		return nil, fmt.Errorf("guard bin: unexpected %T", v)
	}
	g := make([]int64, len(b)/8)
	for i := range g {
		g[i] = int64(binary.BigEndian.Uint64(b[8*i:]))
	}
	return g, nil
}

// operate sends ops in one BatchOperate, sending again (alone) those
// answering KEY_BUSY (definitely not applied), up to keyBusyRetries times
// with a doubling backoff. Each op's own result says what happened; the
// error is only for a context that ended.
func (s *Store) operate(ctx context.Context, ops []as.BatchRecordIfc) error {
	pending := ops
	for attempt := 0; len(pending) > 0; attempt++ {
		t, err := s.timeout(ctx)
		if err != nil {
			return err
		}
		// A batch that fails as a whole leaves its records' results
		// NO_RESPONSE (with the error): each record's result is what the
		// callers read.
		aerr := s.c.BatchOperate(s.batchPolicy(t), pending)
		var busy []as.BatchRecordIfc
		for _, o := range pending {
			r := o.BatchRec()
			if r.ResultCode == types.KEY_BUSY && !r.InDoubt && attempt < keyBusyRetries {
				busy = append(busy, o)
			} else if r.ResultCode != types.OK && r.Err == nil && aerr != nil {
				r.Err = aerr
			}
		}
		if len(busy) == 0 {
			return nil
		}
		pending = busy
		if err := sleepCtx(ctx, keyBusyBackoff<<attempt); err != nil {
			return err
		}
	}
	return nil
}

// recordErr describes a failed record, wrapping aero.ErrTTLRefused for 22 and
// naming the set limit and max-ttl for 4.
func recordErr(r *as.BatchRecord, key *as.Key) error {
	if r.ResultCode == types.FAIL_FORBIDDEN {
		return fmt.Errorf("%w: record %v: %w", aero.ErrTTLRefused, key.Value(), r.Err)
	}
	var err error = r.Err
	switch {
	case r.Err == nil:
		err = fmt.Errorf("result %v", r.ResultCode)
	case r.ResultCode == types.PARAMETER_ERROR:
		err = aero.WriteErr(key.Namespace(), key.SetName(), r.Err)
	}
	return fmt.Errorf("record %v: result %v (in doubt %v): %w", key.Value(), r.ResultCode, r.InDoubt, err)
}
