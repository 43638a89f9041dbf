package records

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// memSource is an in-memory ChargeSource.
type memSource struct {
	mu      sync.Mutex
	recs    map[uint64][]byte
	cursors map[string]uint64
}

func (m *memSource) Cursor(name string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cursors[name], nil
}

func (m *memSource) ReadAfter(after uint64, max int, fn func(uint64, []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for s := after + 1; s <= uint64(len(m.recs)) && n < max; s++ {
		if err := fn(s, m.recs[s]); err != nil {
			return err
		}
		n++
	}
	return nil
}

func (m *memSource) Commit(name string, seq uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cursors[name] = seq
	return nil
}

// flakySink fails its first writes, then makes records durable only when
// SyncCharges completes a "file" (every roll records).
type flakySink struct {
	mu       sync.Mutex
	failures int
	open     []uint64
	durable  uint64
	got      map[uint64]int
	roll     int
}

func (s *flakySink) Name() string { return SinkFile }
func (s *flakySink) WriteCharges(recs []Record) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures > 0 {
		s.failures--
		s.open = nil // the open file is lost
		return s.durable, errors.New("disk full")
	}
	for _, r := range recs {
		s.open = append(s.open, r.Seq)
	}
	return s.durable, nil
}

func (s *flakySink) SyncCharges(_ time.Time, force bool) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) >= s.roll || (force && len(s.open) > 0) {
		for _, q := range s.open {
			s.got[q]++
		}
		s.durable = s.open[len(s.open)-1]
		s.open = nil
	}
	return s.durable, nil
}

// TestExportCharges: every record reaches the sink at least once despite
// its failures (each loses the open file: handed again from the cursor),
// and the cursor ends at the last; a file short of its roll size is
// completed at shutdown.
func TestExportCharges(t *testing.T) {
	src := &memSource{recs: map[uint64][]byte{}, cursors: map[string]uint64{}}
	const n = 2500
	for i := uint64(1); i <= n; i++ {
		r := Record{Kind: KindCharge, Time: time.Unix(int64(i), 0), SpendMicros: int64(i)}
		src.recs[i] = r.AppendBinary(nil)
	}
	sink := &flakySink{failures: 3, got: map[uint64]int{}, roll: 700}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ExportCharges(ctx, src, sink, ExportOptions{Batch: 100, Poll: time.Millisecond, RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, _ := src.Cursor(SinkFile)
		if c >= 2100 || time.Now().After(deadline) { // 3 files of 700 complete; the rest waits for the shutdown
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if c, _ := src.Cursor(SinkFile); c != n {
		t.Fatalf("cursor %d after shutdown, want %d", c, n)
	}
	for i := uint64(1); i <= n; i++ {
		if sink.got[i] == 0 {
			t.Fatalf("record %d never made durable", i)
		}
	}
}
