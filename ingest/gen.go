package ingest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/ingest/viewgen"
	"github.com/rtbd/rtbd/internal/cliflag"
)

type genFlags struct {
	opts  feedgen.Options
	out   string
	views viewgen.Options
	vdir  string
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
	fs.StringVar(&g.out, "out", "", "output file; format by extension: .csv, .jsonl, optionally .gz (required unless -views)")
	fs.StringVar(&g.vdir, "views", "", "also write views of the feed's products, with planted clusters, as view records under this records root `DIR`")
	fs.IntVar(&g.views.Users, "view-users", 10000, "users of -views")
	fs.IntVar(&g.views.ViewsPerUser, "views-per-user", 8, "mean views per user of -views")
	fs.IntVar(&g.views.ClusterSize, "cluster-size", 20, "products per planted cluster of -views")
	fs.Float64Var(&g.views.Noise, "view-noise", 0.2, "share of -views outside the user's cluster")
	fs.IntVar(&g.views.Hours, "view-hours", 24, "hours the -views span, ending at the last full hour")
	return fs
}

// GenUsage documents `rtbd gen`.
func GenUsage(w io.Writer) {
	fmt.Fprintln(w, "rtbd gen -out FILE [flags]   (and/or -views DIR: view records of the feed's products with planted clusters)")
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
	if g.out == "" && g.vdir == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: -out FILE (or -views DIR) is required, and no arguments", ErrUsage)
	}
	if g.out != "" {
		if err := feedgen.WriteFile(g.out, g.opts); err != nil {
			if errors.Is(err, feedgen.ErrBadOptions) {
				return fmt.Errorf("%w: %w", ErrUsage, err)
			}
			return err
		}
		fmt.Fprintf(stdout, "wrote %d products in %d groups to %s\n", g.opts.Products, g.opts.Groups, g.out)
	}
	if g.vdir != "" {
		g.views.Feed, g.views.Seed = g.opts, g.opts.Seed
		if g.views.Noise == 0 {
			g.views.Noise = -1 // the flag's 0 means none
		}
		n, err := viewgen.Write(g.vdir, g.views)
		if err != nil {
			if errors.Is(err, viewgen.ErrBadOptions) {
				return fmt.Errorf("%w: %w", ErrUsage, err)
			}
			return err
		}
		fmt.Fprintf(stdout, "wrote %d views of %d users to %s\n", n, g.views.Users, g.vdir)
	}
	return nil
}
