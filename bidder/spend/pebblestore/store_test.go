package pebblestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/pebblestore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/internal/clocktest"
)

func newStore(t *testing.T) spend.Store {
	s, err := pebblestore.Open(filepath.Join(t.TempDir(), "spend"), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStoreSuite(t *testing.T) {
	spendtest.RunStoreSuite(t, newStore, spendtest.Capabilities{ExactlyOnce: true})
}

// TestReopen: what a Flush returned is on disk after Close and Open.
func TestReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spend")
	ctx := context.Background()
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(ctx, []spend.Delta{{ID: "a:1", Campaign: "c", Day: "2024-05-01", Micros: 42, Imps: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(ctx, []spend.Delta{{ID: "a:2", Campaign: "c", Day: "2024-05-01", Micros: 1}}); err != pebblestore.ErrClosed {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}
	s, err = pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Read(ctx, []string{"c"}, "2024-05-01")
	if err != nil {
		t.Fatal(err)
	}
	if r[0].DayMicros != 42 || r[0].TotalImps != 2 {
		t.Errorf("after reopen: %+v", r[0])
	}
	// The applied id survives too: a retry of a:1 is not counted again.
	got, err := s.Flush(ctx, []spend.Delta{{ID: "a:1", Campaign: "c", Day: "2024-05-01", Micros: 42, Imps: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].TotalMicros != 42 {
		t.Errorf("retried id counted again after reopen: %+v", got[0])
	}
}

// TestSweep: expired frequency counts and applied ids are deleted by the
// sweep inside a later Flush; live ones stay.
func TestSweep(t *testing.T) {
	ck := clocktest.New(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC))
	s, err := pebblestore.Open("spend", pebblestore.Options{FS: vfs.NewMem(), Now: ck.Now, SweepInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	short := ck.Now().Add(time.Hour)
	long := ck.Now().Add(48 * time.Hour)
	if _, err := s.Flush(ctx, []spend.Delta{{ID: "w:1", Campaign: "c", Day: "2024-05-01", Micros: 1, Imps: 2, Freq: []spend.FreqDelta{
		{User: "u1", Window: 0, Count: 1, Expires: short}, {User: "u2", Window: 0, Count: 1, Expires: long},
	}}}); err != nil {
		t.Fatal(err)
	}
	ck.Add(25 * time.Hour) // past short and past the dedupe window
	if _, err := s.Flush(ctx, []spend.Delta{{ID: "w:2", Campaign: "c", Day: "2024-05-02", Micros: 1, Imps: 1}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.FreqCount("c", "u1", 0, short); err != nil || n != 0 {
		t.Errorf("expired count u1 = %d, %v; want swept", n, err)
	}
	if n, err := s.FreqCount("c", "u2", 0, long); err != nil || n != 1 {
		t.Errorf("live count u2 = %d, %v; want 1", n, err)
	}
	// w:1 left the dedupe window: flushing it again counts (by design).
	got, err := s.Flush(ctx, []spend.Delta{{ID: "w:1", Campaign: "c", Day: "2024-05-01", Micros: 1, Imps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].DayMicros != 2 {
		t.Errorf("id past the dedupe window not applied: %+v", got[0])
	}
}

func TestCanceledContext(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Flush(ctx, []spend.Delta{{ID: "a:1", Campaign: "c", Day: "2024-05-01", Micros: 1}}); err == nil {
		t.Fatal("Flush with a canceled context succeeded")
	}
	r, err := s.Read(context.Background(), []string{"c"}, "2024-05-01")
	if err != nil || r[0].TotalMicros != 0 {
		t.Errorf("canceled flush applied: %+v %v", r, err)
	}
}
