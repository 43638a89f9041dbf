package ingest

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/ingest/feed"
)

// ErrUsage marks errors in how a command was called (exit code 2).
var ErrUsage = errors.New("ingest: usage")

// ErrAborted: the ingest stopped and published nothing (exit code 1).
var ErrAborted = errors.New("ingest: aborted, live version untouched")

// Options of one ingest run.
type Options struct {
	Data           string  // data directory
	Format         string  // "" = by file name
	RejectFile     string  // "" = DIR/rejects-<version>.tsv
	MaxRejectRatio float64 // abort above this share of rejected rows
}

// Summary is what an ingest did.
type Summary struct {
	Version            string
	RowsRead, Accepted int64
	Rejected           map[feed.Reason]int64
	RejectedTotal      int64
	Deletes            int64
	RejectFile         string
	Elapsed            time.Duration
}

// Run ingests feeds (paths, "-" = stdin) into a new version of the index in
// opts.Data and publishes it. Nothing changes for readers unless it
// succeeds.
func Run(ctx context.Context, opts Options, feeds []string, stdin io.Reader) (*Summary, error) {
	start := time.Now()
	lock, err := catalog.LockDir(opts.Data)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if removed, _ := catalog.RemoveUnusedVersions(opts.Data); len(removed) > 0 {
		_ = removed // leftovers of a crashed ingest
	}
	b, err := catalog.NewBuilder(opts.Data, nil)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			b.Abort()
		}
	}()
	sum := &Summary{Version: b.Name(), Rejected: map[feed.Reason]int64{}}
	if sum.RejectFile = opts.RejectFile; sum.RejectFile == "" {
		sum.RejectFile = opts.Data + "/rejects-" + b.Name() + ".tsv"
	}
	rf, err := os.Create(sum.RejectFile)
	if err != nil {
		return nil, fmt.Errorf("ingest: reject file: %w", err)
	}
	defer rf.Close()
	rw := bufio.NewWriter(rf)
	fmt.Fprintln(rw, "file\tline\tfield\treason\traw")
	var fopts feed.Options
	if opts.Format != "" {
		if fopts.Format, err = feed.ParseFormat(opts.Format); err != nil {
			return nil, fmt.Errorf("%w: -format: %w", ErrUsage, err)
		}
	}
	var row feed.Row
	for _, path := range feeds {
		var r io.Reader
		if path == "-" {
			r = stdin
		} else {
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrAborted, err)
			}
			defer f.Close()
			r = f
		}
		fr, err := feed.NewReader(r, path, fopts)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrAborted, path, err)
		}
		for {
			if sum.RowsRead%4096 == 0 && ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %w", ErrAborted, ctx.Err())
			}
			err := fr.Next(&row)
			if err == io.EOF {
				break
			}
			sum.RowsRead++
			var re *feed.RowError
			if errors.As(err, &re) {
				sum.RejectedTotal++
				sum.Rejected[re.Reason]++
				fmt.Fprintf(rw, "%s\t%d\t%s\t%s\t%s\n", path, re.Line, re.Field, re.Reason, strconv.Quote(re.Raw))
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrAborted, path, err)
			}
			if row.Delete {
				sum.Deletes++ // a full snapshot has no deletes: the row is simply absent
				continue
			}
			if err := b.Put(&row.Product); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrAborted, err)
			}
			sum.Accepted++
		}
	}
	if err := rw.Flush(); err != nil {
		return nil, fmt.Errorf("ingest: reject file: %w", err)
	}
	if sum.RowsRead > 0 && float64(sum.RejectedTotal)/float64(sum.RowsRead) > opts.MaxRejectRatio {
		return sum, fmt.Errorf("%w: %d of %d rows rejected (%.2f%%), over -max-reject-ratio %.2f%%; see %s",
			ErrAborted, sum.RejectedTotal, sum.RowsRead, 100*float64(sum.RejectedTotal)/float64(sum.RowsRead),
			100*opts.MaxRejectRatio, sum.RejectFile)
	}
	name, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAborted, err)
	}
	ok = true
	if err := catalog.Publish(opts.Data, name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAborted, err)
	}
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// Usage documents `rtbd ingest`.
func Usage(w io.Writer) {
	fmt.Fprint(w, `rtbd ingest -data DIR [flags] FEED...   (FEED: a path, or - for stdin; .csv/.jsonl, optionally .gz)
`)
	fs := newFlags(&Options{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func newFlags(o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd ingest", flag.ContinueOnError)
	fs.StringVar(&o.Data, "data", "./data/catalog", "index data directory")
	fs.StringVar(&o.Format, "format", "", "feed format when the name does not tell: csv or jsonl")
	fs.StringVar(&o.RejectFile, "reject-file", "", "where rejected rows go (default DIR/rejects-VERSION.tsv)")
	fs.Float64Var(&o.MaxRejectRatio, "max-reject-ratio", 0.01, "abort, publishing nothing, if more than this share of rows is rejected")
	return fs
}

// Main is `rtbd ingest`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o Options
	fs := newFlags(&o)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no feed given (rtbd ingest -data DIR FEED...)", ErrUsage)
	}
	sum, err := Run(ctx, o, fs.Args(), os.Stdin)
	if sum != nil {
		printSummary(stdout, sum)
	}
	return err
}

func printSummary(w io.Writer, s *Summary) {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.RowsRead) / s.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "version %s: rows read %d, accepted %d, rejected %d, elapsed %s (%.0f rows/s)\n",
		s.Version, s.RowsRead, s.Accepted, s.RejectedTotal, s.Elapsed.Round(time.Millisecond), rate)
	reasons := make([]string, 0, len(s.Rejected))
	for r := range s.Rejected {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  rejected %-20s %d\n", r, s.Rejected[feed.Reason(r)])
	}
	if s.RejectedTotal > 0 {
		fmt.Fprintf(w, "  rejected rows: %s\n", s.RejectFile)
	}
}
