package filesink

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/records"
)

// Options configures Open. Zero values are defaults, except Dir and
// Instance.
type Options struct {
	// Dir is the root of the partitions (records.dir). Required.
	Dir string
	// Instance names this bidder's files (<instance>-<seq>.parquet).
	// Required; it must not contain a path separator.
	Instance string
	// RollInterval completes a file this long after it was opened
	// (records.roll_interval); default 1m.
	RollInterval time.Duration
	// RollBytes completes a file once this many bytes are written to it
	// (records.roll_bytes); default 128 MiB.
	RollBytes int64
	// Retention deletes hour partitions that ended longer ago than this
	// (records.retention); default 168h.
	Retention time.Duration
	// ViewRetention is Retention for kind=view partitions, at least
	// Retention (records.view_retention: views feed recommendations);
	// default Retention.
	ViewRetention time.Duration
	// RowGroupRows is how many rows are buffered before they are written
	// out as a row group (bounds the memory of an open file); default 10000.
	RowGroupRows int
	// FS is the file system; default OS{}.
	FS FS
	// Metrics counts written and dropped records and failures.
	Metrics *records.Metrics
	// Logger; default zap.NewNop().
	Logger *zap.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultRollInterval = time.Minute
	DefaultRollBytes    = 128 << 20
	DefaultRetention    = 168 * time.Hour
)

// seqBlock is how many file sequence numbers one durable reservation
// covers.
const seqBlock = 1000

// stateDir is the sink's own directory under Dir (hidden from readers):
// it holds each instance's reserved file sequence number.
const stateDir = "_rtbd"

// Sink writes records into Parquet files (zstd) under Hive partitions
// Dir/kind=K/date=YYYY-MM-DD/hour=HH (UTC), one open file per partition
// being written, each written under a hidden name (".<name>") and renamed
// to <instance>-<seq>.parquet once complete: every RollInterval, or
// RollBytes, or when a charge record of another hour arrives. Seq grows
// across restarts (reserved durably in blocks in Dir/_rtbd/<instance>.seq,
// and never below the clock's milliseconds at start). A record the sink
// cannot write (the disk refuses a file, a rename fails) is dropped and
// counted, the error logged once per interval; bidding is not affected.
// It implements records.Sink and records.ChargeSink. Safe for concurrent
// use.
type Sink struct {
	opts Options
	fs   FS
	m    *records.SinkMetrics

	mu       sync.Mutex
	open     map[partKey]*openFile
	charge   *openFile
	durable  uint64 // highest charge Seq in a completed file
	next     uint64 // last file seq used
	reserved uint64 // every seq <= reserved is durably reserved
	lastRet  time.Time
	rows     []records.Row // scratch of write
}

type partKey struct {
	kind records.Kind
	hour int64 // unix seconds of the hour
}

type openFile struct {
	key           partKey
	f             File
	cw            countingWriter
	w             *parquet.GenericWriter[records.Row]
	hidden, final string
	opened        time.Time
	counts        [16]int
	buffered      int
	maxSeq        uint64
}

type countingWriter struct {
	w File
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Open prepares the sink: it removes this instance's hidden files left by
// a crash (their records are lost, except charges, which the journal
// exports again) and reads the reserved sequence number.
func Open(opts Options) (*Sink, error) {
	if opts.Dir == "" {
		return nil, errors.New("filesink: no directory")
	}
	if opts.Instance == "" || strings.ContainsAny(opts.Instance, `/\`) || records.Hidden(opts.Instance) {
		return nil, fmt.Errorf("filesink: instance %q: must be non-empty, without / or \\, not starting with . or _", opts.Instance)
	}
	if opts.RollInterval <= 0 {
		opts.RollInterval = DefaultRollInterval
	}
	if opts.RollBytes <= 0 {
		opts.RollBytes = DefaultRollBytes
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	opts.ViewRetention = max(opts.ViewRetention, opts.Retention)
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = 10000
	}
	if opts.FS == nil {
		opts.FS = OS{}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Sink{opts: opts, fs: opts.FS, m: opts.Metrics.Sink(records.SinkFile), open: map[partKey]*openFile{}}
	if b, err := s.fs.ReadFile(s.seqPath()); err == nil {
		v, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil {
			return nil, fmt.Errorf("filesink: %s: %w", s.seqPath(), perr)
		}
		s.next = v
	} else if !errors.Is(err, fs.ErrNotExist) {
		// An unreadable directory is a failure like any other: the sink
		// drops and counts until it can write; the clock floor below still
		// keeps file numbers apart.
		opts.Logger.Warn("filesink: reading the file number reservation", zap.String("dir", opts.Dir), zap.Error(err))
	}
	s.next = max(s.next, uint64(opts.Now().UnixMilli()))
	s.reserved = s.next
	s.removeOrphans()
	return s, nil
}

// Name is records.SinkFile.
func (s *Sink) Name() string { return records.SinkFile }

// Dir is the root of the partitions.
func (s *Sink) Dir() string { return s.opts.Dir }

func (s *Sink) seqPath() string {
	return filepath.Join(s.opts.Dir, stateDir, s.opts.Instance+".seq")
}

// removeOrphans deletes this instance's hidden files (a crash left them).
func (s *Sink) removeOrphans() {
	prefix := "." + s.opts.Instance + "-"
	kinds, _ := s.fs.ReadDir(s.opts.Dir)
	for _, k := range kinds {
		if !strings.HasPrefix(k.Name(), "kind=") {
			continue
		}
		kd := filepath.Join(s.opts.Dir, k.Name())
		dates, _ := s.fs.ReadDir(kd)
		for _, d := range dates {
			dd := filepath.Join(kd, d.Name())
			hours, _ := s.fs.ReadDir(dd)
			for _, h := range hours {
				hd := filepath.Join(dd, h.Name())
				files, _ := s.fs.ReadDir(hd)
				for _, f := range files {
					if strings.HasPrefix(f.Name(), prefix) {
						_ = s.fs.Remove(filepath.Join(hd, f.Name()))
					}
				}
			}
		}
	}
}

// nextSeq returns a file sequence number never used before by this
// instance, reserving a block durably when needed.
func (s *Sink) nextSeq() (uint64, error) {
	seq := s.next + 1
	if seq > s.reserved {
		hi := seq + seqBlock
		dir := filepath.Join(s.opts.Dir, stateDir)
		if err := s.fs.MkdirAll(dir, 0o755); err != nil {
			return 0, err
		}
		tmp := s.seqPath() + ".tmp"
		_ = s.fs.Remove(tmp)
		f, err := s.fs.Create(tmp)
		if err != nil {
			return 0, err
		}
		_, err = f.Write([]byte(strconv.FormatUint(hi, 10) + "\n"))
		err = errors.Join(err, f.Sync(), f.Close())
		if err == nil {
			err = s.fs.Rename(tmp, s.seqPath())
		}
		if err != nil {
			_ = s.fs.Remove(tmp)
			return 0, fmt.Errorf("filesink: reserve file numbers: %w", err)
		}
		s.reserved = hi
	}
	s.next = seq
	return seq, nil
}

func (s *Sink) openFile(k partKey) (*openFile, error) {
	dir := records.PartitionDir(s.opts.Dir, k.kind, time.Unix(k.hour, 0))
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	seq, err := s.nextSeq()
	if err != nil {
		return nil, err
	}
	name := records.FileName(s.opts.Instance, seq)
	of := &openFile{key: k, hidden: filepath.Join(dir, "."+name), final: filepath.Join(dir, name), opened: s.opts.Now()}
	f, err := s.fs.Create(of.hidden)
	if err != nil {
		return nil, err
	}
	of.f = f
	of.cw.w = f
	of.w = parquet.NewGenericWriter[records.Row](&of.cw, parquet.Compression(&zstd.Codec{}),
		parquet.CreatedBy("rtbd", "", ""))
	return of, nil
}

// write appends recs (all of of's partition) to of, in one call of the
// Parquet writer.
func (s *Sink) write(of *openFile, recs []records.Record) error {
	if cap(s.rows) < len(recs) {
		s.rows = append(s.rows[:cap(s.rows)], make([]records.Row, len(recs)-cap(s.rows))...)
	}
	rows := s.rows[:len(recs)]
	for i := range recs {
		recs[i].ToRow(&rows[i])
	}
	if _, err := of.w.Write(rows); err != nil {
		return err
	}
	for i := range recs {
		of.counts[recs[i].Kind]++
		of.maxSeq = max(of.maxSeq, recs[i].Seq)
	}
	if of.buffered += len(recs); of.buffered >= s.opts.RowGroupRows {
		of.buffered = 0
		return of.w.Flush()
	}
	return nil
}

// run is the length of the run of records at the start of recs that share
// the first one's partition.
func run(recs []records.Record) int {
	k := keyOf(&recs[0])
	n := 1
	for n < len(recs) && keyOf(&recs[n]) == k {
		n++
	}
	return n
}

// complete closes of and renames it to its final name: its records are
// counted written, or dropped if that fails.
func (s *Sink) complete(of *openFile) error {
	err := of.w.Close()
	err = errors.Join(err, of.f.Sync())
	err = errors.Join(err, of.f.Close())
	if err == nil {
		err = s.fs.Rename(of.hidden, of.final)
	}
	if err != nil {
		_ = s.fs.Remove(of.hidden)
		for k, n := range of.counts {
			s.m.Dropped(records.Kind(k), n)
		}
		return fmt.Errorf("filesink: complete %s: %w", of.final, err)
	}
	for k, n := range of.counts {
		s.m.Written(records.Kind(k), n)
	}
	return nil
}

// discard drops an open file that failed.
func (s *Sink) discard(of *openFile) {
	_ = of.f.Close()
	_ = s.fs.Remove(of.hidden)
	for k, n := range of.counts {
		s.m.Dropped(records.Kind(k), n)
	}
}

func keyOf(r *records.Record) partKey {
	return partKey{kind: r.Kind, hour: r.Time.UTC().Truncate(time.Hour).Unix()}
}

// Write writes recs (records other than charges) into their partitions'
// open files. A record that cannot be written is dropped and counted.
func (s *Sink) Write(recs []records.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(recs) > 0 {
		n := run(recs)
		part := recs[:n]
		recs = recs[n:]
		k := keyOf(&part[0])
		of := s.open[k]
		if of == nil {
			var err error
			if of, err = s.openFile(k); err != nil {
				s.m.Dropped(k.kind, n)
				s.m.Fail(err)
				continue
			}
			s.open[k] = of
		}
		if err := s.write(of, part); err != nil {
			delete(s.open, k)
			s.discard(of)
			s.m.Dropped(k.kind, n)
			s.m.Fail(err)
			continue
		}
		if of.cw.n >= s.opts.RollBytes {
			delete(s.open, k)
			s.m.Fail(s.complete(of))
		}
	}
}

// Tick completes the files due (RollInterval) and applies the retention
// (at most once a minute).
func (s *Sink) Tick(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, of := range s.open {
		if now.Sub(of.opened) >= s.opts.RollInterval {
			delete(s.open, k)
			s.m.Fail(s.complete(of))
		}
	}
	if now.Sub(s.lastRet) >= time.Minute {
		s.lastRet = now
		s.m.Fail(s.retain(now))
	}
}

// retain deletes the hour partitions past their kind's retention, and the
// date directories left empty.
func (s *Sink) retain(now time.Time) error {
	var errs []error
	for k := records.KindBid; k.Valid(); k++ {
		keep := s.opts.Retention
		if k == records.KindView {
			keep = s.opts.ViewRetention
		}
		cut := now.Add(-keep)
		kd := filepath.Join(s.opts.Dir, "kind="+k.String())
		dates, err := s.fs.ReadDir(kd)
		if err != nil {
			continue // no partitions (or the directory is gone: Write reports that)
		}
		for _, d := range dates {
			day, err := time.Parse(time.DateOnly, strings.TrimPrefix(d.Name(), "date="))
			if err != nil || !strings.HasPrefix(d.Name(), "date=") {
				continue
			}
			dd := filepath.Join(kd, d.Name())
			if !day.Add(24 * time.Hour).After(cut) {
				errs = append(errs, s.fs.RemoveAll(dd))
				continue
			}
			hours, err := s.fs.ReadDir(dd)
			if err != nil {
				continue
			}
			for _, h := range hours {
				hh, err := strconv.Atoi(strings.TrimPrefix(h.Name(), "hour="))
				if err != nil || !strings.HasPrefix(h.Name(), "hour=") {
					continue
				}
				if !day.Add(time.Duration(hh+1) * time.Hour).After(cut) {
					errs = append(errs, s.fs.RemoveAll(filepath.Join(dd, h.Name())))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// WriteCharges writes charge records into the open charge file (one at a
// time: a record of another hour completes it first) and returns the
// highest Seq in a completed file. On an error the open charge file is
// discarded: the exporter hands its records again.
func (s *Sink) WriteCharges(recs []records.Record) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(recs) > 0 {
		n := run(recs)
		part := recs[:n]
		recs = recs[n:]
		k := keyOf(&part[0])
		if s.charge != nil && s.charge.key != k {
			if err := s.completeCharge(); err != nil {
				return s.durable, err
			}
		}
		if s.charge == nil {
			of, err := s.openFile(k)
			if err != nil {
				return s.durable, fmt.Errorf("filesink: %w", err)
			}
			s.charge = of
		}
		if err := s.write(s.charge, part); err != nil {
			s.discard(s.charge)
			s.charge = nil
			return s.durable, fmt.Errorf("filesink: %w", err)
		}
		if s.charge.cw.n >= s.opts.RollBytes {
			if err := s.completeCharge(); err != nil {
				return s.durable, err
			}
		}
	}
	return s.durable, nil
}

// SyncCharges completes the open charge file when it is RollInterval old
// (or force).
func (s *Sink) SyncCharges(now time.Time, force bool) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.charge != nil && (force || now.Sub(s.charge.opened) >= s.opts.RollInterval) {
		if err := s.completeCharge(); err != nil {
			return s.durable, err
		}
	}
	return s.durable, nil
}

func (s *Sink) completeCharge() error {
	of := s.charge
	s.charge = nil
	// Its records are handed again on failure: not dropped.
	err := of.w.Close()
	err = errors.Join(err, of.f.Sync(), of.f.Close())
	if err == nil {
		err = s.fs.Rename(of.hidden, of.final)
	}
	if err != nil {
		_ = s.fs.Remove(of.hidden)
		return fmt.Errorf("filesink: complete %s: %w", of.final, err)
	}
	s.m.Written(records.KindCharge, of.counts[records.KindCharge])
	s.durable = max(s.durable, of.maxSeq)
	return nil
}

// Close completes every open file (the charge file too: its records are
// durable, the next exporter's cursor commit is the caller's).
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for k, of := range s.open {
		delete(s.open, k)
		errs = append(errs, s.complete(of))
	}
	if s.charge != nil {
		errs = append(errs, s.completeCharge())
	}
	return errors.Join(errs...)
}
