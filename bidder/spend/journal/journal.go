package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/internal/pebbledb"
	"github.com/rtbd/rtbd/bidder/spend"
)

var (
	// ErrClosed is returned by Append and Replay after Close.
	ErrClosed = errors.New("journal: closed")
	// ErrFull is returned by Append when Options.MaxPending records are
	// waiting for the store's confirmation.
	ErrFull = errors.New("journal: full")
	// ErrCorrupt is wrapped by the errors of a record value that does not
	// decode.
	ErrCorrupt = errors.New("journal: corrupt record")
)

// DefaultMaxPending is Options.MaxPending's default: about 1 GB of records.
const DefaultMaxPending = 10_000_000

// seqBlock is how many sequence numbers one durable reservation covers.
const seqBlock = 1 << 16

// Keys: 'n' + Seq (8 bytes big-endian) for records; "h" for the reserved
// sequence numbers (8 bytes big-endian: every Seq used is <= it).
var (
	hiKey     = []byte("h")
	recFirst  = []byte{'n'}
	recPastHi = []byte{'n' + 1}
	expFirst  = []byte{'x'}
	expPastHi = []byte{'x' + 1}
)

// Export records: 'x' + Seq (8 bytes big-endian) -> the record to export
// (opaque bytes, records.Record's binary form); "c/" + exporter name ->
// the exporter's cursor (8 bytes big-endian: every record <= it is
// delivered).
func expKey(k *[9]byte, seq uint64) []byte {
	k[0] = 'x'
	binary.BigEndian.PutUint64(k[1:], seq)
	return k[:]
}

func cursorKey(name string) []byte { return append([]byte("c/"), name...) }

func recKey(k *[9]byte, seq uint64) []byte {
	k[0] = 'n'
	binary.BigEndian.PutUint64(k[1:], seq)
	return k[:]
}

// Options configures Open. The zero value is usable.
type Options struct {
	// FS is the file system; default vfs.Default. Tests use vfs.NewMem().
	FS vfs.FS
	// MaxPending is the most records kept waiting for the store: past it
	// Append returns ErrFull (the notice is refused, not lost). Default
	// DefaultMaxPending (config spend.journal_max_pending).
	MaxPending int64
	// Logger receives corrupt records at Replay, Confirm failures and
	// Pebble's log lines. Default zap.NewNop().
	Logger *zap.Logger
	// Registerer receives the metrics; default: not registered.
	Registerer prometheus.Registerer
	// Exporters names the cursors of the export log (AppendExport): an
	// export record is deleted once every one of them has passed it. None:
	// AppendExport keeps no export record.
	Exporters []string
	// MaxExport is the most export records kept; past it AppendExport
	// writes the notice without its export record and calls ExportDropped
	// (an export outage never refuses a notice). Default DefaultMaxPending.
	MaxExport int64
	// ExportDropped is called for each export record not kept (nil: none).
	ExportDropped func()
}

// Journal is the local journal of accepted notices. All methods are safe
// for concurrent use.
type Journal struct {
	db   *pebble.DB
	opts Options
	log  *zap.Logger

	mu     sync.RWMutex // Close takes it exclusively; every use of db shares it
	closed bool

	next     atomic.Uint64 // the last Seq handed out (under seqMu)
	reserved atomic.Uint64 // every Seq <= reserved is covered by hiKey
	// seqMu hands out Seqs and keeps open: the Seqs handed out whose write
	// has not returned yet, ascending. A Seq is handed out before its batch
	// commits and concurrent batches commit in any order, so ReadAfter
	// reads no further than the first open Seq (visible): an exporter that
	// read Seq 11 while 10 was still being written would commit past 10
	// and never export it.
	seqMu sync.Mutex
	open  []uint64
	// testHookWrite, when set (tests), runs after a Seq is handed out and
	// before its write.
	testHookWrite func(seq uint64)
	resMu         sync.Mutex // serialises reservations
	atOpen        uint64     // Seqs <= atOpen were in the journal at Open: Replay's range

	pending atomic.Int64
	bufs    sync.Pool // *appendBuf

	exports   atomic.Int64 // export records kept
	cursorsMu sync.Mutex   // serialises Commit's deletions

	appendOK, appendErr, appendFull prometheus.Counter
	corrupt, confirmErr             prometheus.Counter
}

type appendBuf struct {
	key [9]byte
	val []byte
}

// Open opens (creating if needed) the journal in dir and counts the
// records left in it (Replay hands them back).
func Open(dir string, opts Options) (*Journal, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxExport <= 0 {
		opts.MaxExport = DefaultMaxPending
	}
	db, err := pebbledb.Open(dir, pebbledb.Options{FS: opts.FS, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("journal: %s: %w", dir, err)
	}
	j := &Journal{db: db, opts: opts, log: opts.Logger, open: make([]uint64, 0, 64)}
	j.bufs.New = func() any { return &appendBuf{val: make([]byte, 0, 128)} }
	if err := j.scan(); err != nil {
		db.Close()
		return nil, fmt.Errorf("journal: %s: %w", dir, err)
	}
	j.metrics(opts.Registerer)
	return j, nil
}

// scan finds the last Seq used (the reservation or the last record) and
// counts the records.
func (j *Journal) scan() error {
	var last uint64
	v, closer, err := j.db.Get(hiKey)
	switch {
	case err == nil:
		if len(v) == 8 {
			last = binary.BigEndian.Uint64(v)
		}
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return err
	}
	it, err := j.db.NewIter(&pebble.IterOptions{LowerBound: recFirst, UpperBound: recPastHi})
	if err != nil {
		return err
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
		if k := it.Key(); len(k) == 9 {
			last = max(last, binary.BigEndian.Uint64(k[1:]))
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	xit, err := j.db.NewIter(&pebble.IterOptions{LowerBound: expFirst, UpperBound: expPastHi})
	if err != nil {
		return err
	}
	var x int64
	for ok := xit.First(); ok; ok = xit.Next() {
		x++
		if k := xit.Key(); len(k) == 9 {
			last = max(last, binary.BigEndian.Uint64(k[1:]))
		}
	}
	if err := errors.Join(xit.Error(), xit.Close()); err != nil {
		return err
	}
	j.exports.Store(x)
	j.next.Store(last)
	j.reserved.Store(last) // the next Append reserves a new block
	j.atOpen = last
	j.pending.Store(n)
	return nil
}

// Append writes the notice of campaign durably (pebble.Sync: concurrent
// Appends share their fsyncs through Pebble's commit pipeline) and sets
// n.Seq to its sequence number, which grows across restarts. Only once it
// returns nil may the notice be acknowledged. Errors: ErrClosed, ErrFull,
// an error wrapping spend.ErrInvalid (an empty or too long id, negative
// micros), or the write's error; the notice is not in the journal then.
func (j *Journal) Append(campaign string, n *spend.Notice) error {
	return j.AppendExport(campaign, n, nil)
}

// AppendExport is Append, writing in the same atomic batch the export
// record rec (when rec is not empty and Options.Exporters names cursors):
// kept under the notice's Seq until every exporter has committed past it,
// whatever happens to the notice's own record. Past Options.MaxExport
// export records, the notice is written without it (ExportDropped).
func (j *Journal) AppendExport(campaign string, n *spend.Notice, rec []byte) error {
	if campaign == "" || len(campaign) > maxField || len(n.User) > maxField || n.Micros < 0 {
		j.appendErr.Inc()
		return fmt.Errorf("%w: journal: campaign %q (%d bytes of user id, %d micros)", spend.ErrInvalid, campaign, len(n.User), n.Micros)
	}
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		j.appendErr.Inc()
		return ErrClosed
	}
	if j.pending.Add(1) > j.opts.MaxPending {
		j.pending.Add(-1)
		j.appendFull.Inc()
		return fmt.Errorf("%w: %d records wait for the store", ErrFull, j.opts.MaxPending)
	}
	seq := j.begin()
	defer j.end(seq)
	if seq > j.reserved.Load() {
		if err := j.reserve(seq); err != nil {
			j.pending.Add(-1)
			j.appendErr.Inc()
			return err
		}
	}
	b := j.bufs.Get().(*appendBuf)
	b.val = appendRecord(b.val[:0], campaign, n)
	var err error
	exported := false
	if len(rec) > 0 && len(j.opts.Exporters) > 0 {
		if j.exports.Add(1) > j.opts.MaxExport {
			j.exports.Add(-1)
			if j.opts.ExportDropped != nil {
				j.opts.ExportDropped()
			}
		} else {
			exported = true
		}
	}
	if j.testHookWrite != nil {
		j.testHookWrite(seq)
	}
	if exported {
		wb := j.db.NewBatch()
		var xk [9]byte
		_ = wb.Set(recKey(&b.key, seq), b.val, nil)
		_ = wb.Set(expKey(&xk, seq), rec, nil)
		err = wb.Commit(pebble.Sync)
		wb.Close()
	} else {
		err = j.db.Set(recKey(&b.key, seq), b.val, pebble.Sync)
	}
	j.bufs.Put(b)
	if err != nil {
		if exported {
			j.exports.Add(-1)
		}
		j.pending.Add(-1)
		j.appendErr.Inc()
		return fmt.Errorf("journal: append: %w", err)
	}
	j.appendOK.Inc()
	n.Seq = seq
	return nil
}

// begin hands out the next Seq and marks its write open.
func (j *Journal) begin() uint64 {
	j.seqMu.Lock()
	seq := j.next.Add(1)
	j.open = append(j.open, seq)
	j.seqMu.Unlock()
	return seq
}

// end marks the write of seq returned, committed or failed.
func (j *Journal) end(seq uint64) {
	j.seqMu.Lock()
	if i := slices.Index(j.open, seq); i >= 0 {
		j.open = slices.Delete(j.open, i, i+1)
	}
	j.seqMu.Unlock()
}

// visible is the highest Seq at or below which every write has returned:
// an export record up to it is in the journal if it ever will be.
func (j *Journal) visible() uint64 {
	j.seqMu.Lock()
	defer j.seqMu.Unlock()
	if len(j.open) > 0 {
		return j.open[0] - 1
	}
	return j.next.Load()
}

// reserve makes the sequence numbers up to at least seq durable in hiKey
// before any record uses them, so a Seq is never handed out twice, even
// after a crash that follows the deletion of every record.
func (j *Journal) reserve(seq uint64) error {
	j.resMu.Lock()
	defer j.resMu.Unlock()
	if seq <= j.reserved.Load() {
		return nil
	}
	hi := max(seq, j.next.Load()) + seqBlock
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], hi)
	if err := j.db.Set(hiKey, v[:], pebble.Sync); err != nil {
		return fmt.Errorf("journal: reserve sequence numbers: %w", err)
	}
	j.reserved.Store(hi)
	return nil
}

// Confirm deletes the records of seqs (the store has their notices). It
// does not wait for an fsync: a deletion lost in a crash replays a notice
// the store already has, which the store applies once. It has the type of
// spend.Options.Confirmed; failures are logged and counted, and a call
// after Close does nothing (the records are replayed at the next start).
func (j *Journal) Confirm(seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return
	}
	b := j.db.NewBatch()
	var k [9]byte
	for _, s := range seqs {
		if err := b.Delete(recKey(&k, s), nil); err != nil {
			j.confirmFailed(err, len(seqs))
			b.Close()
			return
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		j.confirmFailed(err, len(seqs))
		b.Close()
		return
	}
	b.Close()
	if j.pending.Add(-int64(len(seqs))) < 0 {
		j.pending.Store(0) // a Seq confirmed twice
	}
}

// Drop deletes the records of seqs and their export records: notices
// written but then refused (never acknowledged), so neither charged nor
// exported.
func (j *Journal) Drop(seqs []uint64) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed || len(seqs) == 0 {
		return
	}
	b := j.db.NewBatch()
	defer b.Close()
	var k [9]byte
	xs := int64(0)
	for _, s := range seqs {
		_ = b.Delete(recKey(&k, s), nil)
		if _, closer, err := j.db.Get(expKey(&k, s)); err == nil {
			closer.Close()
			xs++
			_ = b.Delete(expKey(&k, s), nil)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		j.confirmFailed(err, len(seqs))
		return
	}
	j.exports.Add(-xs)
	if j.pending.Add(-int64(len(seqs))) < 0 {
		j.pending.Store(0)
	}
}

// Cursor is the last Seq exporter name has committed (0: none yet).
func (j *Journal) Cursor(name string) (uint64, error) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return 0, ErrClosed
	}
	v, closer, err := j.db.Get(cursorKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("journal: cursor %s: %w", name, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: cursor %s", ErrCorrupt, name)
	}
	return binary.BigEndian.Uint64(v), nil
}

// ReadAfter calls fn with up to max export records of Seq > after, in
// Seq order, up to the last Seq below which no write is still open (a
// record written later never lands behind an exporter's cursor); rec is
// valid only during the call.
func (j *Journal) ReadAfter(after uint64, max int, fn func(seq uint64, rec []byte) error) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return ErrClosed
	}
	upto := j.visible()
	if upto <= after {
		return nil
	}
	var lo, hi [9]byte
	it, err := j.db.NewIter(&pebble.IterOptions{LowerBound: expKey(&lo, after+1), UpperBound: expKey(&hi, upto+1)})
	if err != nil {
		return fmt.Errorf("journal: export: %w", err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < max; ok = it.Next() {
		k := it.Key()
		if len(k) != 9 {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("journal: export: %w", err)
		}
		if err := fn(binary.BigEndian.Uint64(k[1:]), v); err != nil {
			return err
		}
		n++
	}
	return it.Error()
}

// Commit moves exporter name's cursor to seq and deletes the export
// records every exporter has passed. The cursor is written without an
// fsync: one lost in a machine crash exports its records again (at least
// once; consumers deduplicate).
func (j *Journal) Commit(name string, seq uint64) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return ErrClosed
	}
	j.cursorsMu.Lock()
	defer j.cursorsMu.Unlock()
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], seq)
	if err := j.db.Set(cursorKey(name), v[:], pebble.NoSync); err != nil {
		return fmt.Errorf("journal: cursor %s: %w", name, err)
	}
	low := seq
	for _, e := range j.opts.Exporters {
		if e == name {
			continue
		}
		c, closer, err := j.db.Get(cursorKey(e))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil // that exporter has delivered nothing yet
		}
		if err != nil {
			return fmt.Errorf("journal: cursor %s: %w", e, err)
		}
		if len(c) == 8 {
			low = min(low, binary.BigEndian.Uint64(c))
		}
		closer.Close()
	}
	var hi [9]byte
	it, err := j.db.NewIter(&pebble.IterOptions{LowerBound: expFirst, UpperBound: expKey(&hi, low+1)})
	if err != nil {
		return err
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := j.db.DeleteRange(expFirst, expKey(&hi, low+1), pebble.NoSync); err != nil {
		return fmt.Errorf("journal: export: %w", err)
	}
	j.exports.Add(-n)
	return nil
}

// Exports is how many export records wait for an exporter.
func (j *Journal) Exports() int64 { return j.exports.Load() }

func (j *Journal) confirmFailed(err error, n int) {
	j.confirmErr.Inc()
	j.log.Warn("journal: confirm failed; the records stay and are replayed at the next start",
		zap.Int("records", n), zap.Error(err))
}

// ConfirmAll deletes every record, durably: for when the store is known to
// hold every notice appended (the spend Writer closed with nothing
// unflushed, and no Append can follow).
func (j *Journal) ConfirmAll() error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return ErrClosed
	}
	if err := j.db.DeleteRange(recFirst, recPastHi, pebble.Sync); err != nil {
		return fmt.Errorf("journal: confirm all: %w", err)
	}
	j.pending.Store(0)
	return nil
}

// ReplayStats is what Replay found.
type ReplayStats struct {
	// Replayed is how many records were handed to fn.
	Replayed int
	// Corrupt are the Seqs of the records that did not decode: logged,
	// skipped, and left in the journal.
	Corrupt []uint64
}

// Replay hands fn, in Seq order, every record that was in the journal at
// Open and is still there (not confirmed since), with n.Seq set. n is
// reused: fn must not keep it. A record that does not decode is logged with
// its Seq, counted, and skipped. An error from fn stops the replay and is
// returned.
func (j *Journal) Replay(fn func(campaign string, n *spend.Notice) error) (ReplayStats, error) {
	var st ReplayStats
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return st, ErrClosed
	}
	var hi [9]byte
	it, err := j.db.NewIter(&pebble.IterOptions{LowerBound: recFirst, UpperBound: recKey(&hi, j.atOpen+1)})
	if err != nil {
		return st, fmt.Errorf("journal: replay: %w", err)
	}
	defer it.Close()
	var n spend.Notice
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != 9 {
			continue
		}
		seq := binary.BigEndian.Uint64(k[1:])
		v, err := it.ValueAndErr()
		var campaign string
		if err == nil {
			n = spend.Notice{}
			campaign, err = decodeRecord(v, &n)
		}
		if err != nil {
			j.corrupt.Inc()
			st.Corrupt = append(st.Corrupt, seq)
			j.log.Error("journal: record skipped", zap.Uint64("seq", seq), zap.Error(err))
			continue
		}
		n.Seq = seq
		if err := fn(campaign, &n); err != nil {
			return st, fmt.Errorf("journal: replay seq %d: %w", seq, err)
		}
		st.Replayed++
	}
	if err := it.Error(); err != nil {
		return st, fmt.Errorf("journal: replay: %w", err)
	}
	return st, nil
}

// Pending is how many records wait for the store's confirmation.
func (j *Journal) Pending() int64 { return j.pending.Load() }

// Close closes the journal; what is left in it is replayed by the next
// Open's Replay. Later calls do nothing.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if err := j.db.Close(); err != nil {
		return fmt.Errorf("journal: close: %w", err)
	}
	return nil
}

func (j *Journal) metrics(reg prometheus.Registerer) {
	appends := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rtbd_spend_journal_appends_total",
		Help: "Notices written to the local journal by result (ok; error: not written, the notice was refused; full: spend.journal_max_pending records wait for the store).",
	}, []string{"result"})
	j.appendOK, j.appendErr, j.appendFull = appends.WithLabelValues("ok"), appends.WithLabelValues("error"), appends.WithLabelValues("full")
	corrupt := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_spend_journal_corrupt_records_total",
		Help: "Journal records that did not decode at replay (logged with their seq and skipped).",
	})
	confirmErr := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rtbd_spend_journal_confirm_errors_total",
		Help: "Failed deletions of journal records the store confirmed (they are replayed at the next start; the store applies them once).",
	})
	j.corrupt, j.confirmErr = corrupt, confirmErr
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rtbd_spend_journal_pending_records",
		Help: "Accepted notices in the local journal not yet confirmed by the spend store.",
	}, func() float64 { return float64(j.pending.Load()) })
	if reg == nil {
		return
	}
	for _, c := range []prometheus.Collector{appends, corrupt, confirmErr, pending} {
		if err := reg.Register(c); err != nil {
			j.log.Warn("journal: register metric", zap.Error(err))
		}
	}
}
