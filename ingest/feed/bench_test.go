package feed_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/cputime"
)

const benchRows = 100_000

func genFeed(tb testing.TB, format feed.Format, rows int, gz bool) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	if _, err := feedgen.Write(w, format, feedgen.Options{Products: rows, Groups: 100, Seed: 1}); err != nil {
		tb.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

// readFeed reads every row and returns how many were valid.
func readFeed(tb testing.TB, data []byte, format feed.Format) int {
	r, err := feed.NewReader(bytes.NewReader(data), "", feed.Options{Format: format})
	if err != nil {
		tb.Fatal(err)
	}
	var row feed.Row
	n := 0
	for {
		err := r.Next(&row)
		if err == io.EOF {
			return n
		}
		if err != nil {
			tb.Fatal(err)
		}
		n++
	}
}

// measure runs fn b.N times, each handling rows rows of data, and reports
// rows/s, rows/cpu-s and allocs/row beside the usual metrics.
func measure(b *testing.B, data []byte, rows int, fn func()) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start, cpu0 := time.Now(), cputime.Self()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fn()
	}
	b.StopTimer()
	elapsed, cpu := time.Since(start), cputime.Self()-cpu0
	runtime.ReadMemStats(&ms1)
	total := float64(b.N) * float64(rows)
	b.ReportMetric(total/elapsed.Seconds(), "rows/s")
	if cpu > 0 {
		b.ReportMetric(total/cpu.Seconds(), "rows/cpu-s")
	}
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/row")
}

func benchRead(b *testing.B, format feed.Format, gz bool) {
	data := genFeed(b, format, benchRows, gz)
	measure(b, data, benchRows, func() {
		if n := readFeed(b, data, format); n != benchRows {
			b.Fatalf("read %d rows", n)
		}
	})
}

func BenchmarkReadCSV(b *testing.B)       { benchRead(b, feed.CSV, false) }
func BenchmarkReadJSONL(b *testing.B)     { benchRead(b, feed.JSONL, false) }
func BenchmarkReadCSVGzip(b *testing.B)   { benchRead(b, feed.CSV, true) }
func BenchmarkReadJSONLGzip(b *testing.B) { benchRead(b, feed.JSONL, true) }

// BenchmarkBaselineLines is the floor: splitting the same CSV into lines.
func BenchmarkBaselineLines(b *testing.B) {
	data := genFeed(b, feed.CSV, benchRows, false)
	measure(b, data, benchRows, func() {
		sc := bufio.NewScanner(bytes.NewReader(data))
		n := 0
		for sc.Scan() {
			n++
		}
		if n != benchRows+1 {
			b.Fatal(n)
		}
	})
}

// BenchmarkBaselineEncodingCSV: encoding/csv splitting only (no validation;
// it too builds one string per record), for the ratio.
func BenchmarkBaselineEncodingCSV(b *testing.B) {
	data := genFeed(b, feed.CSV, benchRows, false)
	measure(b, data, benchRows, func() {
		cr := csv.NewReader(bytes.NewReader(data))
		cr.ReuseRecord = true
		n := 0
		for {
			_, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != benchRows+1 {
			b.Fatal(n)
		}
	})
}

// BenchmarkBaselineGunzip: decompressing the gzip CSV, the floor for the
// Gzip benchmarks.
func BenchmarkBaselineGunzip(b *testing.B) {
	data := genFeed(b, feed.CSV, benchRows, true)
	measure(b, data, benchRows, func() {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, zr); err != nil {
			b.Fatal(err)
		}
	})
}
