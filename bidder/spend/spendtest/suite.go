package spendtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rtbd/rtbd/bidder/spend"
)

// Capabilities says what a store under test promises beyond the interface.
// Every store charges a notice once (the suite's ChargeOnce cases).
type Capabilities struct {
	// ExactlyOnce: the store applies a Delta.ID of a delta without notices
	// at most once (Redis, Pebble).
	ExactlyOnce bool
	// Peer, if set, returns another client of the same backend as s, as a
	// second bidder would have; the suite checks that it sees s's flushes.
	Peer func(t *testing.T, s spend.Store) spend.Store
}

// NewStoreFunc returns a store on a fresh, empty backend (or a fresh key
// space of a shared one); it is closed by t.Cleanup.
type NewStoreFunc func(t *testing.T) spend.Store

var idSeq struct {
	sync.Mutex
	n int
}

// ID returns a unique delta id for tests.
func ID() string {
	idSeq.Lock()
	defer idSeq.Unlock()
	idSeq.n++
	return fmt.Sprintf("t%d:%d", time.Now().UnixNano()%1e9, idSeq.n)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// RunStoreSuite runs the conformance tests every spend.Store must pass.
func RunStoreSuite(t *testing.T, newStore NewStoreFunc, caps Capabilities) {
	t.Run("ReadUnknown", func(t *testing.T) {
		s := newStore(t)
		got, err := s.Read(ctx(t), []string{"c1", "c2"}, "2024-05-01")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("Read returned %d totals, want 2", len(got))
		}
		for i, g := range got {
			if g.DayMicros != 0 || g.TotalMicros != 0 || g.DayImps != 0 || g.TotalImps != 0 {
				t.Errorf("total %d = %+v, want zeros", i, g)
			}
			if g.Campaign != []string{"c1", "c2"}[i] || g.Day != "2024-05-01" {
				t.Errorf("total %d names %q %q", i, g.Campaign, g.Day)
			}
		}
	})

	t.Run("FlushEmpty", func(t *testing.T) {
		s := newStore(t)
		got, err := s.Flush(ctx(t), nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("Flush(nil) = %v, %v", got, err)
		}
	})

	t.Run("FlushAndRead", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		got, err := s.Flush(c, []spend.Delta{
			{ID: ID(), Campaign: "c1", Day: "2024-05-01", Micros: 1500, Imps: 3},
			{ID: ID(), Campaign: "c2", Day: "2024-05-01", Micros: 700, Imps: 1},
			{ID: ID(), Campaign: "c1", Day: "2024-05-02", Micros: 100, Imps: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []spend.Total{
			{Campaign: "c1", Day: "2024-05-01", DayMicros: 1500, DayImps: 3, TotalMicros: 1500, TotalImps: 3},
			{Campaign: "c2", Day: "2024-05-01", DayMicros: 700, DayImps: 1, TotalMicros: 700, TotalImps: 1},
			{Campaign: "c1", Day: "2024-05-02", DayMicros: 100, DayImps: 1, TotalMicros: 1600, TotalImps: 4},
		}
		checkTotals(t, "Flush", got, want)
		got, err = s.Flush(c, []spend.Delta{{ID: ID(), Campaign: "c1", Day: "2024-05-01", Micros: 10, Imps: 1}})
		if err != nil {
			t.Fatal(err)
		}
		checkTotals(t, "second Flush", got, []spend.Total{{Campaign: "c1", Day: "2024-05-01", DayMicros: 1510, DayImps: 4, TotalMicros: 1610, TotalImps: 5}})
		r, err := s.Read(c, []string{"c1", "c2", "c3"}, "2024-05-01")
		if err != nil {
			t.Fatal(err)
		}
		checkTotals(t, "Read", r, []spend.Total{
			{Campaign: "c1", Day: "2024-05-01", DayMicros: 1510, DayImps: 4, TotalMicros: 1610, TotalImps: 5},
			{Campaign: "c2", Day: "2024-05-01", DayMicros: 700, DayImps: 1, TotalMicros: 700, TotalImps: 1},
			{Campaign: "c3", Day: "2024-05-01"},
		})
		r, err = s.Read(c, []string{"c1"}, "2024-05-02")
		if err != nil {
			t.Fatal(err)
		}
		checkTotals(t, "Read day 2", r, []spend.Total{{Campaign: "c1", Day: "2024-05-02", DayMicros: 100, DayImps: 1, TotalMicros: 1610, TotalImps: 5}})
	})

	t.Run("Freq", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		exp := time.Now().Add(time.Hour).Truncate(time.Second)
		got, err := s.Flush(c, []spend.Delta{{ID: ID(), Campaign: "c1", Day: "2024-05-01", Micros: 1, Imps: 3, Freq: []spend.FreqDelta{
			{User: "u1", Window: 1000, Count: 2, Expires: exp},
			{User: "u2", Window: 1000, Count: 1, Expires: exp},
			{User: "u1", Window: 2000, Count: 1, Expires: exp},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		checkFreq(t, got[0].Freq, []int64{2, 1, 1})
		got, err = s.Flush(c, []spend.Delta{
			{ID: ID(), Campaign: "c1", Day: "2024-05-01", Micros: 1, Imps: 2, Freq: []spend.FreqDelta{{User: "u1", Window: 1000, Count: 1, Expires: exp}, {User: "u3", Window: 1000, Count: 1, Expires: exp}}},
			{ID: ID(), Campaign: "c2", Day: "2024-05-01", Micros: 1, Imps: 1, Freq: []spend.FreqDelta{{User: "u1", Window: 1000, Count: 5, Expires: exp}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		checkFreq(t, got[0].Freq, []int64{3, 1})
		checkFreq(t, got[1].Freq, []int64{5})
	})

	t.Run("Invalid", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		bad := [][]spend.Delta{
			{{ID: ID(), Campaign: "ok", Day: "2024-05-01", Micros: 1, Imps: 1}, {ID: ID(), Campaign: "", Day: "2024-05-01", Micros: 1}},
			{{ID: ID(), Campaign: "ok", Day: "2024-05-01", Micros: 1, Imps: 1}, {ID: ID(), Campaign: "x", Day: "20240501", Micros: 1}},
			{{ID: ID(), Campaign: "ok", Day: "2024-05-01", Micros: 1, Imps: 1}, {ID: ID(), Campaign: "x", Day: "2024-05-01", Micros: -1}},
			{{ID: "", Campaign: "ok", Day: "2024-05-01", Micros: 1, Imps: 1}},
			{{ID: ID(), Campaign: "ok", Day: "2024-05-01", Micros: 1, Imps: 1, Freq: []spend.FreqDelta{{User: "", Window: 1, Count: 1, Expires: time.Now()}}}},
			{{ID: ID(), Campaign: "ok", Day: "2024-05-01", Micros: 1, Imps: 1, Freq: []spend.FreqDelta{{User: "u", Window: 1, Count: 0, Expires: time.Now()}}}},
		}
		for i, ds := range bad {
			if _, err := s.Flush(c, ds); !errors.Is(err, spend.ErrInvalid) {
				t.Errorf("case %d: Flush error %v, want ErrInvalid", i, err)
			}
		}
		r, err := s.Read(c, []string{"ok"}, "2024-05-01")
		if err != nil {
			t.Fatal(err)
		}
		if r[0].TotalMicros != 0 {
			t.Errorf("a rejected flush changed the store: %+v", r[0])
		}
	})

	if caps.ExactlyOnce {
		t.Run("ExactlyOnce", func(t *testing.T) {
			s := newStore(t)
			c := ctx(t)
			exp := time.Now().Add(time.Hour)
			d := spend.Delta{ID: ID(), Campaign: "c1", Day: "2024-05-01", Micros: 100, Imps: 1, Freq: []spend.FreqDelta{{User: "u", Window: 0, Count: 1, Expires: exp}}}
			for i := range 3 {
				got, err := s.Flush(c, []spend.Delta{d})
				if err != nil {
					t.Fatal(err)
				}
				checkTotals(t, fmt.Sprintf("flush %d of the same delta", i), got, []spend.Total{{Campaign: "c1", Day: "2024-05-01", DayMicros: 100, DayImps: 1, TotalMicros: 100, TotalImps: 1}})
				checkFreq(t, got[0].Freq, []int64{1})
			}
			d2 := d
			d2.ID = ID()
			got, err := s.Flush(c, []spend.Delta{d, d2})
			if err != nil {
				t.Fatal(err)
			}
			if got[1].TotalMicros != 200 || got[1].Freq[0] != 2 {
				t.Errorf("a new id after a duplicate: %+v, want total 200, freq 2", got[1])
			}
		})
	}

	t.Run("Concurrent", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		const G, N = 8, 40
		exp := time.Now().Add(time.Hour)
		var eg errgroup.Group
		for g := range G {
			eg.Go(func() error {
				for i := range N {
					_, err := s.Flush(c, []spend.Delta{
						{ID: ID(), Campaign: "hot", Day: "2024-05-01", Micros: int64(g + 1), Imps: 1, Freq: []spend.FreqDelta{{User: "u", Window: 0, Count: 1, Expires: exp}}},
						{ID: ID(), Campaign: fmt.Sprintf("c%d", g), Day: "2024-05-01", Micros: int64(i), Imps: 1},
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
		}
		if err := eg.Wait(); err != nil {
			t.Fatal(err)
		}
		r, err := s.Read(c, []string{"hot", "c0", "c7"}, "2024-05-01")
		if err != nil {
			t.Fatal(err)
		}
		wantHot := int64(N * G * (G + 1) / 2)
		if r[0].DayMicros != wantHot || r[0].TotalImps != G*N {
			t.Errorf("hot = %+v, want %d micros, %d imps", r[0], wantHot, G*N)
		}
		if r[1].TotalMicros != N*(N-1)/2 || r[2].TotalImps != N {
			t.Errorf("c0 = %+v, c7 = %+v", r[1], r[2])
		}
		got, err := s.Flush(c, []spend.Delta{{ID: ID(), Campaign: "hot", Day: "2024-05-01", Imps: 0, Freq: []spend.FreqDelta{{User: "u", Window: 0, Count: 1, Expires: exp}}}})
		if err != nil {
			t.Fatal(err)
		}
		checkFreq(t, got[0].Freq, []int64{G*N + 1})
	})

	if caps.Peer != nil {
		t.Run("Peer", func(t *testing.T) {
			a := newStore(t)
			b := caps.Peer(t, a)
			c := ctx(t)
			if _, err := a.Flush(c, []spend.Delta{{ID: ID(), Campaign: "c", Day: "2024-05-01", Micros: 5, Imps: 1}}); err != nil {
				t.Fatal(err)
			}
			got, err := b.Flush(c, []spend.Delta{{ID: ID(), Campaign: "c", Day: "2024-05-01", Micros: 7, Imps: 1}})
			if err != nil {
				t.Fatal(err)
			}
			checkTotals(t, "peer flush", got, []spend.Total{{Campaign: "c", Day: "2024-05-01", DayMicros: 12, DayImps: 2, TotalMicros: 12, TotalImps: 2}})
			r, err := a.Read(c, []string{"c"}, "2024-05-01")
			if err != nil {
				t.Fatal(err)
			}
			checkTotals(t, "read after peer", r, got)
		})
	}

	runChargeOnce(t, newStore, caps)
	runCounts(t, newStore, caps)

	t.Run("WriterExact", func(t *testing.T) {
		s := newStore(t)
		w, err := spend.NewWriter(s, spend.Options{FlushInterval: 20 * time.Millisecond, ThresholdImps: 50})
		if err != nil {
			t.Fatal(err)
		}
		const G, N = 8, 500
		var wg sync.WaitGroup
		at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
		for g := range G {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range N {
					if err := w.Add(fmt.Sprintf("c%d", i%3), fmt.Sprintf("u%d", g), int64(i%7+1), at); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := w.Close(ctx(t)); err != nil {
			t.Fatal(err)
		}
		var want [3]int64
		var wantImps [3]int64
		for i := range N {
			want[i%3] += int64(i%7+1) * G
			wantImps[i%3] += G
		}
		r, err := s.Read(ctx(t), []string{"c0", "c1", "c2"}, "2024-05-01")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if r[i].DayMicros != want[i] || r[i].TotalMicros != want[i] || r[i].DayImps != wantImps[i] {
				t.Errorf("c%d: %+v, want %d micros, %d imps", i, r[i], want[i], wantImps[i])
			}
		}
	})
}

var nonceSeq struct {
	sync.Mutex
	n uint64
}

// Notice returns a charge notice with a fresh nonce: micros for user (""
// for none) at at, its key kept for an hour.
func Notice(user string, micros int64, at time.Time) spend.Notice {
	nonceSeq.Lock()
	nonceSeq.n++
	n := nonceSeq.n
	nonceSeq.Unlock()
	var nonce spend.Nonce
	binary.BigEndian.PutUint64(nonce[:8], uint64(time.Now().UnixNano()))
	binary.BigEndian.PutUint64(nonce[8:], n)
	return spend.Notice{Nonce: nonce, Kind: spend.NoticeCharge, User: user, Micros: micros, At: at, Expires: time.Now().Add(time.Hour)}
}

// freqExpires is the expiry of every frequency count NoticeDelta makes:
// one value for the whole test process, as a Writer gives every count of
// one cap window the same expiry (a store may key the count by it).
var freqExpires = time.Now().Add(2 * time.Hour).Truncate(time.Second)

// NoticeDelta returns the delta of campaign and day that charges notices,
// as a Writer seals it: a fresh ID, Micros, Imps and one FreqDelta per
// distinct user of window (FreqRef set), sealed by origin with seq.
func NoticeDelta(campaign, day, origin string, seq int64, window int64, notices ...spend.Notice) spend.Delta {
	d := spend.Delta{ID: ID(), Campaign: campaign, Day: day, Origin: origin, Seq: seq}
	exp := freqExpires
	for _, n := range notices {
		n.FreqRef = 0
		if n.User != "" {
			j := -1
			for k := range d.Freq {
				if d.Freq[k].User == n.User {
					j = k
				}
			}
			if j < 0 {
				j = len(d.Freq)
				d.Freq = append(d.Freq, spend.FreqDelta{User: n.User, Window: window, Expires: exp})
			}
			d.Freq[j].Count++
			n.FreqRef = j + 1
		}
		d.Micros += n.Micros
		d.Imps++
		d.Notices = append(d.Notices, n)
	}
	return d
}

// runChargeOnce checks that every notice is charged once: in two flushes,
// from two clients (two bidders), in a flush retried after an unknown
// outcome, frequency counts too, and through two Writers.
func runChargeOnce(t *testing.T, newStore NewStoreFunc, caps Capabilities) {
	const day = "2024-05-01"
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	peer := func(t *testing.T, s spend.Store) spend.Store {
		if caps.Peer != nil {
			return caps.Peer(t, s)
		}
		return s
	}
	seq := time.Now().UnixNano()
	next := func() int64 { seq++; return seq }

	t.Run("ChargeOnceTwoFlushes", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		n1, n2, n3 := Notice("u1", 100, at), Notice("u1", 20, at), Notice("u2", 3, at)
		got, err := s.Flush(c, []spend.Delta{NoticeDelta("c", day, "b1", next(), 0, n1, n2)})
		if err != nil {
			t.Fatal(err)
		}
		checkTotals(t, "first flush", got, []spend.Total{{Campaign: "c", Day: day, DayMicros: 120, DayImps: 2, TotalMicros: 120, TotalImps: 2}})
		checkFreq(t, got[0].Freq, []int64{2})
		got, err = s.Flush(c, []spend.Delta{NoticeDelta("c", day, "b1", next(), 0, n2, n3, n1)})
		if err != nil {
			t.Fatal(err)
		}
		checkCharged(t, "second flush, two notices again", got, day, 123, 3, []int64{2, 1}, 2)
		// The same notice twice in one delta, and in two deltas of one flush.
		n4 := Notice("u3", 7, at)
		got, err = s.Flush(c, []spend.Delta{NoticeDelta("c", day, "b1", next(), 0, n4, n4), NoticeDelta("c", "2024-05-02", "b1", seq, 0, n4)})
		if err != nil {
			t.Fatal(err)
		}
		if got[1].TotalMicros != 130 || got[1].TotalImps != 4 || got[0].Duplicates+got[1].Duplicates != 2 {
			t.Errorf("one notice three times in one flush: %+v, want total 130 micros, 4 imps, 2 duplicates", got)
		}
		if got[0].Freq[0] != 1 {
			t.Errorf("freq of the repeated notice %v, want 1", got[0].Freq)
		}
	})

	t.Run("ChargeOnceTwoBidders", func(t *testing.T) {
		a := newStore(t)
		b := peer(t, a)
		c := ctx(t)
		ns := []spend.Notice{Notice("u1", 5, at), Notice("u2", 6, at), Notice("", 7, at)}
		if _, err := a.Flush(c, []spend.Delta{NoticeDelta("c", day, "b1", next(), 0, ns...)}); err != nil {
			t.Fatal(err)
		}
		got, err := b.Flush(c, []spend.Delta{NoticeDelta("c", day, "b2", next(), 0, append(ns, Notice("u1", 1, at))...)})
		if err != nil {
			t.Fatal(err)
		}
		checkCharged(t, "replay to another bidder", got, day, 19, 4, []int64{2, 1}, 3)
	})

	t.Run("ChargeOnceRetried", func(t *testing.T) {
		s := newStore(t)
		c := ctx(t)
		d := NoticeDelta("c", day, "b1", next(), 0, Notice("u1", 11, at), Notice("u1", 12, at), Notice("u2", 13, at))
		for i := range 3 { // a flush whose outcome was unknown, retried unchanged
			got, err := s.Flush(c, []spend.Delta{d})
			if err != nil {
				t.Fatal(err)
			}
			checkTotals(t, fmt.Sprintf("attempt %d", i), got, []spend.Total{{Campaign: "c", Day: day, DayMicros: 36, DayImps: 3, TotalMicros: 36, TotalImps: 3}})
			checkFreq(t, got[0].Freq, []int64{2, 1})
			if i > 0 && got[0].Duplicates != 3 {
				t.Errorf("attempt %d: duplicates %d, want 3", i, got[0].Duplicates)
			}
		}
		r, err := s.Read(c, []string{"c"}, day)
		if err != nil {
			t.Fatal(err)
		}
		checkTotals(t, "read", r, []spend.Total{{Campaign: "c", Day: day, DayMicros: 36, DayImps: 3, TotalMicros: 36, TotalImps: 3}})
	})

	t.Run("ChargeOnceWriters", func(t *testing.T) {
		s := newStore(t)
		p := peer(t, s)
		var mu sync.Mutex
		confirmed := map[uint64]int{}
		conf := func(seqs []uint64) {
			mu.Lock()
			defer mu.Unlock()
			for _, q := range seqs {
				confirmed[q]++
			}
		}
		const N = 300
		ns := make([]spend.Notice, N)
		var want int64
		for i := range ns {
			ns[i] = Notice(fmt.Sprintf("u%d", i%7), int64(i+1), at)
			ns[i].Seq = uint64(i + 1)
			want += int64(i + 1)
		}
		var ws []*spend.Writer
		for k, st := range []spend.Store{s, p} {
			w, err := spend.NewWriter(st, spend.Options{FlushInterval: 10 * time.Millisecond, ThresholdImps: 40, InstanceID: fmt.Sprintf("b%d", k+1), Confirmed: conf})
			if err != nil {
				t.Fatal(err)
			}
			w.SetCampaigns([]spend.CampaignBudget{{ID: "c", FreqCap: 1000, FreqPeriod: time.Hour}})
			ws = append(ws, w)
		}
		var wg sync.WaitGroup
		for k, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range ns {
					n := ns[(i+k*N/2)%N] // each Writer gets every notice, in another order
					if err := w.AddNotice("c", &n); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, w := range ws {
			if err := w.Close(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := s.Read(ctx(t), []string{"c"}, day)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d notices sent to both of 2 Writers: store has %d micros, %d impressions (want %d, %d)", N, r[0].TotalMicros, r[0].TotalImps, want, N)
		checkTotals(t, "two Writers, every notice twice", r, []spend.Total{{Campaign: "c", Day: day, DayMicros: want, DayImps: N, TotalMicros: want, TotalImps: N}})
		mu.Lock()
		defer mu.Unlock()
		for i := range ns {
			if confirmed[uint64(i+1)] != 2 {
				t.Errorf("seq %d confirmed %d times, want 2 (once per Writer)", i+1, confirmed[uint64(i+1)])
				break
			}
		}
	})
}

// checkCharged checks the one total of a flush of campaign "c" on day:
// micros and imps per day and in total, the freq counts and duplicates.
func checkCharged(t *testing.T, what string, got []spend.Total, day string, micros, imps int64, freq []int64, dups int64) {
	t.Helper()
	checkTotals(t, what, got, []spend.Total{{Campaign: "c", Day: day, DayMicros: micros, DayImps: imps, TotalMicros: micros, TotalImps: imps}})
	if len(got) == 1 {
		checkFreq(t, got[0].Freq, freq)
		if got[0].Duplicates != dups {
			t.Errorf("%s: duplicates %d, want %d", what, got[0].Duplicates, dups)
		}
	}
}

func checkTotals(t *testing.T, what string, got, want []spend.Total) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d totals, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Campaign != w.Campaign || g.Day != w.Day || g.DayMicros != w.DayMicros || g.DayImps != w.DayImps || g.TotalMicros != w.TotalMicros || g.TotalImps != w.TotalImps {
			t.Errorf("%s: total %d = %+v, want %+v", what, i, g, w)
		}
	}
}

func checkFreq(t *testing.T, got, want []int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("freq counts %v, want %v", got, want)
	}
}
