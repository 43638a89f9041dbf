package ingest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/cliflag"
)

type genFlags struct {
	opts feedgen.Options
	out  string
}

func newGenFlags(g *genFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("rtbd gen", flag.ContinueOnError)
	fs.IntVar(&g.opts.Products, "products", 10000, "number of products")
	fs.IntVar(&g.opts.Groups, "groups", 10, "number of product groups (ids 1..G)")
	fs.Int64Var(&g.opts.Seed, "seed", 1, "seed: the same flags write the same bytes")
	fs.Float64Var(&g.opts.OutOfStockRatio, "out-of-stock", 0.05, "share of products out of stock")
	fs.StringVar(&g.opts.Currency, "currency", "JPY", "ISO 4217 currency of the prices")
	fs.Int64Var(&g.opts.StartID, "start-id", 1, "first product id")
	fs.StringVar(&g.opts.TitleSuffix, "title-suffix", "", "text appended to every title (to make a changed second feed)")
	fs.StringVar(&g.out, "out", "", "output file; format by extension: .csv, .jsonl, optionally .gz (required)")
	return fs
}

// GenUsage documents `rtbd gen`.
func GenUsage(w io.Writer) {
	fmt.Fprintln(w, "rtbd gen -out FILE [flags]")
	fs := newGenFlags(&genFlags{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// GenMain is `rtbd gen`.
func GenMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var g genFlags
	fs := newGenFlags(&g)
	if err := cliflag.Parse(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if g.out == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: -out FILE is required, and no arguments", ErrUsage)
	}
	if err := feedgen.WriteFile(g.out, g.opts); err != nil {
		if errors.Is(err, feedgen.ErrBadOptions) {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return err
	}
	fmt.Fprintf(stdout, "wrote %d products in %d groups to %s\n", g.opts.Products, g.opts.Groups, g.out)
	return nil
}
