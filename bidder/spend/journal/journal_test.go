package journal

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rtbd/rtbd/bidder/spend"
)

const dir = "/journal"

func notice(i int) spend.Notice {
	at := time.Date(2026, 3, 1, 12, 0, 0, i, time.UTC)
	n := spend.Notice{Kind: spend.NoticeCharge, User: fmt.Sprintf("user-%d", i), Micros: int64(1000 + i),
		At: at, Expires: at.Add(time.Hour + 5*time.Minute)}
	n.Nonce[0], n.Nonce[15] = byte(i), byte(i>>8)
	return n
}

func open(t *testing.T, fs vfs.FS, o Options) *Journal {
	t.Helper()
	o.FS = fs
	j, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

type replayed struct {
	campaign string
	n        spend.Notice
}

func replayAll(t *testing.T, j *Journal) ([]replayed, ReplayStats) {
	t.Helper()
	var got []replayed
	st, err := j.Replay(func(c string, n *spend.Notice) error {
		got = append(got, replayed{c, *n})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Replayed != len(got) {
		t.Errorf("ReplayStats.Replayed %d, fn called %d times", st.Replayed, len(got))
	}
	return got, st
}

func sameNotice(a, b spend.Notice) bool {
	return a.Nonce == b.Nonce && a.Kind == b.Kind && a.User == b.User && a.Micros == b.Micros &&
		a.At.Equal(b.At) && a.Expires.Equal(b.Expires) && a.Seq == b.Seq
}

// TestAppendConfirmReplay: what is appended and not confirmed is replayed
// after a reopen, in Seq order, field for field; Seq keeps growing.
func TestAppendConfirmReplay(t *testing.T) {
	fs := vfs.NewMem()
	j := open(t, fs, Options{})
	var want []replayed
	var seqs []uint64
	for i := range 6 {
		n := notice(i)
		if err := j.Append("camp-"+fmt.Sprint(i%2), &n); err != nil {
			t.Fatal(err)
		}
		if n.Seq == 0 || (len(seqs) > 0 && n.Seq <= seqs[len(seqs)-1]) {
			t.Fatalf("Append %d: Seq %d after %v", i, n.Seq, seqs)
		}
		seqs = append(seqs, n.Seq)
		if i != 1 && i != 4 {
			want = append(want, replayed{"camp-" + fmt.Sprint(i%2), n})
		}
	}
	j.Confirm([]uint64{seqs[1], seqs[4]})
	if got := j.Pending(); got != 4 {
		t.Errorf("Pending %d, want 4", got)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Append("c", &spend.Notice{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}

	j2 := open(t, fs, Options{})
	if got := j2.Pending(); got != 4 {
		t.Errorf("Pending after reopen %d, want 4", got)
	}
	got, st := replayAll(t, j2)
	if len(got) != len(want) || len(st.Corrupt) != 0 {
		t.Fatalf("replayed %d records (corrupt %v), want %d", len(got), st.Corrupt, len(want))
	}
	for i := range want {
		if got[i].campaign != want[i].campaign || !sameNotice(got[i].n, want[i].n) {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// Appends after the reopen get larger Seqs and are not part of this
	// run's replay.
	n := notice(9)
	if err := j2.Append("camp-9", &n); err != nil {
		t.Fatal(err)
	}
	if n.Seq <= seqs[len(seqs)-1] {
		t.Errorf("Seq after reopen %d, not above %d", n.Seq, seqs[len(seqs)-1])
	}
	if got, _ := replayAll(t, j2); len(got) != len(want) {
		t.Errorf("second replay: %d records, want the %d there at Open", len(got), len(want))
	}
}

// TestCrash: the journal's state after a crash (the file system reduced to
// what was synced, no Close) still holds every appended, unconfirmed
// notice, and Seqs stay unique even when every record had been deleted.
func TestCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	j, err := Open(dir, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seqs []uint64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				n := notice(g*50 + i)
				if err := j.Append("camp", &n); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seqs = append(seqs, n.Seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(seqs)
	if len(slices.Compact(slices.Clone(seqs))) != 400 {
		t.Fatalf("concurrent Appends: %d distinct Seqs of %d", len(slices.Compact(slices.Clone(seqs))), len(seqs))
	}
	j.Confirm(seqs[:100])
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // exactly what was synced
	j.Close()

	j2 := open(t, crashed, Options{})
	got, _ := replayAll(t, j2)
	have := map[uint64]bool{}
	for _, r := range got {
		have[r.n.Seq] = true
	}
	for _, s := range seqs[100:] {
		if !have[s] {
			t.Errorf("seq %d appended and not confirmed, missing after the crash", s)
		}
	}
	if len(got) > 400 {
		t.Errorf("replayed %d records, more than the 400 appended", len(got))
	}
	t.Logf("after the crash: %d records replayed (300 unconfirmed, 100 confirmed without fsync)", len(got))

	// Every record deleted, then a crash: the next Seq is still new.
	if err := j2.ConfirmAll(); err != nil {
		t.Fatal(err)
	}
	if j2.Pending() != 0 {
		t.Errorf("Pending after ConfirmAll %d", j2.Pending())
	}
	crashed2 := crashed.CrashClone(vfs.CrashCloneCfg{})
	j2.Close()
	j3 := open(t, crashed2, Options{})
	if got, _ := replayAll(t, j3); len(got) != 0 {
		t.Errorf("after ConfirmAll and a crash: %d records replayed, want 0", len(got))
	}
	n := notice(0)
	if err := j3.Append("camp", &n); err != nil {
		t.Fatal(err)
	}
	if n.Seq <= seqs[len(seqs)-1] {
		t.Errorf("Seq %d after ConfirmAll and a crash, not above the last used %d", n.Seq, seqs[len(seqs)-1])
	}
}

// TestCorruptRecord: a value that does not decode is reported with its
// Seq and skipped; the others replay.
func TestCorruptRecord(t *testing.T) {
	fs := vfs.NewMem()
	j := open(t, fs, Options{})
	var seqs []uint64
	for i := range 3 {
		n := notice(i)
		if err := j.Append("camp", &n); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, n.Seq)
	}
	j.Close()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	var k [9]byte
	if err := db.Set(recKey(&k, seqs[1]), []byte{recordVersion, 200, 1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()

	reg := prometheus.NewRegistry()
	j2 := open(t, fs, Options{Registerer: reg})
	got, st := replayAll(t, j2)
	if !slices.Equal(st.Corrupt, []uint64{seqs[1]}) {
		t.Errorf("Corrupt %v, want [%d]", st.Corrupt, seqs[1])
	}
	if len(got) != 2 || got[0].n.Seq != seqs[0] || got[1].n.Seq != seqs[2] {
		t.Errorf("replayed %+v, want seqs %d and %d", got, seqs[0], seqs[2])
	}
	if v := testutil.ToFloat64(j2.corrupt); v != 1 {
		t.Errorf("rtbd_spend_journal_corrupt_records_total %v, want 1", v)
	}
}

// TestBounds: past MaxPending, and for what the Writer would refuse,
// Append fails and writes nothing.
func TestBounds(t *testing.T) {
	j := open(t, vfs.NewMem(), Options{MaxPending: 2})
	for i := range 2 {
		n := notice(i)
		if err := j.Append("camp", &n); err != nil {
			t.Fatal(err)
		}
		defer j.Confirm([]uint64{n.Seq})
	}
	n := notice(3)
	if err := j.Append("camp", &n); !errors.Is(err, ErrFull) || n.Seq != 0 {
		t.Errorf("Append past MaxPending: %v (Seq %d), want ErrFull", err, n.Seq)
	}
	j.Confirm([]uint64{1 << 40}) // not in the journal: Pending does not go below what is there
	for _, tc := range []struct {
		campaign string
		n        spend.Notice
	}{{"", notice(1)}, {"camp", spend.Notice{Micros: -1}}, {string(make([]byte, maxField+1)), notice(1)}} {
		if err := j.Append(tc.campaign, &tc.n); !errors.Is(err, spend.ErrInvalid) {
			t.Errorf("Append(%.10q, micros %d): %v, want spend.ErrInvalid", tc.campaign, tc.n.Micros, err)
		}
	}
	if j.Pending() > 2 {
		t.Errorf("Pending %d, want at most 2", j.Pending())
	}
}

// FuzzDecodeRecord: the decoder of the journal's own files takes any bytes
// without panicking, and what it accepts encodes back to a record that
// decodes to the same notice.
func FuzzDecodeRecord(f *testing.F) {
	for i := range 3 {
		n := notice(i)
		f.Add(appendRecord(nil, "camp", &n))
	}
	f.Add(appendRecord(nil, "c", &spend.Notice{}))
	f.Add([]byte{recordVersion})
	f.Add([]byte{2, 1, 'c'})
	f.Fuzz(func(t *testing.T, v []byte) {
		var n spend.Notice
		c, err := decodeRecord(v, &n)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		var n2 spend.Notice
		c2, err := decodeRecord(appendRecord(nil, c, &n), &n2)
		if err != nil || c2 != c || !sameNotice(n, n2) {
			t.Fatalf("round trip: %q %+v -> %q %+v (%v)", c, n, c2, n2, err)
		}
	})
}
