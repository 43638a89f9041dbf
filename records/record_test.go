package records

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func sample() Record {
	r := Record{Kind: KindLoss, Time: time.Date(2026, 3, 14, 9, 58, 1, 123456000, time.UTC), Instance: "b1",
		RequestID: "req-1", ImpID: "1", Exchange: "ex", CampaignID: "c1", Publisher: "pub", DomainOrBundle: "a.example",
		Format: "300x250", Country: "FRA", DeviceType: "phone", PriceMicros: 1_500_000, SpendMicros: 1500, ValueMicros: -3,
		Currency: "EUR", Products: []int64{1, 2, 3}, Reason: "lost_to_higher_bid", MMicros: 2_100_000, Test: true,
		UserID: "u1", GroupID: 7, ProductID: 9}
	r.Nonce[0], r.Nonce[15] = 0xab, 0x01
	return r
}

func TestBinaryRoundTrip(t *testing.T) {
	r := sample()
	b := r.AppendBinary(nil)
	if len(b) > r.BinarySize() {
		t.Fatalf("encoded %d bytes, BinarySize %d", len(b), r.BinarySize())
	}
	b = append(b, 0xff) // the next record's first byte
	var got Record
	rest, err := got.DecodeBinary(b)
	if err != nil || len(rest) != 1 {
		t.Fatalf("decode: %v, rest %d", err, len(rest))
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("got %+v\nwant %+v", got, r)
	}
	var row Row
	r.ToRow(&row)
	var back Record
	back.FromRow(r.Kind, &row)
	back.Instance = r.Instance
	if !reflect.DeepEqual(back, r) {
		t.Fatalf("through a row: %+v\nwant %+v", back, r)
	}
	for i := range len(b) - 1 {
		if _, err := got.DecodeBinary(b[:i]); err == nil {
			t.Fatalf("a record cut at %d bytes decoded", i)
		}
	}
}

// FuzzDecodeBinary: a damaged journal record never panics, and what
// decodes encodes back to the same bytes.
func FuzzDecodeBinary(f *testing.F) {
	r := sample()
	f.Add(r.AppendBinary(nil))
	f.Add([]byte{1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got Record
		rest, err := got.DecodeBinary(b)
		if err != nil {
			return
		}
		again := got.AppendBinary(nil)
		var twice Record
		if _, err := twice.DecodeBinary(again); err != nil || !reflect.DeepEqual(twice, got) {
			t.Fatalf("re-encoded record does not decode the same: %v", err)
		}
		_ = rest
	})
}

type countSink struct {
	mu    sync.Mutex
	n     int
	block chan struct{}
}

func (s *countSink) Name() string { return SinkKafka }
func (s *countSink) Write(recs []Record) {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	s.n += len(recs)
	s.mu.Unlock()
}
func (s *countSink) Tick(time.Time) {}
func (s *countSink) Close() error   { return nil }

// TestRecorderDropsWhenFull: a sink that does not take records fills its
// buffer; then records are dropped and counted, and Put never blocks.
// What was buffered is written once the sink moves again.
func TestRecorderDropsWhenFull(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s := &countSink{block: make(chan struct{})}
	rec, err := NewRecorder(Options{Instance: "b1", BufferBytes: 64 << 10, Metrics: m, FlushInterval: time.Hour}, s)
	if err != nil {
		t.Fatal(err)
	}
	r := sample()
	const puts = 5000
	for range puts {
		rec.Put(&r)
	}
	dropped := testutil.ToFloat64(m.Sink(SinkKafka).dropped[KindLoss])
	if dropped == 0 || dropped >= puts {
		t.Fatalf("dropped %v of %d with a 64 KiB buffer and a stuck sink", dropped, puts)
	}
	close(s.block)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if s.n+int(dropped) != puts {
		t.Fatalf("written %d + dropped %v != %d put", s.n, dropped, puts)
	}
}

// TestFailLogsOncePerInterval: a failing sink logs once per interval,
// however many failures, and counts every one.
func TestFailLogsOncePerInterval(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, zap.New(core), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Sink(SinkFile)
	for range 100 {
		s.Fail(errors.New("no space left on device"))
	}
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d log lines for 100 failures within the interval, want 1", n)
	}
	if v := testutil.ToFloat64(s.errs); v != 100 {
		t.Fatalf("errors counted %v, want 100", v)
	}
}
