package feedgen_test

import (
	"io"
	"testing"
	"time"

	"github.com/rtbd/rtbd/ingest/feed"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/cputime"
)

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func benchWrite(b *testing.B, format feed.Format) {
	const rows = 1_000_000
	b.ReportAllocs()
	var bytes int64
	start, cpu0 := time.Now(), cputime.Self()
	for i := 0; i < b.N; i++ {
		cw := &countWriter{}
		if _, err := feedgen.Write(cw, format, feedgen.Options{Products: rows, Groups: 1000, Seed: int64(i)}); err != nil {
			b.Fatal(err)
		}
		bytes = cw.n
	}
	b.StopTimer()
	b.SetBytes(bytes)
	b.ReportMetric(float64(rows)*float64(b.N)/time.Since(start).Seconds(), "rows/s")
	if cpu := cputime.Self() - cpu0; cpu > 0 {
		b.ReportMetric(float64(rows)*float64(b.N)/cpu.Seconds(), "rows/cpu-s")
	}
}

func BenchmarkWriteCSV(b *testing.B)   { benchWrite(b, feed.CSV) }
func BenchmarkWriteJSONL(b *testing.B) { benchWrite(b, feed.JSONL) }

// BenchmarkProduct builds one expected product (strings allocated).
func BenchmarkProduct(b *testing.B) {
	b.ReportAllocs()
	opts := feedgen.Options{Groups: 100, Seed: 1}
	for i := 0; i < b.N; i++ {
		p := feedgen.Product(i, opts)
		if p.ProductId == 0 {
			b.Fatal("zero id")
		}
	}
}

// BenchmarkBaselineDiscard is the floor: handing the same bytes to a writer.
func BenchmarkBaselineDiscard(b *testing.B) {
	buf := make([]byte, 256<<10)
	for i := 0; i < b.N; i++ {
		for j := 0; j < 1_000_000*330/len(buf); j++ {
			_, _ = io.Discard.Write(buf)
		}
	}
}
