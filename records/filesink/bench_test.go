package filesink_test

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
)

// BenchmarkRecorderToFile is the cost of one bid record from Put to a
// Parquet file (the sink's goroutine included), against
// BenchmarkRecorderToNothing, the hand-off alone.
func BenchmarkRecorderToFile(b *testing.B) {
	s, err := filesink.Open(filesink.Options{Dir: b.TempDir(), Instance: "b1"})
	if err != nil {
		b.Fatal(err)
	}
	bench(b, s)
}

type nopSink struct{}

func (nopSink) Name() string           { return records.SinkFile }
func (nopSink) Write([]records.Record) {}
func (nopSink) Tick(time.Time)         {}
func (nopSink) Close() error           { return nil }

func BenchmarkRecorderToNothing(b *testing.B) { bench(b, nopSink{}) }

func bench(b *testing.B, s records.Sink) {
	rec, err := records.NewRecorder(records.Options{Instance: "b1", BufferBytes: 256 << 20}, s)
	if err != nil {
		b.Fatal(err)
	}
	r := rec1()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Nonce[0]++
		rec.Put(&r)
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
}

func rec1() records.Record {
	return records.Record{Kind: records.KindBid, Time: time.Now(), RequestID: "0123456789abcdef", ImpID: "1", Exchange: "default",
		CampaignID: "c1", Publisher: "pub-1234", DomainOrBundle: "www.news.example", Format: "300x250", Country: "FRA",
		DeviceType: "phone", PriceMicros: 1_500_000, Currency: "USD", Products: []int64{1, 2, 3, 4, 5, 6}}
}
