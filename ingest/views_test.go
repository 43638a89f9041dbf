package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/ingest/viewgen"
	"github.com/rtbd/rtbd/records"
)

// writeViews writes view records into one file of root's partition of
// hour at.
func writeViews(t *testing.T, root string, at time.Time, recs []records.Record) {
	t.Helper()
	dir := records.PartitionDir(root, records.KindView, at)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, records.FileName("test", uint64(at.Unix()))))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[records.Row](f)
	rows := make([]records.Row, len(recs))
	for i := range recs {
		recs[i].Kind = records.KindView
		recs[i].ToRow(&rows[i])
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSimilarFromViews: a full ingest with -views stores similar lists
// the stores serve for similar_to_viewed (mostly from the viewed
// product's planted cluster; content-similar products for a product
// nobody viewed; never an out-of-stock or delta-deleted product); bad
// view records are counted and skipped; an ingest without views, or with
// an empty views directory, carries the lists over (same content hash).
func TestSimilarFromViews(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	fo := feedgen.Options{Products: 6000, Groups: 2, Seed: 5}
	feedPath := filepath.Join(tmp, "feed.csv")
	if err := feedgen.WriteFile(feedPath, fo); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	vo := viewgen.Options{Feed: fo, Users: 12000, Seed: 9, Start: now.Add(-48 * time.Hour).Truncate(time.Hour)}
	views := filepath.Join(tmp, "views")
	if _, err := viewgen.Write(views, vo); err != nil {
		t.Fatal(err)
	}
	viewed := map[int64]bool{}
	if err := viewgen.Generate(vo, func(v *viewgen.View) error { viewed[v.ID] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	// Bad input in a second root: unknown products, duplicates, a user with
	// 100,000 views.
	bad := filepath.Join(tmp, "bad")
	at := now.Add(-3 * time.Hour).Truncate(time.Hour)
	var recs []records.Record
	for i := 0; i < 50; i++ {
		recs = append(recs, records.Record{Time: at, UserID: "x", GroupID: 1, ProductID: 10_000_000 + int64(i)})
		recs = append(recs, records.Record{Time: at, UserID: "dup", GroupID: 1, ProductID: 1})
	}
	for i := 0; i < 100_000; i++ {
		recs = append(recs, records.Record{Time: at.Add(time.Duration(i) * time.Millisecond), UserID: "bot", GroupID: 1, ProductID: 1 + 2*int64(i%3000)})
	}
	writeViews(t, bad, at, recs)

	opts := Options{Data: dir, MaxRejectRatio: 0.01, LogInterval: -1,
		Views: []string{views, bad, filepath.Join(tmp, "missing")}}
	sum, err := Run(context.Background(), opts, []string{feedPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Products != int64(fo.Products) || !sum.ProductsExact {
		t.Errorf("products %d (exact %v), want %d: similar lists are not products", sum.Products, sum.ProductsExact, fo.Products)
	}
	sm := sum.Similar
	if sm == nil || !sm.Computed {
		t.Fatalf("similar lists not computed: %+v", sm)
	}
	st := sm.Stats
	t.Logf("%s", st)
	if st.UnknownProduct != 50 || st.Duplicate < 49 || st.RobotUsers != 1 || st.Robot != 100_000 || len(sm.MissingDirs) != 1 {
		t.Errorf("want 50 unknown, >= 49 duplicates, 1 robot user of 100000 views, 1 missing dir; got %s, missing %v", st, sm.MissingDirs)
	}
	if st.Lists < int64(fo.Products)*9/10 {
		t.Errorf("%d lists for %d products", st.Lists, fo.Products)
	}

	nl := 0
	if err := catalog.ReadSimilar(dir, sum.Version, func(g, id int64, list []catalog.Similar) error { nl++; return nil }); err != nil || int64(nl) != st.Lists {
		t.Fatalf("version %s holds %d lists (%v), want %d", sum.Version, nl, err, st.Lists)
	}
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ask := func(g, id int64) []*catalogpb.Product {
		t.Helper()
		resp, err := l.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{ProductGroupId: g,
			Product1QuantityAtMost: 1, Product1Ids: []int64{id}, Product2QuantityAtMost: 10, SimilarToViewed: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.Product2S {
			if !p.InStock || p.ProductId == id || p.ProductGroupId != g {
				t.Fatalf("recommended %d/%d (in stock %v) for viewed %d/%d", p.ProductGroupId, p.ProductId, p.InStock, g, id)
			}
		}
		return resp.Product2S
	}
	var in, all int
	for i := 1; i < fo.Products; i += 53 {
		p := feedgen.Product(i, fo)
		for _, r := range ask(p.ProductGroupId, p.ProductId) {
			all++
			if viewgen.ClusterOfID(r.ProductId, vo) == viewgen.Cluster(i, vo) {
				in++
			}
		}
	}
	if all == 0 || float64(in) < 0.8*float64(all) {
		t.Errorf("%d of %d recommended products from the viewed product's cluster, want >= 80%%", in, all)
	}
	// A product nobody viewed: content-similar products (same category).
	fresh := &catalogpb.Product{}
	for i := 0; i < fo.Products; i++ {
		if id := 1 + int64(i); !viewed[id] {
			p := feedgen.Product(i, fo)
			fresh = &p
			break
		}
	}
	if fresh.ProductId == 0 {
		t.Fatal("every product was viewed")
	}
	got := ask(fresh.ProductGroupId, fresh.ProductId)
	if len(got) == 0 {
		t.Fatalf("no recommendation for product %d, never viewed", fresh.ProductId)
	}
	for _, p := range got {
		if p.Category != fresh.Category {
			t.Errorf("content-similar %d has category %q, want %q", p.ProductId, p.Category, fresh.Category)
		}
	}
	// A delta deletes the first recommended product: never shown again.
	sample := feedgen.Product(1, fo)
	before := ask(sample.ProductGroupId, sample.ProductId)
	if len(before) == 0 {
		t.Fatal("no recommendation to delete")
	}
	gone := before[0]
	del := filepath.Join(tmp, "del.jsonl")
	if err := os.WriteFile(del, fmt.Appendf(nil, "{\"id\":%d,\"group_id\":%d,\"deleted\":true}\n", gone.ProductId, gone.ProductGroupId), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Data: dir, Delta: true, LogInterval: -1}, []string{del}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	after := ask(sample.ProductGroupId, sample.ProductId)
	if slices.ContainsFunc(after, func(p *catalogpb.Product) bool { return p.ProductId == gone.ProductId }) {
		t.Errorf("deleted product %d still recommended", gone.ProductId)
	}
	if len(after) == 0 {
		t.Error("nothing recommended after the delta")
	}

	// Without views, and with an empty views directory: carried over.
	for _, v := range [][]string{nil, {t.TempDir()}} {
		s2, err := Run(context.Background(), Options{Data: dir, MaxRejectRatio: 0.01, LogInterval: -1, Views: v}, []string{feedPath}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s2.Similar == nil || s2.Similar.Computed || s2.Similar.Carried != st.Lists {
			t.Errorf("views %v: %+v, want %d lists carried over", v, s2.Similar, st.Lists)
		}
		if s2.ContentHash != sum.ContentHash {
			t.Errorf("views %v: content hash %016x, want the first full version's %016x (same feed, same lists)", v, s2.ContentHash, sum.ContentHash)
		}
	}
	// A node that computes the lists again from the same feed and views
	// agrees on the content hash.
	dir2 := t.TempDir()
	s3, err := Run(context.Background(), Options{Data: dir2, MaxRejectRatio: 0.01, LogInterval: -1, Views: opts.Views, ViewsUntil: now}, []string{feedPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s4, err := Run(context.Background(), Options{Data: t.TempDir(), MaxRejectRatio: 0.01, LogInterval: -1, Views: opts.Views, ViewsUntil: now}, []string{feedPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s3.ContentHash != s4.ContentHash || s3.Similar.Stats.Lists != st.Lists {
		t.Errorf("two nodes: content hashes %016x and %016x, lists %d (want %d)", s3.ContentHash, s4.ContentHash, s3.Similar.Stats.Lists, st.Lists)
	}
}
