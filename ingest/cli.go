package ingest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/similar"
	"github.com/rtbd/rtbd/internal/cliflag"
)

// cli holds the flags that are not Options.
type cli struct {
	rollback bool
	progress string
	textfile string
}

// Usage documents `rtbd ingest`.
func Usage(w io.Writer) {
	fmt.Fprint(w, `rtbd ingest -data DIR [flags] FEED...   load feeds into a new index version and publish it
rtbd ingest -data DIR -delta [flags] FEED...   apply upserts and deletes to a copy of the live version
rtbd ingest -data DIR -rollback   make the previous version live again (a second rollback undoes it)
  FEED: a path or - (stdin, with -format); CSV (.csv) or JSON Lines (.jsonl, .ndjson), gzip or not.
  Delete rows (for -delta): op=delete or deleted=true, with id and group_id. Bad rows go to the
  reject file; duplicates of an id: the last row wins. Another ingest on DIR fails after 1 s (DIR/LOCK).
  Exit codes: 0 published (or rolled back), 1 aborted (rejects over the limit, I/O error, locked,
  interrupted; the live version is untouched), 2 usage or configuration error.
`)
	fs := newFlags(&Options{}, &cli{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func newFlags(o *Options, c *cli) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd ingest", flag.ContinueOnError)
	fs.StringVar(&o.Data, "data", "./data/catalog", "index data directory")
	fs.StringVar(&o.Format, "format", "", "feed format when the name does not tell: csv or jsonl")
	fs.StringVar(&o.RejectFile, "reject-file", "", "where rejected rows go, TSV (default DIR/rejects-VERSION.tsv, written only if a row is rejected)")
	fs.Float64Var(&o.MaxRejectRatio, "max-reject-ratio", DefaultMaxRejectRatio, "abort, publishing nothing, if more than this share of rows is rejected")
	fs.BoolVar(&o.Delta, "delta", false, "apply the feeds as a delta (upserts and deletes) to the live version")
	fs.StringVar(&o.Method, "method", MethodBulk, "bulk (external sort + sorted tables) or batch (batched Sets + compaction: the slow baseline)")
	o.MaxMemory = DefaultMaxMemory
	fs.Var((*byteSize)(&o.MaxMemory), "max-memory", "memory bound of the ingest process, a `size` such as 1GiB or 512MiB (sizes the sort buffer)")
	fs.Var((*byteSize)(&o.SortMem), "sort-mem", "in-memory sort buffer (a `size`) before sorted runs spill to disk (default 2/5 of -max-memory)")
	o.TableBytes = DefaultTableBytes
	fs.Var((*byteSize)(&o.TableBytes), "table-size", "`size` at which a new table file of the version is started")
	fs.BoolVar(&c.rollback, "rollback", false, "switch CURRENT back to PREVIOUS and exit")
	fs.StringVar(&c.progress, "progress", "auto", "auto (a bar on a terminal, log lines otherwise), bar, log or none")
	fs.DurationVar(&o.LogInterval, "log-interval", DefaultLogInterval, "interval of progress log lines")
	fs.StringVar(&c.textfile, "textfile", "", "at the end of the run, write its metrics (outcome, time of the last success, rows) to this file for node_exporter's textfile collector (a name ending in .prom; written atomically)")
	fs.Var((*stringsFlag)(&o.Views), "views", "records root (`DIR`) whose view records feed the similar-product lists; repeatable (full snapshots only; none: the previous lists are carried over)")
	fs.DurationVar(&o.ViewsWindow, "views-window", DefaultViewsWindow, "how far back views are read")
	fs.Func("views-until", "end of the views window, RFC 3339 (default: the start of the run); nodes that ingest the same feed and views with the same -views-until publish the same lists", func(v string) error {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fmt.Errorf("want an RFC 3339 time such as 2026-12-01T03:00:00Z: %w", err)
		}
		o.ViewsUntil = t
		return nil
	})
	fs.IntVar(&o.Similar.K, "similar-k", similar.DefaultK, "length of each product's similar list")
	fs.IntVar(&o.Similar.MinSupport, "similar-min-support", similar.DefaultMinSupport, "fewest users who viewed both products for a co-view pair to count")
	fs.IntVar(&o.Similar.MaxViewsPerUser, "similar-max-views-per-user", similar.DefaultMaxViewsPerUser, "distinct products per user (the most recent) that form pairs")
	fs.IntVar(&o.Similar.MaxUsersPerProduct, "similar-max-users-per-product", similar.DefaultMaxUsersPerProduct, "viewers kept per product")
	fs.IntVar(&o.Similar.RobotViews, "similar-robot-views", similar.DefaultRobotViews, "a user with more views in the window is skipped")
	fs.IntVar(&o.Similar.MaxPairs, "similar-max-pairs", similar.DefaultMaxPairs, "(user, product) views held in memory, 16 bytes each; beyond it users are sampled")
	return fs
}

// Main is `rtbd ingest`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o Options
	var c cli
	fs := newFlags(&o, &c)
	fs.Usage = func() { Usage(stderr) }
	if err := cliflag.Parse(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if c.rollback {
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: -rollback takes no feed", ErrUsage)
		}
		return rollback(o.Data, stdout)
	}
	tty := isTerminal(stderr)
	bar := false
	switch c.progress {
	case "auto":
		bar = tty
	case "bar":
		bar = true
	case "log":
	case "none":
		o.LogInterval = -1
	default:
		return fmt.Errorf("%w: -progress: %q, want auto, bar, log or none", ErrUsage, c.progress)
	}
	level := zapcore.InfoLevel
	if bar {
		o.Progress = stderr
		o.LogInterval = -1
		level = zapcore.WarnLevel // the bar shows progress; logs only for problems
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	o.Logger = zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(stderr), level))
	defer o.Logger.Sync()
	if c.textfile != "" && !strings.HasSuffix(c.textfile, ".prom") {
		return fmt.Errorf("%w: -textfile: %q does not end in .prom (node_exporter's textfile collector reads *.prom only)", ErrUsage, c.textfile)
	}
	start := time.Now()
	sum, err := Run(ctx, o, fs.Args(), os.Stdin)
	if sum != nil {
		printSummary(stdout, sum, err == nil)
	}
	if c.textfile != "" && !errors.Is(err, ErrUsage) {
		mode := "full"
		if o.Delta {
			mode = "delta"
		}
		r := RunResult{Mode: mode, Method: o.Method, Summary: sum, Err: err, Start: start, End: time.Now()}
		if terr := WriteTextfile(c.textfile, r); terr != nil {
			o.Logger.Error("textfile not written", zap.String("path", c.textfile), zap.Error(terr))
		}
	}
	return err
}

// rollback switches DIR back to its previous version, holding the lock.
func rollback(dir string, stdout io.Writer) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%w: -data: %w", ErrUsage, err)
	}
	lock, err := catalog.LockDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAborted, err)
	}
	defer lock.Close()
	from, to, err := catalog.Rollback(dir)
	if err != nil {
		return fmt.Errorf("ingest: rollback: %w", err)
	}
	_, gen, _ := catalog.ReadCurrent(dir)
	fmt.Fprintf(stdout, "rolled back %s: CURRENT %s -> %s, generation %d (PREVIOUS is now %s; -rollback again to undo)\n", dir, from, to, gen, from)
	return nil
}

func printSummary(w io.Writer, s *Summary, published bool) {
	secs := s.Elapsed.Seconds()
	rate, mbs := 0.0, 0.0
	if secs > 0 {
		rate, mbs = float64(s.RowsRead)/secs, float64(s.Bytes)/secs/1e6
	}
	state := "published"
	switch {
	case s.Unchanged:
		state = "unchanged (empty delta, nothing published)"
	case !published:
		state = "NOT published"
	}
	fmt.Fprintf(w, "version %s %s (%s, %s)", s.Version, state, s.Mode, s.Method)
	if s.Base != "" {
		fmt.Fprintf(w, " on %s", s.Base)
	}
	fmt.Fprintf(w, "\n  rows read     %d from %d feed(s), %.1f MB\n", s.RowsRead, s.Files, float64(s.Bytes)/1e6)
	fmt.Fprintf(w, "  accepted      %d (%d upserts, %d deletes)\n", s.Accepted, s.Upserts, s.Deletes)
	fmt.Fprintf(w, "  rejected      %d\n", s.RejectedTotal)
	reasons := make([]string, 0, len(s.Rejected))
	for r := range s.Rejected {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "    %-20s %d\n", r, s.Rejected[feed.Reason(r)])
	}
	if s.RejectedTotal > 0 {
		fmt.Fprintf(w, "    rejected rows in %s\n", s.RejectFile)
	}
	if s.Method == MethodBulk {
		fmt.Fprintf(w, "  duplicates    %d (superseded by a later row of the same id)\n", s.Duplicates)
	}
	if s.Mode == "delta" && s.Method == MethodBulk {
		fmt.Fprintf(w, "  delta         %d new, %d updated, %d removed, %d deletes of absent ids\n",
			s.Inserted, s.Updated, s.Removed, s.DeletedAbsent)
	}
	if published {
		approx := ""
		if !s.ProductsExact {
			approx = " (estimate: the version is layered by deltas)"
		}
		fmt.Fprintf(w, "  products      %d in the new version%s\n", s.Products, approx)
	}
	if published && !s.Unchanged {
		fmt.Fprintf(w, "  index version generation %d, content hash %016x", s.Generation, s.ContentHash)
		switch {
		case s.Mode == "delta" && s.ChangedKeys >= 0:
			fmt.Fprintf(w, ", %d products changed", s.ChangedKeys)
		case s.Mode == "delta":
			fmt.Fprintf(w, ", too many changes to list (clients refetch everything)")
		}
		fmt.Fprintln(w)
	}
	if sm := s.Similar; sm != nil && published {
		if sm.Computed {
			st := sm.Stats
			fmt.Fprintf(w, "  similar lists %d (%d co-viewed, %d content only) for %d products, %s\n", st.Lists, st.CoViewed, st.ContentOnly, st.Products, sm.Elapsed.Round(time.Millisecond))
			fmt.Fprintf(w, "    views       %d read, %d used by %d users (sample %.3g)\n", st.Views,
				st.Views-st.UnknownProduct-st.NoUser-st.Duplicate-st.Capped-st.Robot-st.SampledOut, st.Users, st.SampleShare)
			fmt.Fprintf(w, "    skipped     %d unknown product, %d no user, %d duplicate, %d over the per-user cap, %d of %d robot users, %d sampled out\n",
				st.UnknownProduct, st.NoUser, st.Duplicate, st.Capped, st.Robot, st.RobotUsers, st.SampledOut)
		} else {
			fmt.Fprintf(w, "  similar lists %d carried over from %s (%s)\n", sm.Carried, orNone(sm.CarriedFrom), sm.Reason)
		}
		if len(sm.MissingDirs) > 0 || sm.BadFiles > 0 {
			fmt.Fprintf(w, "    views dirs  %d missing %v, %d unreadable files skipped\n", len(sm.MissingDirs), sm.MissingDirs, sm.BadFiles)
		}
	}
	fmt.Fprintf(w, "  elapsed       %s (parse+sort %s, write %s, publish %s), %.0f rows/s, %.1f MB/s",
		s.Elapsed.Round(time.Millisecond), s.ParseTime.Round(time.Millisecond),
		s.WriteTime.Round(time.Millisecond), s.PublishTime.Round(time.Millisecond), rate, mbs)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  cpu           %s (parse+sort %s)", s.CPU.Round(time.Millisecond), s.ParseCPU.Round(time.Millisecond))
	if s.Runs > 0 || s.Tables > 0 {
		fmt.Fprintf(w, ", %d sorted runs spilled, %d tables", s.Runs, s.Tables)
	}
	fmt.Fprintln(w)
}

// byteSize is a flag of a size in bytes: 1073741824, 1GiB, 512MiB, 64KiB
// (also K/M/G, KB/MB/GB: all binary).
type byteSize int64

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	v := int64(*b)
	for _, u := range []struct {
		s string
		n int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.s
		}
	}
	return strconv.FormatInt(v, 10)
}

func (b *byteSize) Set(s string) error {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		s string
		n int64
	}{{"gib", 1 << 30}, {"gb", 1 << 30}, {"g", 1 << 30}, {"mib", 1 << 20}, {"mb", 1 << 20}, {"m", 1 << 20},
		{"kib", 1 << 10}, {"kb", 1 << 10}, {"k", 1 << 10}, {"b", 1}} {
		if strings.HasSuffix(t, u.s) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.s)), u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return fmt.Errorf("bad size %q (want e.g. 1GiB, 512MiB, 1048576)", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// FlagSets returns the flag sets of `rtbd ingest` and of `rtbd gen`'s
// plain feed form, as their commands parse them (each named by its
// command); for listing the flags (the documentation test).
func FlagSets() []*flag.FlagSet {
	return []*flag.FlagSet{newFlags(&Options{}, &cli{}), newGenFlags(&genFlags{})}
}

func orNone(s string) string {
	if s == "" {
		return "no previous version"
	}
	return s
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string {
	if s == nil {
		return ""
	}
	return strings.Join(*s, ",")
}

func (s *stringsFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty directory")
	}
	*s = append(*s, v)
	return nil
}
