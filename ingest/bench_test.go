package ingest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/feedgen"
)

// BenchmarkIngest is the ingest benchmark (`make bench-ingest`, -benchtime
// 1x: one measurement whatever b.N), run only with RTBD_BENCH_INGEST_PRODUCTS
// set (e.g. 10000000). It generates an
// uncompressed CSV feed of that many products (so parsing, not gzip, is
// measured; kept in RTBD_BENCH_INGEST_DIR, default /tmp/rtbd-bench-ingest,
// and reused), then, each in a child process of its own (the real command,
// so its peak RSS is its own):
//
//  1. a full ingest through the bulk path (the default),
//  2. the same feed through -method=batch, the baseline,
//  3. a -delta of 100,000 rows (50,000 upserts of existing products with a
//     new title, 50,000 deletes) against the bulk-built catalog,
//
// and reports rows/s and MB/s (wall clock, input bytes), CPU seconds, peak
// RSS (the child's ru_maxrss) and the bulk/batch ratio. It checks the
// catalogs' contents, not the speed: the machine is shared and noisy.
func BenchmarkIngest(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("RTBD_BENCH_INGEST_PRODUCTS"))
	if n <= 0 {
		b.Skip("set RTBD_BENCH_INGEST_PRODUCTS (e.g. 10000000) to run the ingest benchmark")
	}
	dir := os.Getenv("RTBD_BENCH_INGEST_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "rtbd-bench-ingest")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	opts := feedgen.Options{Products: n, Groups: 1000, Seed: 1}
	feedPath := filepath.Join(dir, fmt.Sprintf("feed-%d.csv", n))
	if _, err := os.Stat(feedPath); err != nil {
		start := time.Now()
		tmp := feedPath + ".tmp.csv"
		if err := feedgen.WriteFile(tmp, opts); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, feedPath); err != nil {
			b.Fatal(err)
		}
		b.Logf("generated %s in %s", feedPath, time.Since(start).Round(time.Second))
	}
	st, err := os.Stat(feedPath)
	if err != nil {
		b.Fatal(err)
	}
	mb := float64(st.Size()) / 1e6
	report := func(name string, rows int, r childResult) float64 {
		rate := float64(rows) / r.elapsed.Seconds()
		line := fmt.Sprintf("BENCH %-6s rows=%d elapsed=%.1fs rows/s=%.0f MB/s=%.1f cpu=%.1fs rows/cpu-s=%.0f peakRSS=%dMiB",
			name, rows, r.elapsed.Seconds(), rate, mb/r.elapsed.Seconds(), r.cpu.Seconds(), float64(rows)/r.cpu.Seconds(), r.maxRSSKiB>>10)
		fmt.Println(line)
		b.Log(line)
		return rate
	}
	run := func(method string) (string, float64) {
		data := filepath.Join(dir, "data-"+method)
		if err := os.RemoveAll(data); err != nil {
			b.Fatal(err)
		}
		r := runChild(b, 3*time.Hour, nil, "-data", data, "-progress", "none", "-method", method, feedPath)
		if r.code != 0 {
			b.Fatalf("%s ingest: exit %d\n%s", method, r.code, r.stderr)
		}
		fmt.Print(r.stdout)
		if want := fmt.Sprintf("products      %d in the new version", n); !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(r.stdout) {
			b.Fatalf("%s: summary does not say %q:\n%s", method, want, r.stdout)
		}
		return data, report(method, n, r)
	}
	bulkDir, bulk := run(MethodBulk)
	_, batch := run(MethodBatch)
	b.ReportMetric(bulk, "bulk-rows/s")
	b.ReportMetric(batch, "batch-rows/s")
	line := fmt.Sprintf("BENCH ratio bulk/batch = %.2fx (targets: bulk >= 200000 rows/s, >= 3x batch, peak RSS < 1024 MiB)", bulk/batch)
	fmt.Println(line)
	b.Log(line)

	// The delta: 50,000 upserts (products 0..49999 with a new title) and
	// 50,000 deletes (products n/2 .. n/2+49999).
	const half = 50_000
	if n < 4*half {
		b.Logf("delta skipped: needs at least %d products", 4*half)
		return
	}
	upd := opts
	upd.Products, upd.TitleSuffix = half, " delta"
	updPath := filepath.Join(dir, "delta-upserts.csv")
	if err := feedgen.WriteFile(updPath, upd); err != nil {
		b.Fatal(err)
	}
	delPath := filepath.Join(dir, "delta-deletes.csv")
	f, err := os.Create(delPath)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("id,group_id,op\n")
	for i := n / 2; i < n/2+half; i++ {
		fmt.Fprintf(w, "%d,%d,delete\n", i+1, 1+i%opts.Groups)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	r := runChild(b, 30*time.Minute, nil, "-data", bulkDir, "-progress", "none", "-delta", updPath, delPath)
	if r.code != 0 {
		b.Fatalf("delta: exit %d\n%s", r.code, r.stderr)
	}
	fmt.Print(r.stdout)
	line = fmt.Sprintf("BENCH delta  rows=%d elapsed=%.2fs cpu=%.2fs peakRSS=%dMiB (against %d products)",
		2*half, r.elapsed.Seconds(), r.cpu.Seconds(), r.maxRSSKiB>>10, n)
	fmt.Println(line)
	b.Log(line)

	// Spot checks: updated, deleted and untouched products.
	l, err := catalog.OpenLocal(bulkDir, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for _, i := range []int{0, half - 1, n / 2, n/2 + half - 1, n/2 + half, n - 1} {
		want := feedgen.Product(i, opts)
		if i < half {
			want = feedgen.Product(i, upd)
		}
		resp, err := l.GetProductMasters(context.Background(), &catalogpb.ProductMastersRequest{ProductGroupId: want.ProductGroupId,
			Product1Ids: []int64{want.ProductId}, Product1QuantityAtMost: 1})
		if err != nil {
			b.Fatal(err)
		}
		deleted := i >= n/2 && i < n/2+half
		switch {
		case deleted && len(resp.Product1S) != 0:
			b.Errorf("product %d: deleted by the delta, still served", want.ProductId)
		case !deleted && want.InStock && (len(resp.Product1S) != 1 || resp.Product1S[0].Title != want.Title):
			b.Errorf("product %d: got %v, want title %q", want.ProductId, resp.Product1S, want.Title)
		}
	}
}
