package feedgen_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/feedgen"
)

func write(t *testing.T, format feed.Format, opts feedgen.Options) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := feedgen.Write(&b, format, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n != opts.Products {
		t.Fatalf("Write returned n=%d, want %d", n, opts.Products)
	}
	return b.Bytes()
}

// readBack reads a feed, failing on any rejected row, and returns the
// products in order.
func readBack(t *testing.T, data []byte, name string) []*catalogpb.Product {
	t.Helper()
	r, err := feed.NewReader(bytes.NewReader(data), name, feed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*catalogpb.Product
	var row feed.Row
	for {
		err := r.Next(&row)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("generated row rejected: %v", err)
		}
		if row.Delete {
			t.Fatalf("line %d: delete row", row.Line)
		}
		out = append(out, proto.Clone(&row.Product).(*catalogpb.Product))
	}
}

func TestDeterministic(t *testing.T) {
	opts := feedgen.Options{Products: 3000, Groups: 17, Seed: 42}
	for _, f := range []feed.Format{feed.CSV, feed.JSONL} {
		a, b := write(t, f, opts), write(t, f, opts)
		if !bytes.Equal(a, b) {
			t.Errorf("%v: same options, different bytes", f)
		}
		o2 := opts
		o2.Seed = 43
		if bytes.Equal(a, write(t, f, o2)) {
			t.Errorf("%v: different seeds, same bytes", f)
		}
	}
	dir := t.TempDir()
	var files [][]byte
	for i, name := range []string{"a.csv.gz", "b.csv.gz"} {
		p := filepath.Join(dir, name)
		data := writeFile(t, p, opts)
		files = append(files, data)
		_ = i
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("WriteFile .gz: same options, different bytes")
	}
}

// TestReadBack: every generated row passes validation and reads back as
// Product(i).
func TestReadBack(t *testing.T) {
	for _, opts := range []feedgen.Options{
		{Products: 2000, Groups: 7, Seed: 1},
		{Products: 2000, Groups: 3, Seed: 2, Currency: "usd", StartID: 1_000_000, OutOfStockRatio: 0.3},
		{Products: 500, Seed: 3, Currency: "KRW", TitleSuffix: ` "v2", ok`},
		{Products: 500, Seed: 4, Currency: "EUR", PriceSalt: 1},
		{Products: 500, Seed: 5, Currency: "VND", OutOfStockRatio: -1},
		{Products: 500, Seed: 6, Currency: "BRL", TitleSuffix: "（新）"},
		{Products: 0, Seed: 7},
	} {
		for _, f := range []feed.Format{feed.CSV, feed.JSONL} {
			t.Run(fmt.Sprintf("%v/%+v", f, opts), func(t *testing.T) {
				got := readBack(t, write(t, f, opts), "x."+f.String())
				if len(got) != opts.Products {
					t.Fatalf("read %d products, want %d", len(got), opts.Products)
				}
				for i, p := range got {
					want := feedgen.Product(i, opts)
					if !proto.Equal(p, &want) {
						t.Fatalf("row %d:\n got %v\nwant %v", i, p, &want)
					}
				}
			})
		}
	}
}

func TestWriteFileFormats(t *testing.T) {
	dir := t.TempDir()
	opts := feedgen.Options{Products: 300, Groups: 5, Seed: 9}
	for _, name := range []string{"f.csv", "f.jsonl", "f.ndjson", "f.csv.gz", "f.jsonl.gz"} {
		p := filepath.Join(dir, name)
		data := writeFile(t, p, opts)
		if gz := bytes.HasPrefix(data, []byte{0x1f, 0x8b}); gz != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: gzip = %v", name, gz)
		}
		got := readBack(t, data, name)
		if len(got) != 300 {
			t.Errorf("%s: %d products", name, len(got))
		}
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v", name, fi.Mode())
		}
	}
	// Replacing a file: the new version is there and no temp file is left.
	p := filepath.Join(dir, "f.csv")
	if err := feedgen.WriteFile(p, feedgen.Options{Products: 10, Seed: 9, TitleSuffix: " v2"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if got := readBack(t, data, p); len(got) != 10 || !strings.HasSuffix(got[0].Title, " v2") {
		t.Errorf("replaced file: %d products, title %q", len(got), got[0].Title)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	if len(entries) != 5 {
		t.Errorf("%d files in dir, want 5", len(entries))
	}
	// Errors: unknown extension, missing directory, bad options; nothing left behind.
	if err := feedgen.WriteFile(filepath.Join(dir, "f.xml"), opts); !errors.Is(err, feed.ErrUnknownFormat) {
		t.Errorf("f.xml: %v", err)
	}
	if err := feedgen.WriteFile(filepath.Join(dir, "nope", "f.csv"), opts); err == nil {
		t.Error("missing directory: no error")
	}
	if err := feedgen.WriteFile(filepath.Join(dir, "g.csv"), feedgen.Options{Products: -1}); !errors.Is(err, feedgen.ErrBadOptions) {
		t.Errorf("bad options: %v", err)
	}
	if entries2, _ := os.ReadDir(dir); len(entries2) != 5 {
		t.Errorf("failed writes left files: %d entries", len(entries2))
	}
}

func TestGroupsAndIDs(t *testing.T) {
	opts := feedgen.Options{Products: 1000, Groups: 7, StartID: 500, Seed: 1}
	count := map[int64]int{}
	for i := 0; i < opts.Products; i++ {
		p := feedgen.Product(i, opts)
		if p.ProductId != 500+int64(i) || p.ProductGroupId != 1+int64(i%7) {
			t.Fatalf("product %d: id %d group %d", i, p.ProductId, p.ProductGroupId)
		}
		count[p.ProductGroupId]++
		if want := fmt.Sprintf("https://img.example-shop.com/p/%d/%d.jpg", p.ProductGroupId, p.ProductId); p.ImageUrl != want {
			t.Fatalf("image_url %q, want %q", p.ImageUrl, want)
		}
		if want := fmt.Sprintf("https://www.example-shop.com/g/%d/item/%d?utm_source=rtbd", p.ProductGroupId, p.ProductId); p.LandingUrl != want {
			t.Fatalf("landing_url %q, want %q", p.LandingUrl, want)
		}
	}
	if len(count) != 7 || count[1] != 143 || count[7] != 142 {
		t.Errorf("group sizes %v", count)
	}
	if p := feedgen.Product(0, feedgen.Options{}); p.ProductId != 1 || p.ProductGroupId != 1 || p.Currency != "JPY" {
		t.Errorf("defaults: %v", &p)
	}
}

// TestVersions: PriceSalt changes only prices, TitleSuffix only titles.
func TestVersions(t *testing.T) {
	base := feedgen.Options{Products: 200, Groups: 3, Seed: 5}
	salted, suffixed := base, base
	salted.PriceSalt = 10_000
	suffixed.TitleSuffix = " (v2)"
	for i := 0; i < base.Products; i++ {
		a, b, c := feedgen.Product(i, base), feedgen.Product(i, salted), feedgen.Product(i, suffixed)
		if b.PriceMicros != a.PriceMicros+10_000 || c.Title != a.Title+" (v2)" {
			t.Fatalf("product %d: prices %d/%d titles %q/%q", i, a.PriceMicros, b.PriceMicros, a.Title, c.Title)
		}
		b.PriceMicros = a.PriceMicros
		c.Title = a.Title
		if !proto.Equal(&a, &b) || !proto.Equal(&a, &c) {
			t.Fatalf("product %d: more than one field changed", i)
		}
	}
}

func TestRealism(t *testing.T) {
	const n = 20000
	data := write(t, feed.CSV, feedgen.Options{Products: n, Seed: 1})
	perRow := float64(len(data)-len(feedgen.Header)) / n
	t.Logf("CSV: %.0f bytes/row", perRow)
	if perRow < 200 || perRow > 400 {
		t.Errorf("CSV row size %.0f bytes, want 200..400", perRow)
	}
	out, sale := 0, 0
	sizes := map[[2]int32]bool{}
	for i := 0; i < n; i++ {
		p := feedgen.Product(i, feedgen.Options{Seed: 1})
		if !p.InStock {
			out++
		}
		if p.SalePriceMicros > 0 {
			sale++
			if p.SalePriceMicros >= p.PriceMicros {
				t.Fatalf("product %d: sale %d >= price %d", i, p.SalePriceMicros, p.PriceMicros)
			}
		}
		if p.PriceMicros%10_000_000 != 0 || p.PriceMicros < 100_000_000 { // JPY: whole tens of yen, >= 100 yen
			t.Fatalf("product %d: JPY price %d micros", i, p.PriceMicros)
		}
		if p.UpdatedAt < feedgen.BaseUpdatedAt || p.UpdatedAt >= feedgen.BaseUpdatedAt+30*86400 {
			t.Fatalf("product %d: updated_at %d", i, p.UpdatedAt)
		}
		sizes[[2]int32{p.Width, p.Height}] = true
	}
	if r := float64(out) / n; r < 0.04 || r > 0.06 {
		t.Errorf("out of stock ratio %.3f, want about 0.05", r)
	}
	if r := float64(sale) / n; r < 0.15 || r > 0.25 {
		t.Errorf("sale ratio %.3f, want about 0.2", r)
	}
	if len(sizes) < 8 || !sizes[[2]int32{1200, 628}] {
		t.Errorf("image sizes %v", sizes)
	}
	usd := feedgen.Product(3, feedgen.Options{Currency: "USD"})
	if c := usd.PriceMicros % 1_000_000; c != 990_000 {
		t.Errorf("USD price %d micros does not end in .99", usd.PriceMicros)
	}
	for _, ratio := range []float64{-1, 1} {
		for i := 0; i < 500; i++ {
			if p := feedgen.Product(i, feedgen.Options{OutOfStockRatio: ratio}); p.InStock != (ratio < 0) {
				t.Fatalf("ratio %v: product %d in_stock=%v", ratio, i, p.InStock)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	if err := (feedgen.Options{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
	bad := feedgen.Options{Products: -1, Groups: -2, OutOfStockRatio: 1.5, Currency: "XYZ", StartID: -3,
		PriceSalt: -1, TitleSuffix: "trailing "}
	err := bad.Validate()
	for _, key := range []string{"products", "groups", "out_of_stock_ratio", "currency", "start_id", "price_salt", "title_suffix"} {
		if err == nil || !strings.Contains(err.Error(), key+":") {
			t.Errorf("Validate does not name %s: %v", key, err)
		}
	}
	if !errors.Is(err, feedgen.ErrBadOptions) {
		t.Errorf("not ErrBadOptions: %v", err)
	}
	for _, s := range []string{"a\tb", "bad\xff", strings.Repeat("x", 201), "ctl\u0085"} {
		if err := (feedgen.Options{TitleSuffix: s}).Validate(); err == nil {
			t.Errorf("TitleSuffix %q accepted", s)
		}
	}
	if err := (feedgen.Options{Products: 2, StartID: 1<<63 - 1}).Validate(); err == nil {
		t.Error("id overflow accepted")
	}
	var b bytes.Buffer
	if n, err := feedgen.Write(&b, feed.CSV, bad); err == nil || n != 0 || b.Len() != 0 {
		t.Errorf("Write with bad options: n=%d err=%v, %d bytes", n, err, b.Len())
	}
	if _, err := feedgen.Write(&b, feed.FormatAuto, feedgen.Options{}); !errors.Is(err, feedgen.ErrBadOptions) {
		t.Errorf("Write with FormatAuto: %v", err)
	}
}

type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n < len(p) {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	n, err := feedgen.Write(&failAfter{n: 1 << 20}, feed.CSV, feedgen.Options{Products: 100_000})
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("err = %v", err)
	}
	if n <= 0 || n >= 100_000 {
		t.Errorf("n = %d rows before the error", n)
	}
}

func TestGzipReadable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.jsonl.gz")
	if err := feedgen.WriteFile(p, feedgen.Options{Products: 100, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, write(t, feed.JSONL, feedgen.Options{Products: 100, Seed: 1})) {
		t.Error("gzip content differs from Write's output")
	}
}

// writeFile writes the feed of opts to path with feedgen.WriteFile and
// returns the file's bytes.
func writeFile(t *testing.T, path string, opts feedgen.Options) []byte {
	t.Helper()
	if err := feedgen.WriteFile(path, opts); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
