package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/similar"
	"github.com/rtbd/rtbd/internal/cputime"
)

// ErrUsage marks errors in how a command was called (exit code 2).
var ErrUsage = errors.New("ingest: usage")

// ErrAborted: the ingest stopped and published nothing (exit code 1).
var ErrAborted = errors.New("ingest: aborted, live version untouched")

// Methods of writing a version (Options.Method).
const (
	// MethodBulk sorts the rows externally and writes sorted tables that
	// Pebble ingests as they are (the default).
	MethodBulk = "bulk"
	// MethodBatch writes every row with a batched Set and compacts at the
	// end: the simple baseline the bulk path is measured against.
	MethodBatch = "batch"
)

// Defaults of Options.
const (
	DefaultMaxMemory      = 1 << 30
	DefaultTableBytes     = 256 << 20
	DefaultMaxRejectRatio = 0.01
	DefaultLogInterval    = 5 * time.Second
)

// Options of one ingest run. The zero value of each field takes the
// default noted.
type Options struct {
	// Data is the index data directory (required).
	Data string
	// Format of the feeds: "csv" or "jsonl". "": from each file's name
	// (required for "-", standard input).
	Format string
	// RejectFile receives rejected rows (TSV). "": DIR/rejects-VERSION.tsv.
	// It is created at the first reject.
	RejectFile string
	// MaxRejectRatio: more rejected rows than this share of the rows read
	// aborts the ingest (nothing is published). Zero tolerates no reject;
	// the -max-reject-ratio flag defaults to DefaultMaxRejectRatio (1%).
	MaxRejectRatio float64
	// Delta applies the feeds to a copy of the live version (upserts and
	// deletes) instead of replacing the catalog.
	Delta bool
	// Method is MethodBulk ("" too) or MethodBatch.
	Method string
	// MaxMemory bounds the process's memory, bytes: the sort buffer is
	// sized from it, and Run lowers Go's memory limit (debug.SetMemoryLimit,
	// process-wide) to 3/4 of it for its duration, restoring it after.
	// Zero: DefaultMaxMemory (1 GiB).
	MaxMemory int64
	// SortMem is the in-memory sort buffer, bytes (two halves: one filled
	// by the parser while the other is sorted and spilled). Zero: 2/5 of
	// MaxMemory.
	SortMem int64
	// TableBytes is the size at which a new table file is started.
	// Zero: DefaultTableBytes (256 MiB).
	TableBytes int64
	// Workers is how many goroutines merge the sorted runs into tables
	// (over disjoint key ranges). Zero: GOMAXPROCS, at most 8.
	Workers int
	// Logger gets start, progress (every LogInterval) and end lines. Nil:
	// none.
	Logger *zap.Logger
	// LogInterval between progress log lines. Zero: 5s; negative: none.
	LogInterval time.Duration
	// Progress, if not nil, receives a progress bar (a terminal).
	Progress io.Writer

	// Views are records roots (records.dir of the bidders, gathered)
	// whose view records (kind=view) over ViewsWindow feed the similar
	// lists of a full snapshot. None, missing or without views in the
	// window: the live version's lists are carried over.
	Views []string
	// ViewsWindow is how far back views are read. Zero:
	// DefaultViewsWindow (720h).
	ViewsWindow time.Duration
	// ViewsUntil ends the window; zero: the start of the run.
	ViewsUntil time.Time
	// Similar bounds the computation of the lists (see ingest/similar).
	Similar similar.Options

	// perWorker is the fewest records worth a merge worker of their own.
	// Zero: 100,000. (Tests lower it to exercise the split.)
	perWorker int64
}

func (o *Options) withDefaults() {
	if o.Method == "" {
		o.Method = MethodBulk
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	if o.SortMem == 0 {
		o.SortMem = o.MaxMemory * 2 / 5
	}
	if o.TableBytes == 0 {
		o.TableBytes = DefaultTableBytes
	}
	if o.Workers == 0 {
		o.Workers = min(runtime.GOMAXPROCS(0), 8)
	}
	if o.LogInterval == 0 {
		o.LogInterval = DefaultLogInterval
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.ViewsWindow == 0 {
		o.ViewsWindow = DefaultViewsWindow
	}
	if o.perWorker == 0 {
		o.perWorker = 100_000
	}
}

// validate returns every problem with the options and feeds, wrapping
// ErrUsage.
func (o *Options) validate(feeds []string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Data == "" {
		bad("-data: required")
	}
	if o.Method != MethodBulk && o.Method != MethodBatch {
		bad("-method: %q, want %s or %s", o.Method, MethodBulk, MethodBatch)
	}
	if o.MaxRejectRatio < 0 || o.MaxRejectRatio > 1 {
		bad("-max-reject-ratio: must be in [0, 1], got %g", o.MaxRejectRatio)
	}
	if o.MaxMemory < 64<<20 {
		bad("-max-memory: at least 64MiB, got %d bytes", o.MaxMemory)
	}
	if o.SortMem < 1<<20 || o.SortMem > o.MaxMemory*3/5 {
		bad("-sort-mem: between 1MiB and 3/5 of -max-memory (%d bytes), got %d bytes", o.MaxMemory*3/5, o.SortMem)
	}
	if o.TableBytes < 1<<20 {
		bad("-table-size: at least 1MiB, got %d bytes", o.TableBytes)
	}
	if o.Workers < 1 {
		bad("workers: at least 1, got %d", o.Workers)
	}
	if o.ViewsWindow < 0 {
		bad("-views-window: must be > 0, got %s", o.ViewsWindow)
	}
	if o.Delta && len(o.Views) > 0 {
		bad("-views: lists are computed by full snapshots; a -delta keeps its base's lists")
	}
	for _, v := range []struct {
		flag string
		n    int
	}{{"-similar-k", o.Similar.K}, {"-similar-min-support", o.Similar.MinSupport},
		{"-similar-max-views-per-user", o.Similar.MaxViewsPerUser}, {"-similar-max-users-per-product", o.Similar.MaxUsersPerProduct},
		{"-similar-max-pairs", o.Similar.MaxPairs}, {"-similar-robot-views", o.Similar.RobotViews}} {
		if v.n < 0 {
			bad("%s: must be >= 0 (0: the default), got %d", v.flag, v.n)
		}
	}
	if o.Similar.K > catalog.MaxSimilar {
		bad("-similar-k: at most %d, got %d", catalog.MaxSimilar, o.Similar.K)
	}
	var format feed.Format
	if o.Format != "" {
		f, err := feed.ParseFormat(o.Format)
		if err != nil {
			bad("-format: %w", err)
		}
		format = f
	}
	if len(feeds) == 0 {
		bad("no feed given (rtbd ingest -data DIR FEED...)")
	}
	stdin := 0
	for _, f := range feeds {
		if f == "-" {
			if stdin++; stdin == 2 {
				bad("- (standard input) given twice")
			}
			if format == feed.FormatAuto {
				bad("reading - (standard input) needs -format csv or -format jsonl")
			}
			continue
		}
		if format == feed.FormatAuto {
			if _, err := feed.DetectFormat(f); err != nil {
				bad("%s: %w (or give -format)", f, err)
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUsage, errors.Join(errs...))
}

// Summary is what an ingest did. Counts are rows unless said otherwise.
type Summary struct {
	Version string // the version built (published unless the run failed)
	Base    string // delta: the version the delta was applied to
	Mode    string // "full" or "delta"
	Method  string // MethodBulk or MethodBatch

	Files int
	// Bytes read from the feeds (as stored: compressed bytes for gzip).
	Bytes         int64
	RowsRead      int64
	Accepted      int64 // valid rows: Upserts + Deletes
	Upserts       int64
	Deletes       int64
	Rejected      map[feed.Reason]int64
	RejectedTotal int64
	RejectFile    string // written only if RejectedTotal > 0
	// Duplicates: rows superseded by a later row with the same
	// (group, id) (last wins). Not counted by MethodBatch.
	Duplicates int64
	// Delta, against the base version (MethodBulk only): upserts of new
	// products, upserts of existing ones, deletes that removed a product,
	// deletes of ids the base did not hold.
	Inserted, Updated, Removed, DeletedAbsent int64
	// Products in the new version; ProductsExact false means an estimate
	// (a layered delta version, see catalog.CountProducts).
	Products      int64
	ProductsExact bool
	// Runs spilled to disk by the external sort; Tables written.
	Runs, Tables int64
	// Unchanged: a delta without a valid row; nothing was published and
	// Version is the live version.
	Unchanged bool
	// Similar: the similar lists of a full snapshot (nil for a delta,
	// which keeps its base's).
	Similar *SimilarSummary
	// The published version's identity (catalog.IndexVersion): the data
	// directory's generation and the content hash; ChangedKeys, for a
	// delta, the products whose stored value it changed (-1: too many to
	// list; see catalog.Builder.ChangedKeys).
	Generation  uint64
	ContentHash uint64
	ChangedKeys int

	Elapsed, ParseTime, WriteTime, PublishTime time.Duration
	// CPU time (user + system) of the whole process during the run, and
	// during the parse+sort phase.
	CPU, ParseCPU time.Duration
}

// Phases of a run, for progress.
const (
	phaseParse int32 = iota + 1
	phaseWrite
	phasePublish
)

// job is one run of the ingest.
type job struct {
	opts    Options
	log     *zap.Logger
	b       *catalog.Builder
	base    string
	tmp     string
	crashAt string
	rej     *rejects
	start   time.Time

	sstMu  sync.Mutex
	runSeq atomic.Int64

	phase                              atomic.Int32
	bytesRead, bytesTotal              atomic.Int64
	rows, accepted, rejected           atomic.Int64
	upserts, deletes                   atomic.Int64
	total, written                     atomic.Int64 // records sorted; merged so far
	dups, runs, tables                 atomic.Int64
	sets, tombstones                   atomic.Int64
	inserted, updated, removed, absent atomic.Int64
	parseDone, writeDone               time.Time
	cpu0, parseCPU                     time.Duration
}

// Run ingests feeds (paths, "-" = stdin) into a new version of the index in
// opts.Data and publishes it. Nothing changes for readers unless it
// succeeds: every failure after the options are checked wraps ErrAborted
// (bad options wrap ErrUsage). The Summary is returned whenever rows were
// read, also with an error.
func Run(ctx context.Context, opts Options, feeds []string, stdin io.Reader) (*Summary, error) {
	opts.withDefaults()
	if err := opts.validate(feeds); err != nil {
		return nil, err
	}
	j := &job{opts: opts, log: opts.Logger, crashAt: os.Getenv(CrashPointEnv), start: time.Now(), cpu0: cputime.Self()}
	lock, err := catalog.LockDir(opts.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAborted, err)
	}
	defer lock.Close()
	j.cleanup()
	for _, f := range feeds {
		if f == "-" {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("%w: feed %w", ErrAborted, err)
		}
		j.bytesTotal.Add(st.Size())
	}
	if opts.Delta {
		if j.base, err = catalog.ReadPointer(opts.Data, catalog.CurrentFile); err != nil {
			return nil, fmt.Errorf("%w: -delta needs a live version to apply to: %w", ErrAborted, err)
		}
		j.b, err = catalog.NewDeltaBuilder(opts.Data, j.base, j.log)
	} else {
		j.b, err = catalog.NewBuilder(opts.Data, j.log)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAborted, err)
	}
	published := false
	defer func() {
		if published {
			return
		}
		// A failed publish may still have switched CURRENT (the rename
		// done, the directory sync failed): never delete a live version.
		if cur, err := catalog.ReadPointer(opts.Data, catalog.CurrentFile); err == nil && cur == j.b.Name() {
			return
		}
		j.b.Abort()
	}()
	rejectPath := opts.RejectFile
	if rejectPath == "" {
		rejectPath = filepath.Join(opts.Data, "rejects-"+j.b.Name()+".tsv")
	}
	j.rej = newRejects(rejectPath)
	defer j.rej.close()
	j.tmp = filepath.Join(opts.Data, "tmp-"+j.b.Name())
	if err := os.Mkdir(j.tmp, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAborted, err)
	}
	defer os.RemoveAll(j.tmp)

	if limit := opts.MaxMemory * 3 / 4; limit < debug.SetMemoryLimit(-1) {
		prev := debug.SetMemoryLimit(limit)
		defer debug.SetMemoryLimit(prev)
	}
	mode := "full"
	if opts.Delta {
		mode = "delta"
	}
	j.log.Info("ingest started", zap.String("data", opts.Data), zap.String("version", j.b.Name()),
		zap.String("mode", mode), zap.String("base", j.base), zap.String("method", opts.Method),
		zap.Strings("feeds", feeds), zap.Int64("bytes", j.bytesTotal.Load()))
	stopProgress := j.startProgress()
	if opts.Method == MethodBatch {
		err = j.runBatch(ctx, feeds, stdin)
	} else {
		err = j.runBulk(ctx, feeds, stdin)
	}
	var products int64
	exact := false
	noop := err == nil && opts.Delta && j.accepted.Load() == 0
	var sim *SimilarSummary
	if err == nil && !opts.Delta {
		sim, err = j.similarLists()
	}
	if err == nil && !noop {
		products, exact, err = j.publish()
		published = err == nil
	}
	stopProgress()
	sum := j.summary(feeds, mode, products, exact)
	sum.Similar = sim
	if noop { // nothing to apply: keep the live version (and PREVIOUS) as they are
		sum.Version, sum.Unchanged = j.base, true
		sum.Products, sum.ProductsExact, _ = catalog.CountProducts(opts.Data, j.base)
		j.log.Info("ingest done: empty delta, live version unchanged", zap.String("version", j.base))
		return sum, nil
	}
	if err != nil {
		if cerr := j.rej.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if !errors.Is(err, ErrAborted) {
			err = fmt.Errorf("%w: %w", ErrAborted, err)
		}
		j.log.Error("ingest aborted", zap.Error(err))
		return sum, err
	}
	if err := j.rej.close(); err != nil {
		j.log.Warn("reject file", zap.Error(err)) // the version is published: report, do not fail
	}
	sum.ContentHash, sum.ChangedKeys = j.b.ContentHash(), j.b.ChangedKeys()
	if _, gen, err := catalog.ReadCurrent(opts.Data); err == nil {
		sum.Generation = gen
	}
	j.log.Info("ingest done", zap.String("version", sum.Version), zap.Int64("rows", sum.RowsRead),
		zap.Int64("accepted", sum.Accepted), zap.Int64("rejected", sum.RejectedTotal),
		zap.Int64("duplicates", sum.Duplicates), zap.Int64("products", sum.Products),
		zap.Uint64("generation", sum.Generation), zap.String("content_hash", fmt.Sprintf("%016x", sum.ContentHash)),
		zap.Duration("elapsed", sum.Elapsed))
	return sum, nil
}

// cleanup removes what a crashed ingest left: unpublished version
// directories and temp dirs. The caller holds the lock.
func (j *job) cleanup() {
	removed, err := catalog.RemoveUnusedVersions(j.opts.Data)
	if err != nil {
		j.log.Warn("removing unused versions", zap.Error(err))
	}
	tmps, _ := filepath.Glob(filepath.Join(j.opts.Data, "tmp-v*"))
	for _, t := range tmps {
		if err := os.RemoveAll(t); err != nil {
			j.log.Warn("removing a leftover temp dir", zap.String("dir", t), zap.Error(err))
		}
	}
	if len(removed) > 0 || len(tmps) > 0 {
		j.log.Info("removed leftovers of earlier runs", zap.Strings("versions", removed), zap.Strings("tmp", tmps))
	}
}

// readFeeds reads every row of feeds in order, rejecting bad rows into the
// reject file and passing valid ones to handle.
func (j *job) readFeeds(ctx context.Context, feeds []string, stdin io.Reader, handle func(*feed.Row) error) error {
	var fopts feed.Options
	if j.opts.Format != "" {
		fopts.Format, _ = feed.ParseFormat(j.opts.Format) // checked by validate
	}
	for _, path := range feeds {
		of, err := openFeed(path, stdin, fopts, &j.bytesRead)
		if err != nil {
			return fmt.Errorf("feed %s: %w", path, err)
		}
		err = j.readFeed(ctx, of, handle)
		of.close()
		if err != nil {
			return err
		}
	}
	if j.rows.Load() < crashParseRows {
		j.crash(CrashParse)
	}
	return nil
}

// crashParseRows is where the "parse" crash point fires.
const crashParseRows = 10_000

func (j *job) readFeed(ctx context.Context, of *openedFeed, handle func(*feed.Row) error) error {
	// Counters are published every 256 rows (and at the end), not per row.
	var rows, accepted, upserts, deletes, rejected int64
	flush := func() {
		j.rows.Add(rows)
		j.accepted.Add(accepted)
		j.upserts.Add(upserts)
		j.deletes.Add(deletes)
		j.rejected.Add(rejected)
		rows, accepted, upserts, deletes, rejected = 0, 0, 0, 0, 0
	}
	defer flush()
	var row feed.Row
	for n := 0; ; n++ {
		if n&255 == 0 {
			flush()
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		err := of.reader.Next(&row)
		if err == io.EOF {
			return nil
		}
		if rows++; j.rows.Load()+rows == crashParseRows {
			j.crash(CrashParse)
		}
		if err != nil {
			var re *feed.RowError
			if errors.As(err, &re) {
				rejected++
				j.rej.add(of.name, re)
				continue
			}
			return fmt.Errorf("feed %s: %w", of.name, err)
		}
		accepted++
		if row.Delete {
			deletes++
		} else {
			upserts++
		}
		if err := handle(&row); err != nil {
			return err
		}
	}
}

// checkRejects aborts when too many rows were rejected, or when a full
// snapshot has no product at all (an empty or entirely bad feed must not
// wipe the catalog).
func (j *job) checkRejects() error {
	if err := j.rej.err; err != nil && err != errClosed {
		return fmt.Errorf("%w: reject file %s: %w", ErrAborted, j.rej.path, err)
	}
	rows, rej := j.rows.Load(), j.rejected.Load()
	if rows > 0 && float64(rej)/float64(rows) > j.opts.MaxRejectRatio {
		_ = j.rej.close() // flushed for the operator to read
		return fmt.Errorf("%w: %d of %d rows rejected (%.2f%%), over -max-reject-ratio %g; top reasons: %s; rejected rows are in %s",
			ErrAborted, rej, rows, 100*float64(rej)/float64(rows), j.opts.MaxRejectRatio,
			strings.Join(topReasons(j.rej.byReason, 3), ", "), j.rej.path)
	}
	if !j.opts.Delta && j.upserts.Load() == 0 {
		return fmt.Errorf("%w: the feeds hold no product (%d rows read); refusing to publish an empty catalog", ErrAborted, rows)
	}
	return nil
}

// runBulk is the bulk path: parse -> external sort -> tables -> ingest.
func (j *job) runBulk(ctx context.Context, feeds []string, stdin io.Reader) error {
	j.phase.Store(phaseParse)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	arenaLimit := int(j.opts.SortMem / 2)
	full := make(chan *arena, 1)
	free := make(chan *arena, 2)
	type sorted struct {
		runs []*runFile
		mem  *arena
		err  error
	}
	done := make(chan sorted, 1)
	go func() { // sort and spill
		var s sorted
		for a := range full {
			if s.err != nil {
				continue // drain
			}
			a.sort()
			if a.last {
				s.mem = a
				continue
			}
			w, err := j.newRunFile()
			if err == nil {
				var run *runFile
				var dups int64
				run, dups, err = spill(a, w)
				if err == nil {
					s.runs = append(s.runs, run)
					j.dups.Add(dups)
					j.runs.Add(1)
				}
			}
			if err != nil {
				s.err = err
				cancel()
				continue
			}
			a.reset()
			free <- a
		}
		done <- s
	}()

	// Size the arenas from the input: a small feed needs no big buffer.
	arenaCap := arenaLimit
	if in := j.bytesTotal.Load(); in > 0 && !slices.Contains(feeds, "-") && !j.gzipInput(feeds) {
		arenaCap = int(min(int64(arenaLimit), in+in/4+1<<20))
	}
	cur, arenas := newArena(arenaLimit, arenaCap), 1
	var key []byte
	var seq uint64
	const deleteRecord = lenBytes + catalog.KeyLen + 10 + 1
	perr := j.readFeeds(ctx, feeds, stdin, func(row *feed.Row) error {
		p := &row.Product
		key = catalog.AppendKey(key[:0], p.ProductGroupId, p.ProductId)
		need := deleteRecord
		if !row.Delete {
			need = maxRecordLen(p)
		}
		if !cur.room(need) {
			if len(cur.ents) == 0 {
				return fmt.Errorf("-sort-mem %d is too small for a row of %d bytes", j.opts.SortMem, need)
			}
			select {
			case full <- cur:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case cur = <-free:
			default:
				if arenas < 2 {
					cur, arenas = newArena(arenaLimit, arenaCap), arenas+1
					break
				}
				select {
				case cur = <-free:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if row.Delete {
			cur.add(key, seq, kindDelete, nil)
		} else {
			cur.addProduct(key, seq, p)
		}
		seq++
		return nil
	})
	if perr == nil {
		cur.last = true
		full <- cur // buffered: the sorter has taken the previous one or will
	}
	close(full)
	s := <-done
	if s.err != nil && (perr == nil || errors.Is(perr, context.Canceled)) {
		perr = s.err
	}
	defer func() {
		for _, r := range s.runs {
			removeQuiet(r.path)
		}
	}()
	if perr != nil {
		return perr
	}
	if err := j.checkRejects(); err != nil {
		return err
	}
	j.parseDone, j.parseCPU = time.Now(), cputime.Self()
	j.total.Store(int64(seq))
	j.phase.Store(phaseWrite)
	runs, err := j.reduceRuns(ctx, s.runs)
	s.runs = runs
	if err != nil {
		return err
	}
	paths, err := j.writeTables(ctx, runs, s.mem)
	s.mem = nil
	if err != nil {
		return err
	}
	if !j.opts.Delta && j.sets.Load() == 0 {
		return fmt.Errorf("%w: every product of the feeds was deleted by a later row; refusing to publish an empty catalog", ErrAborted)
	}
	if err := j.b.IngestSSTs(paths); err != nil {
		return err
	}
	os.RemoveAll(j.tmp) // the runs are merged: free the disk before the switch
	j.writeDone = time.Now()
	return nil
}

// gzipInput reports whether any feed file is gzip-compressed (its size on
// disk then says little about the data).
func (j *job) gzipInput(feeds []string) bool {
	for _, f := range feeds {
		if fh, err := os.Open(f); err == nil {
			var m [2]byte
			n, _ := io.ReadFull(fh, m[:])
			fh.Close()
			if n == 2 && m[0] == 0x1f && m[1] == 0x8b {
				return true
			}
		}
	}
	return false
}

// runBatch is the baseline: every row a batched Set (or Delete) as it is
// read, then a full compaction.
func (j *job) runBatch(ctx context.Context, feeds []string, stdin io.Reader) error {
	j.phase.Store(phaseParse)
	err := j.readFeeds(ctx, feeds, stdin, func(row *feed.Row) error {
		if row.Delete {
			return j.b.Delete(row.Product.ProductGroupId, row.Product.ProductId)
		}
		return j.b.Put(&row.Product)
	})
	if err != nil {
		return err
	}
	if err := j.checkRejects(); err != nil {
		return err
	}
	j.parseDone, j.parseCPU = time.Now(), cputime.Self()
	j.phase.Store(phaseWrite)
	j.writeDone = time.Now()
	return nil
}

// publish seals the version and makes it live; it returns the version's
// product count.
func (j *job) publish() (products int64, exact bool, err error) {
	j.phase.Store(phasePublish)
	var baseCount int64
	baseExact := false
	if j.opts.Delta {
		baseCount, baseExact, err = catalog.CountProducts(j.opts.Data, j.base)
		if err != nil {
			return 0, false, err
		}
	}
	// Batch writes are compacted into a read-optimal shape (a delta's are
	// not: that would rewrite the whole catalog); ingested tables need none.
	name, err := j.b.Seal(j.opts.Method == MethodBatch && !j.opts.Delta)
	if j.opts.Method == MethodBatch {
		j.writeDone = time.Now()
	}
	if err != nil {
		return 0, false, err
	}
	products, exact, err = catalog.CountProducts(j.opts.Data, name)
	if err != nil {
		return 0, false, err
	}
	if j.opts.Delta && j.opts.Method == MethodBulk && !exact {
		products, exact = baseCount+j.inserted.Load()-j.removed.Load(), baseExact
	}
	j.crash(CrashBeforePublish)
	if err := j.b.PublishSealed(); err != nil {
		return 0, false, err
	}
	j.crash(CrashAfterPublish)
	return products, exact, nil
}

func (j *job) summary(feeds []string, mode string, products int64, exact bool) *Summary {
	now := time.Now()
	s := &Summary{
		Version: j.b.Name(), Base: j.base, Mode: mode, Method: j.opts.Method,
		Files: len(feeds), Bytes: j.bytesRead.Load(),
		RowsRead: j.rows.Load(), Accepted: j.accepted.Load(),
		Upserts: j.upserts.Load(), Deletes: j.deletes.Load(),
		Rejected: j.rej.byReason, RejectedTotal: j.rejected.Load(), RejectFile: j.rej.path,
		Duplicates: j.dups.Load(),
		Inserted:   j.inserted.Load(), Updated: j.updated.Load(), Removed: j.removed.Load(), DeletedAbsent: j.absent.Load(),
		Products: products, ProductsExact: exact,
		Runs: j.runs.Load(), Tables: j.tables.Load(),
		Elapsed: now.Sub(j.start),
	}
	s.CPU = cputime.Self() - j.cpu0
	if !j.parseDone.IsZero() {
		s.ParseCPU = j.parseCPU - j.cpu0
		s.ParseTime = j.parseDone.Sub(j.start)
		if !j.writeDone.IsZero() {
			s.WriteTime = j.writeDone.Sub(j.parseDone)
			s.PublishTime = now.Sub(j.writeDone)
		}
	}
	return s
}

// Crash points (test hook): with the environment variable
// RTBD_INGEST_CRASHPOINT set to one of these, the ingest process kills
// itself with SIGKILL at that point, so tests can check crash safety with
// a real kill -9. Unset (always, in production) it does nothing.
const (
	CrashPointEnv = "RTBD_INGEST_CRASHPOINT"
	// CrashParse: when the 10,000th row has been read (or at the end of the
	// feeds if there are fewer).
	CrashParse = "parse"
	// CrashSST: when the first table of the new version is complete.
	CrashSST = "sst"
	// CrashBeforePublish: the version is complete, CURRENT not yet switched.
	CrashBeforePublish = "before-publish"
	// CrashAfterPublish: CURRENT names the new version; nothing is cleaned up.
	CrashAfterPublish = "after-publish"
)

func (j *job) crash(point string) {
	if j.crashAt != point {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
