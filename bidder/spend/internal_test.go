package spend

import (
	"testing"
	"time"
)

func TestDayString(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2024, 1, 9, 0, 0, 0, 0, time.UTC), "2024-01-09"},
		{time.Date(999, 12, 31, 23, 59, 0, 0, time.UTC), "0999-12-31"},
	} {
		if got := dayString(dayOf(c.t, time.UTC)); got != c.want {
			t.Errorf("dayString = %q, want %q", got, c.want)
		}
	}
}

func TestWindowOf(t *testing.T) {
	at := time.Date(2024, 5, 1, 13, 30, 0, 0, time.UTC)
	s, e := windowOf(at, 24*time.Hour)
	if time.Unix(s, 0).UTC() != time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC) || e-s != 86400 {
		t.Errorf("24h window of %v: %v..%v", at, time.Unix(s, 0).UTC(), time.Unix(e, 0).UTC())
	}
	s, _ = windowOf(time.Unix(-5, 0), 10*time.Second)
	if s != -10 {
		t.Errorf("window of -5s = %d, want -10", s)
	}
}

// TestDayFractionDST: on a 23-hour day noon is 11/23 of the way.
func TestDayFractionDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2024, 3, 10, 12, 0, 0, 0, ny)
	if f := dayFraction(now, 2024, 3, 10, ny); f < 11.0/23-1e-9 || f > 11.0/23+1e-9 {
		t.Errorf("fraction = %v, want 11/23", f)
	}
}

// TestSweep: frequency entries of ended windows are dropped once confirmed.
func TestSweep(t *testing.T) {
	w, err := NewWriter(nopStore{}, Options{FlushInterval: time.Hour, ThresholdImps: -1, BudgetFraction: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.SetCampaigns([]CampaignBudget{{ID: "c", FreqCap: 5, FreqPeriod: time.Hour}})
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	_ = w.Add("c", "u", 1, at)
	count := func() int {
		n := 0
		for i := range w.lookup("c").shards {
			sh := &w.lookup("c").shards[i]
			sh.mu.Lock()
			n += len(sh.freq)
			sh.mu.Unlock()
		}
		return n
	}
	w.sweep(at.Add(2 * time.Hour))
	if count() != 1 {
		t.Fatal("an unflushed entry was swept")
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	w.sweep(at.Add(30 * time.Minute))
	if count() != 1 {
		t.Fatal("an entry of a live window was swept")
	}
	w.sweep(at.Add(2 * time.Hour))
	if count() != 0 {
		t.Fatal("an ended, flushed entry was kept")
	}
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
