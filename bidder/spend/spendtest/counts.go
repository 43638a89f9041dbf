package spendtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/rtb"
)

// runCounts checks the outcome counters (Delta.Counts): added to the
// campaign's lifetime counters, returned by the flush and by Read, summed
// across flushes and peers, applied once per id where the store promises
// it, refused on a delta with notices; and a Writer's Count and Bid reach
// the store.
func runCounts(t *testing.T, newStore NewStoreFunc, caps Capabilities) {
	lost := spend.CountLosses + int(rtb.LossReasonOf(102))
	floor := spend.CountLosses + int(rtb.LossReasonOf(100))
	other := spend.CountLosses + int(rtb.LossOther)

	t.Run("CountsFlushAndRead", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		var a, b spend.Counts
		a[spend.CountBids], a[spend.CountWins], a[lost], a[other] = 10, 2, 7, 1
		b[spend.CountBids], b[lost], b[floor] = 5, 3, 2
		got, err := s.Flush(c, []spend.Delta{
			{ID: ID(), Campaign: "c1", Day: "2024-05-01", Counts: &a},
			{ID: ID(), Campaign: "c2", Day: "2024-05-01", Micros: 5, Imps: 1, Counts: &b},
			{ID: ID(), Campaign: "c1", Day: "2024-05-02", Counts: &b},
		})
		if err != nil {
			t.Fatal(err)
		}
		var sum spend.Counts
		for i := range sum {
			sum[i] = a[i] + b[i]
		}
		checkCounts(t, "flush c1", got[0].Counts, a)
		checkCounts(t, "flush c2", got[1].Counts, b)
		checkCounts(t, "flush c1 again", got[2].Counts, sum)
		if got[1].TotalMicros != 5 || got[1].DayImps != 1 {
			t.Errorf("a delta with counts and spend: %+v", got[1])
		}
		r, err := s.Read(c, []string{"c1", "c2", "c3"}, "2024-05-03")
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, "read c1", r[0].Counts, sum)
		checkCounts(t, "read c2", r[1].Counts, b)
		checkCounts(t, "read c3", r[2].Counts, spend.Counts{})
		if caps.Peer != nil {
			r, err := caps.Peer(t, s).Read(c, []string{"c1"}, "2024-05-01")
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, "peer read c1", r[0].Counts, sum)
		}
	})

	t.Run("CountsInvalid", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		var a spend.Counts
		a[spend.CountBids] = 1
		at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
		d := NoticeDelta("c1", "2024-05-01", "o1", 1, 0, Notice("", 10, at))
		d.Counts = &a
		if _, err := s.Flush(c, []spend.Delta{d}); !errors.Is(err, spend.ErrInvalid) {
			t.Errorf("counts on a delta with notices: %v, want ErrInvalid", err)
		}
		a[spend.CountBids] = -1
		if _, err := s.Flush(c, []spend.Delta{{ID: ID(), Campaign: "c1", Day: "2024-05-01", Counts: &a}}); !errors.Is(err, spend.ErrInvalid) {
			t.Errorf("negative count: %v, want ErrInvalid", err)
		}
		r, err := s.Read(c, []string{"c1"}, "2024-05-01")
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, "after refused flushes", r[0].Counts, spend.Counts{})
	})

	if caps.ExactlyOnce {
		t.Run("CountsExactlyOnce", func(t *testing.T) {
			s := newStore(t)
			c := ctx(t)
			var a spend.Counts
			a[spend.CountBids], a[lost] = 4, 3
			d := spend.Delta{ID: ID(), Campaign: "c1", Day: "2024-05-01", Counts: &a}
			for i := range 3 {
				got, err := s.Flush(c, []spend.Delta{d})
				if err != nil {
					t.Fatal(err)
				}
				checkCounts(t, fmt.Sprintf("flush %d of the same delta", i), got[0].Counts, a)
			}
		})
	}

	t.Run("CountsWriter", func(t *testing.T) {
		s := newStore(t)
		w, err := spend.NewWriter(s, spend.Options{FlushInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		b := spend.NewBudgets(w, spend.BudgetOptions{})
		cb := spend.CampaignBudget{ID: "c1"}
		now := time.Now()
		b.Check(cb, now) // registers the campaign, as the bid path does
		const G, N = 4, 50
		var wg sync.WaitGroup
		for range G {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range N {
					b.Bid("c1", 1, now)
					if i%10 == 0 {
						_ = w.Count("c1", spend.CountWins)
					}
					_ = w.Count("c1", lost)
				}
			}()
		}
		wg.Wait()
		var want spend.Counts
		want[spend.CountBids], want[spend.CountWins], want[lost] = G*N, G*N/10, G*N
		checkCounts(t, "Writer.Counts before the flush", w.Counts("c1"), want)
		if err := w.Close(ctx(t)); err != nil {
			t.Fatal(err)
		}
		r, err := s.Read(ctx(t), []string{"c1"}, "2024-05-01")
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, "store after Close", r[0].Counts, want)
		if err := w.Count("c1", lost); !errors.Is(err, spend.ErrClosed) {
			t.Errorf("Count after Close: %v, want ErrClosed", err)
		}
	})
}

func checkCounts(t *testing.T, what string, got, want spend.Counts) {
	t.Helper()
	if got != want {
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: counter %s = %d, want %d", what, spend.CountName(i), got[i], want[i])
			}
		}
	}
}
