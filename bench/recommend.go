package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/similar"
	"github.com/rtbd/rtbd/records"
)

// recommendMain is `rtbd bench recommend`: the offline evaluation of the
// similar lists (similar.Evaluator) on the views under -views and the
// products of the index in -data.
func recommendMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var views multiFlag
	var o similar.Options
	fs := flag.NewFlagSet("rtbd bench recommend", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	fs.Var(&views, "views", "records root (`DIR`) whose view records are evaluated; repeatable (required)")
	data := fs.String("data", "./data/catalog", "index data directory whose live version gives the products")
	k := fs.Int("k", 10, "recommendations per user evaluated (hit rate and recall at K)")
	window := fs.Duration("views-window", 720*time.Hour, "how far back views are read")
	fs.IntVar(&o.K, "similar-k", similar.DefaultK, "length of each product's similar list")
	fs.IntVar(&o.MinSupport, "similar-min-support", similar.DefaultMinSupport, "fewest users who viewed both products for a co-view pair to count")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if len(views) == 0 {
		return fmt.Errorf("%w: -views DIR is required", ErrUsage)
	}
	if *k <= 0 || *window <= 0 {
		return fmt.Errorf("%w: -k and -views-window must be > 0", ErrUsage)
	}
	e := similar.NewEvaluator(o)
	var products int
	if err := catalog.ReadProducts(*data, func(p *catalogpb.Product) error {
		products++
		e.AddProduct(similar.Product{Group: p.ProductGroupId, ID: p.ProductId, PriceMicros: p.PriceMicros,
			Category: p.Category, Brand: p.Brand, InStock: p.InStock})
		return nil
	}); err != nil {
		return fmt.Errorf("bench: recommend: -data %s: %w", *data, err)
	}
	to := time.Now()
	var n int64
	for _, d := range views {
		err := records.Scan(d, records.KindView, to.Add(-*window), to, func(r *records.Record) error {
			n++
			e.AddView(r.UserID, r.GroupID, r.ProductID, r.Time)
			if n&0xffff == 0 {
				return ctx.Err()
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("bench: recommend: -views %s: %w", d, err)
		}
	}
	ev, err := e.Run(*k)
	if err != nil {
		return fmt.Errorf("bench: recommend: %w", err)
	}
	fmt.Fprintf(stdout, "%d products from %s, %d views from %d root(s)\n", products, *data, n, len(views))
	ev.Write(stdout)
	return nil
}
