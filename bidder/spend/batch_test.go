package spend_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
)

// recordingStore is a TEST store that records every Flush's deltas, fails
// the first fail calls, and counts, per campaign, the Flush calls holding
// it at once (and their maximum).
type recordingStore struct {
	inner spend.Store
	mu    sync.Mutex
	fail  int
	calls [][]spend.Delta
	busy  map[string]int
	most  int
}

func (r *recordingStore) Flush(ctx context.Context, d []spend.Delta) ([]spend.Total, error) {
	r.mu.Lock()
	r.calls = append(r.calls, d)
	camps := map[string]bool{}
	for i := range d {
		camps[d[i].Campaign] = true
	}
	for c := range camps {
		r.busy[c]++
		r.most = max(r.most, r.busy[c])
	}
	failNow := r.fail > 0
	r.fail--
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		for c := range camps {
			r.busy[c]--
		}
		r.mu.Unlock()
	}()
	time.Sleep(time.Millisecond) // let other flushers try the same campaign
	if failNow {
		return nil, errors.New("recordingStore: injected failure")
	}
	return r.inner.Flush(ctx, d)
}

func (r *recordingStore) Read(ctx context.Context, c []string, day string) ([]spend.Total, error) {
	return r.inner.Read(ctx, c, day)
}

// TestBatchRetriedUnchanged: a failed batch is sent again with the same
// ids and content (notices, Origin, Seq); one campaign is never in two
// Flush calls at once; every later batch of a campaign has a larger Seq;
// and each notice's journal Seq is confirmed once the store has it.
func TestBatchRetriedUnchanged(t *testing.T) {
	rs := &recordingStore{inner: memPebble(t), fail: 3, busy: map[string]int{}}
	var mu sync.Mutex
	var confirmed []uint64
	w := newWriter(t, rs, spend.Options{
		FlushInterval: 2 * time.Millisecond, ThresholdImps: 5, Flushers: 4, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond,
		InstanceID: "b1", Confirmed: func(s []uint64) { mu.Lock(); confirmed = append(confirmed, s...); mu.Unlock() },
	})
	w.SetCampaigns([]spend.CampaignBudget{{ID: "c", FreqCap: 100, FreqPeriod: time.Hour}})
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	const N = 200
	for i := range N {
		n := spend.Notice{Nonce: spend.Nonce{byte(i), byte(i >> 8), 1}, Kind: spend.NoticeCharge, User: "u", Micros: 1, At: at, Expires: time.Now().Add(time.Hour), Seq: uint64(i + 1)}
		if err := w.AddNotice("c", &n); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.most != 1 {
		t.Errorf("campaign c was in %d Flush calls at once, want 1", rs.most)
	}
	if !reflect.DeepEqual(rs.calls[0], rs.calls[1]) || !reflect.DeepEqual(rs.calls[0], rs.calls[3]) {
		t.Errorf("a failed batch was not retried unchanged:\n%+v\n%+v", rs.calls[0], rs.calls[1])
	}
	for i, call := range rs.calls {
		for _, d := range call {
			if d.Origin != "b1" || d.Seq != call[0].Seq {
				t.Fatalf("call %d: delta origin %q seq %d, want b1 and the call's seq %d", i, d.Origin, d.Seq, call[0].Seq)
			}
		}
		if i == 0 {
			continue
		}
		prev, cur := rs.calls[i-1][0].Seq, call[0].Seq
		if cur < prev || cur == prev && !reflect.DeepEqual(call, rs.calls[i-1]) {
			t.Fatalf("call %d: seq %d after %d (an equal seq only for a retry of the same deltas)", i, cur, prev)
		}
	}
	r, err := rs.inner.Read(context.Background(), []string{"c"}, "2024-05-01")
	if err != nil {
		t.Fatal(err)
	}
	if r[0].TotalImps != N {
		t.Errorf("store has %d impressions, want %d", r[0].TotalImps, N)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(confirmed) != N {
		t.Errorf("%d seqs confirmed, want %d", len(confirmed), N)
	}
}

// TestAddNoticeInvalid: a zero nonce or kind is refused.
func TestAddNoticeInvalid(t *testing.T) {
	w := newWriter(t, memPebble(t), spend.Options{})
	for _, n := range []spend.Notice{{Kind: spend.NoticeCharge, Micros: 1}, {Nonce: spend.Nonce{1}, Micros: 1}} {
		if err := w.AddNotice("c", &n); !errors.Is(err, spend.ErrInvalid) {
			t.Errorf("AddNotice(%+v) = %v, want ErrInvalid", n, err)
		}
	}
}
