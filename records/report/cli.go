package report

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rtbd/rtbd/internal/cliflag"
)

type cli struct {
	dir, from, to, by, format string
	check                     bool
	window                    time.Duration
}

func newFlags(c *cli) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd report", flag.ContinueOnError)
	fs.StringVar(&c.dir, "records", "", "records directory (records.dir of the bidders); required")
	fs.StringVar(&c.from, "from", "", "first date (YYYY-MM-DD) or time (RFC 3339), UTC; empty: the oldest record")
	fs.StringVar(&c.to, "to", "", "last date included (YYYY-MM-DD) or end time, exclusive (RFC 3339), UTC; empty: the newest")
	fs.StringVar(&c.by, "by", "campaign", "dimensions of a row, comma-separated: campaign,exchange,date,hour,publisher,format; empty: one total")
	fs.StringVar(&c.format, "format", "table", "output: table, csv or json")
	fs.BoolVar(&c.check, "check", false, "also list the charges and impressions with no bid record (to stderr) and count them")
	fs.DurationVar(&c.window, "join-window", 2*time.Hour, "how far back a notice's bid record is looked for")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: rtbd report -records DIR [-from DATE] [-to DATE] [-by DIMS] [-format table|csv|json] [-check]\n")
		fs.PrintDefaults()
	}
	return fs
}

// FlagSets returns the command's flag set (for the documentation test).
func FlagSets() []*flag.FlagSet { return []*flag.FlagSet{newFlags(&cli{})} }

// parseTime reads a date (its start; end: the start of the next day) or
// an RFC 3339 time.
func parseTime(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			d = d.Add(24 * time.Hour)
		}
		return d, nil
	}
	return time.Parse(time.RFC3339, s)
}

// Main is `rtbd report`.
func Main(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var c cli
	fs := newFlags(&c)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if c.dir == "" {
		return fmt.Errorf("%w: -records is required", ErrUsage)
	}
	o := Options{Dir: c.dir, JoinWindow: c.window, Check: c.check, CheckOut: stderr}
	var err error
	if o.From, err = parseTime(c.from, false); err != nil {
		return fmt.Errorf("%w: -from %q: want YYYY-MM-DD or RFC 3339", ErrUsage, c.from)
	}
	if o.To, err = parseTime(c.to, true); err != nil {
		return fmt.Errorf("%w: -to %q: want YYYY-MM-DD or RFC 3339", ErrUsage, c.to)
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.To.After(o.From) {
		return fmt.Errorf("%w: -to must be after -from", ErrUsage)
	}
	if c.by != "" {
		o.By = strings.Split(c.by, ",")
	}
	if c.format != "table" && c.format != "csv" && c.format != "json" {
		return fmt.Errorf("%w: -format %q: want table, csv or json", ErrUsage, c.format)
	}
	res, err := Run(o)
	if err != nil {
		return err
	}
	if err := res.Write(stdout, c.format); err != nil {
		return err
	}
	if c.check {
		fmt.Fprintf(stderr, "check: %d charges and %d imps without a bid record\n", res.OrphanCharges, res.OrphanImps)
	}
	return nil
}
