package filesink_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
)

var t0 = time.Date(2026, 3, 14, 9, 58, 0, 0, time.UTC)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func rec(k records.Kind, at time.Time, i int) records.Record {
	r := records.Record{Kind: k, Time: at, Instance: "b1", RequestID: "req", ImpID: "1", Exchange: "ex",
		CampaignID: "c1", Publisher: "pub", DomainOrBundle: "example.com", Format: "300x250", Country: "FRA",
		DeviceType: "phone", PriceMicros: int64(1000 + i), Currency: "EUR", Products: []int64{int64(i), 7}}
	r.Nonce[0], r.Nonce[15] = byte(i>>8), byte(i)
	return r
}

func newMetrics(t *testing.T) (*records.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := records.NewMetrics(reg, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// TestWriteRollRead: records of several kinds and hours are written under
// hidden names, completed on the roll interval, and read back whole by
// rtbd's reader and by arrow-go's, with the partition values not repeated
// as columns; a reader never sees a file being written.
func TestWriteRollRead(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: t0}
	m, _ := newMetrics(t)
	s, err := filesink.Open(filesink.Options{Dir: dir, Instance: "b1", Metrics: m, Now: clk.Now, RowGroupRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	var batch []records.Record
	for i := range 300 {
		k := records.KindBid
		if i%3 == 1 {
			k = records.KindWin
		}
		batch = append(batch, rec(k, t0.Add(time.Duration(i)*time.Second), i)) // crosses 10:00
	}
	s.Write(batch)
	// Nothing complete yet: readers see nothing, the hidden files exist.
	if n := count(t, dir, records.KindBid); n != 0 {
		t.Fatalf("before the roll a reader saw %d bid records", n)
	}
	if h := hidden(t, dir); h != 4 {
		t.Fatalf("%d hidden files, want 4 (2 kinds x 2 hours)", h)
	}
	clk.Add(time.Minute)
	s.Tick(clk.Now())
	if h := hidden(t, dir); h != 0 {
		t.Fatalf("%d hidden files left after the roll", h)
	}
	if n := count(t, dir, records.KindBid); n != 200 {
		t.Fatalf("bid records read: %d, want 200", n)
	}
	if n := count(t, dir, records.KindWin); n != 100 {
		t.Fatalf("win records read: %d, want 100", n)
	}
	// A record round-trips.
	var got records.Record
	err = records.Scan(dir, records.KindWin, t0.Add(time.Second), t0.Add(2*time.Second), func(r *records.Record) error {
		got = *r
		got.Products = append([]int64(nil), r.Products...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := rec(records.KindWin, t0.Add(time.Second), 1)
	if got.Nonce != want.Nonce || !got.Time.Equal(want.Time) || got.PriceMicros != 1001 || got.Country != "FRA" ||
		len(got.Products) != 2 || got.Products[0] != 1 || got.Instance != "b1" {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	parts, err := records.Partitions(dir, records.KindBid, time.Time{}, time.Time{})
	if err != nil || len(parts) != 2 || parts[0].Hour.Hour() != 9 || parts[1].Hour.Hour() != 10 {
		t.Fatalf("partitions %+v, %v", parts, err)
	}
	arrowReadsAll(t, dir, 300)
}

func count(t *testing.T, dir string, k records.Kind) int {
	t.Helper()
	n := 0
	if err := records.Scan(dir, k, time.Time{}, time.Time{}, func(*records.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func walk(t *testing.T, dir string, fn func(path string, name string)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			fn(p, d.Name())
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

func hidden(t *testing.T, dir string) int {
	n := 0
	walk(t, dir, func(p, name string) {
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".parquet") {
			n++
		}
	})
	return n
}

// arrowReadsAll reads every complete file under dir with arrow-go's
// Parquet reader (a second implementation) and checks the rows and the
// columns: ts is a UTC microsecond timestamp, and kind, date and hour are
// not columns.
func arrowReadsAll(t *testing.T, dir string, wantRows int) {
	t.Helper()
	rows := 0
	walk(t, dir, func(p, name string) {
		if _, _, ok := records.ParseFileName(name); !ok {
			return
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator),
			pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("arrow-go cannot read %s: %v", p, err)
		}
		defer tbl.Release()
		sc := tbl.Schema()
		for _, c := range []string{"kind", "date", "hour"} {
			if len(sc.FieldIndices(c)) != 0 {
				t.Errorf("%s: column %s repeats a partition value", p, c)
			}
		}
		for _, c := range []string{"ts", "instance", "nonce", "request_id", "imp_id", "exchange", "campaign_id", "publisher",
			"domain_or_bundle", "format", "country", "device_type", "price_micros", "spend_micros", "value_micros",
			"currency", "products", "reason", "m_micros", "test", "user_id", "group_id", "product_id"} {
			if len(sc.FieldIndices(c)) != 1 {
				t.Errorf("%s: no column %s", p, c)
			}
		}
		ts := sc.Field(sc.FieldIndices("ts")[0])
		if got := ts.Type.String(); got != "timestamp[us, tz=UTC]" {
			t.Errorf("%s: ts is %s, want timestamp[us, tz=UTC]", p, got)
		}
		tr := array.NewTableReader(tbl, 1000)
		defer tr.Release()
		for tr.Next() {
			rows += int(tr.RecordBatch().NumRows())
		}
	})
	if rows != wantRows {
		t.Fatalf("arrow-go read %d rows, want %d", rows, wantRows)
	}
}

// TestSeqNeverReused: a sink reopened on the same directory numbers its
// files after every number the previous one used or reserved.
func TestSeqNeverReused(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: t0}
	seen := map[uint64]bool{}
	for round := range 3 {
		s, err := filesink.Open(filesink.Options{Dir: dir, Instance: "b1", Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]records.Record{rec(records.KindBid, t0, round)})
		s.Close()
		clk.t = t0.Add(-time.Hour) // a clock gone back does not matter
	}
	walk(t, dir, func(p, name string) {
		if _, seq, ok := records.ParseFileName(name); ok {
			if seen[seq] {
				t.Errorf("seq %d used twice", seq)
			}
			seen[seq] = true
		}
	})
	if len(seen) != 3 {
		t.Fatalf("%d files, want 3", len(seen))
	}
}

// TestRetention deletes partitions past records.retention, keeping views
// for records.view_retention.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: t0}
	s, err := filesink.Open(filesink.Options{Dir: dir, Instance: "b1", Now: clk.Now, Retention: 48 * time.Hour, ViewRetention: 96 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	old := t0.Add(-72 * time.Hour)
	s.Write([]records.Record{rec(records.KindBid, old, 1), rec(records.KindView, old, 2), rec(records.KindBid, t0, 3),
		rec(records.KindBid, t0.Add(-47*time.Hour), 4)})
	clk.Add(time.Minute)
	s.Tick(clk.Now()) // completes, then applies the retention
	if n := count(t, dir, records.KindBid); n != 2 {
		t.Fatalf("bid records after retention: %d, want 2 (the 72h old one deleted)", n)
	}
	if n := count(t, dir, records.KindView); n != 1 {
		t.Fatalf("view records after retention: %d, want 1 (kept 96h)", n)
	}
	if _, err := os.Stat(records.PartitionDir(dir, records.KindBid, old)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old partition still there: %v", err)
	}
	s.Close()
}

// faultFS fails the operations its fail function says.
type faultFS struct {
	filesink.OS
	mu   sync.Mutex
	fail func(op, path string) error
}

func (f *faultFS) check(op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		return nil
	}
	return f.fail(op, path)
}

func (f *faultFS) set(fn func(op, path string) error) { f.mu.Lock(); f.fail = fn; f.mu.Unlock() }

func (f *faultFS) MkdirAll(p string, perm fs.FileMode) error {
	if err := f.check("mkdir", p); err != nil {
		return err
	}
	return f.OS.MkdirAll(p, perm)
}

func (f *faultFS) Create(p string) (filesink.File, error) {
	if err := f.check("create", p); err != nil {
		return nil, err
	}
	w, err := f.OS.Create(p)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: w, fs: f, path: p}, nil
}

func (f *faultFS) Rename(a, b string) error {
	if err := f.check("rename", b); err != nil {
		return err
	}
	return f.OS.Rename(a, b)
}

type faultFile struct {
	filesink.File
	fs   *faultFS
	path string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.check("write", f.path); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

// TestFailures: a full disk, a deleted records.dir and an unwritable one
// drop records (counted, the error logged once per interval), never
// block, and writing resumes when the fault clears.
func TestFailures(t *testing.T) {
	cases := []struct {
		name  string
		fail  func(dir string) func(op, path string) error
		setup func(dir string)
	}{
		{"disk full", func(string) func(op, path string) error {
			return func(op, _ string) error {
				if op == "write" || op == "create" {
					return &fs.PathError{Op: op, Err: syscall.ENOSPC}
				}
				return nil
			}
		}, nil},
		{"deleted dir", func(string) func(op, path string) error { return nil }, func(dir string) { os.RemoveAll(dir) }},
		{"unwritable", func(dir string) func(op, path string) error {
			return func(op, p string) error {
				if op != "write" {
					return &fs.PathError{Op: op, Path: p, Err: syscall.EACCES}
				}
				return nil
			}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "records")
			clk := &clock{t: t0}
			m, reg := newMetrics(t)
			ffs := &faultFS{}
			s, err := filesink.Open(filesink.Options{Dir: dir, Instance: "b1", Now: clk.Now, FS: ffs, Metrics: m})
			if err != nil {
				t.Fatal(err)
			}
			s.Write([]records.Record{rec(records.KindBid, t0, 1)})
			if tc.setup != nil {
				tc.setup(dir)
			}
			ffs.set(tc.fail(dir))
			for i := range 5 {
				s.Write([]records.Record{rec(records.KindBid, t0.Add(time.Hour), 10+i)})
				clk.Add(time.Minute)
				s.Tick(clk.Now())
			}
			dropped := testutil.ToFloat64(counterOf(t, reg, "rtbd_records_dropped_total", "bid"))
			errs := metricSum(t, reg, "rtbd_records_errors_total")
			if dropped < 1 || errs < 1 {
				t.Fatalf("dropped %v, errors %v: want both counted", dropped, errs)
			}
			ffs.set(nil)
			s.Write([]records.Record{rec(records.KindBid, t0.Add(2*time.Hour), 99)})
			clk.Add(time.Minute)
			s.Tick(clk.Now())
			found := false
			records.Scan(dir, records.KindBid, t0.Add(2*time.Hour), time.Time{}, func(r *records.Record) error {
				found = found || r.PriceMicros == 1099
				return nil
			})
			if !found {
				t.Fatal("writing did not resume after the fault cleared")
			}
			s.Close()
		})
	}
}

func counterOf(t *testing.T, reg *prometheus.Registry, name, kind string) prometheus.Collector {
	t.Helper()
	return gatherer{reg, name, kind}
}

// gatherer exposes one labelled counter of reg as a collector for testutil.
type gatherer struct {
	reg        *prometheus.Registry
	name, kind string
}

func (g gatherer) Describe(chan<- *prometheus.Desc) {}
func (g gatherer) Collect(ch chan<- prometheus.Metric) {
	mfs, _ := g.reg.Gather()
	var v float64
	for _, mf := range mfs {
		if mf.GetName() != g.name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "kind" && l.GetValue() == g.kind {
					v += m.GetCounter().GetValue()
				}
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("x", "x", nil, nil), prometheus.CounterValue, v)
}

func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}
