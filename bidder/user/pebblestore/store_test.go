package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sync/errgroup"

	"github.com/rtbd/rtbd/bidder/internal/metrictest"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/usertest"
)

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(t.TempDir()+"/users", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustGet(t *testing.T, s *Store, uid string) *user.Profile {
	t.Helper()
	var p user.Profile
	found, err := s.Get(context.Background(), uid, &p)
	if err != nil || !found {
		t.Fatalf("Get(%q) = %v, %v", uid, found, err)
	}
	return &p
}

func TestPutGet(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := openTest(t, Options{Registerer: reg})
	ctx := context.Background()
	want := usertest.SampleProfile()
	if err := s.Put(ctx, "u1", want); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, "u1")
	if !usertest.EqualProfiles(got, want) {
		t.Fatalf("Get = %+v, want %+v", *got, *want)
	}
	// A miss resets the profile passed in.
	found, err := s.Get(ctx, "nobody", got)
	if err != nil || found {
		t.Fatalf("Get(nobody) = %v, %v; want false, nil", found, err)
	}
	if len(got.Viewed)+len(got.Recommended)+len(got.Segments) != 0 {
		t.Errorf("miss left content in the profile: %+v", *got)
	}
	// Put replaces.
	repl := &user.Profile{Segments: []string{"x"}}
	if err := s.Put(ctx, "u1", repl); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "u1"); !usertest.EqualProfiles(got, repl) {
		t.Fatalf("after replace: %+v", *got)
	}
	if _, err := s.Get(ctx, "", got); !errors.Is(err, user.ErrInvalidUID) {
		t.Errorf("Get(empty uid) = %v, want user.ErrInvalidUID", err)
	}
	if err := s.Put(ctx, "u2", &user.Profile{Viewed: []user.GroupIDs{{Group: 0}}}); !errors.Is(err, user.ErrInvalidProfile) {
		t.Errorf("Put(invalid) = %v, want user.ErrInvalidProfile", err)
	}
	if err := s.Put(ctx, strings.Repeat("u", user.MaxUIDLen+1), repl); !errors.Is(err, user.ErrInvalidUID) {
		t.Errorf("Put(long uid) = %v, want user.ErrInvalidUID", err)
	}
	for result, want := range map[string]float64{"hit": 2, "miss": 1, "error": 1} {
		n := metrictest.Must(t, reg, "rtbd_user_lookups_total", "result", result)
		if n != want {
			t.Errorf("rtbd_user_lookups_total{result=%q} = %v, want %v", result, n, want)
		}
	}
}

func TestPersistsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.RecordView(ctx, "u", 7, 70); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := mustGet(t, s, "u").ViewedIn(7); !reflect.DeepEqual(got, []int64{70}) {
		t.Fatalf("after reopen ViewedIn(7) = %v", got)
	}
}

func TestRecordViewOrderAndCaps(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := openTest(t, Options{MaxViewed: 3, MaxGroups: 2, Registerer: reg})
	ctx := context.Background()
	type view struct{ g, p int64 }
	steps := []struct {
		v      view
		viewed []user.GroupIDs
	}{
		{view{1, 10}, []user.GroupIDs{{Group: 1, IDs: []int64{10}}}},
		{view{1, 11}, []user.GroupIDs{{Group: 1, IDs: []int64{11, 10}}}},
		{view{1, 10}, []user.GroupIDs{{Group: 1, IDs: []int64{10, 11}}}}, // de-duplicated, moved to front
		{view{2, 20}, []user.GroupIDs{{Group: 2, IDs: []int64{20}}, {Group: 1, IDs: []int64{10, 11}}}},
		{view{1, 12}, []user.GroupIDs{{Group: 1, IDs: []int64{12, 10, 11}}, {Group: 2, IDs: []int64{20}}}}, // group to front
		{view{1, 13}, []user.GroupIDs{{Group: 1, IDs: []int64{13, 12, 10}}, {Group: 2, IDs: []int64{20}}}}, // oldest dropped at MaxViewed
		{view{1, 11}, []user.GroupIDs{{Group: 1, IDs: []int64{11, 13, 12}}, {Group: 2, IDs: []int64{20}}}}, // dropped one comes back in front
		{view{3, 30}, []user.GroupIDs{{Group: 3, IDs: []int64{30}}, {Group: 1, IDs: []int64{11, 13, 12}}}}, // group 2 dropped at MaxGroups
		{view{3, 30}, []user.GroupIDs{{Group: 3, IDs: []int64{30}}, {Group: 1, IDs: []int64{11, 13, 12}}}}, // repeat view: no change
	}
	// Recommended and segments survive views.
	if err := s.Put(ctx, "u", &user.Profile{Recommended: []user.GroupIDs{{Group: 1, IDs: []int64{99}}}, Segments: []string{"seg"}}); err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		if err := s.RecordView(ctx, "u", st.v.g, st.v.p); err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, s, "u")
		if !usertest.EqualProfiles(&user.Profile{Viewed: got.Viewed}, &user.Profile{Viewed: st.viewed}) {
			t.Fatalf("step %d (view %v): Viewed = %v, want %v", i, st.v, got.Viewed, st.viewed)
		}
		if !reflect.DeepEqual(got.RecommendedIn(1), []int64{99}) || !got.HasSegment("seg") {
			t.Fatalf("step %d: recommended or segments lost: %+v", i, *got)
		}
	}
	if got := testutil.ToFloat64(s.views); got != float64(len(steps)) {
		t.Errorf("views counter = %v, want %d", got, len(steps))
	}
	for _, bad := range []struct {
		uid  string
		g, p int64
		want error
	}{
		{"", 1, 1, user.ErrInvalidUID},
		{"a\x00", 1, 1, user.ErrInvalidUID},
		{"u", 0, 1, user.ErrInvalidProfile},
		{"u", 1, -1, user.ErrInvalidProfile},
	} {
		if err := s.RecordView(ctx, bad.uid, bad.g, bad.p); !errors.Is(err, bad.want) {
			t.Errorf("RecordView(%q, %d, %d) = %v, want %v", bad.uid, bad.g, bad.p, err, bad.want)
		}
	}
}

// TestRecordViewConcurrent: 16 goroutines viewing distinct products of one
// user lose none of them (run with -race).
func TestRecordViewConcurrent(t *testing.T) {
	const workers, each = 16, 20
	s := openTest(t, Options{MaxViewed: workers * each, MaxGroups: 4})
	ctx := context.Background()
	var eg errgroup.Group
	for w := 0; w < workers; w++ {
		eg.Go(func() error {
			for i := 0; i < each; i++ {
				// Two groups, interleaved, so groups move around too.
				g := int64(1 + (w+i)%2)
				if err := s.RecordView(ctx, "same-user", g, int64(1+w*each+i)); err != nil {
					return err
				}
				// Readers run beside the writers.
				var p user.Profile
				if _, err := s.Get(ctx, "same-user", &p); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	p := mustGet(t, s, "same-user")
	seen := map[int64]bool{}
	for _, g := range p.Viewed {
		for _, id := range g.IDs {
			if seen[id] {
				t.Fatalf("product %d recorded twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct views stored, want %d (views lost)", len(seen), workers*each)
	}
	for w := 0; w < workers; w++ { // each worker's own views keep their order
		for i := 0; i < each; i++ {
			g := int64(1 + (w+i)%2)
			ids := p.ViewedIn(g)
			pos := -1
			for k, id := range ids {
				if id == int64(1+w*each+i) {
					pos = k
				}
			}
			if pos < 0 {
				t.Fatalf("view %d of worker %d missing from group %d", i, w, g)
			}
		}
		// Within one group, a worker's later view must come first.
		for g := int64(1); g <= 2; g++ {
			prev := -1
			for i := each - 1; i >= 0; i-- {
				if int64(1+(w+i)%2) != g {
					continue
				}
				for k, id := range p.ViewedIn(g) {
					if id == int64(1+w*each+i) {
						if k < prev {
							t.Fatalf("worker %d group %d: view %d at %d before a later view at %d", w, g, i, k, prev)
						}
						prev = k
					}
				}
			}
		}
	}
}

func TestClosed(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	bw, err := s.NewBulkWriter()
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.Put("b", &user.Profile{Segments: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	ctx := context.Background()
	var p user.Profile
	if _, err := s.Get(ctx, "u", &p); !errors.Is(err, user.ErrClosed) {
		t.Errorf("Get = %v", err)
	}
	if err := s.Put(ctx, "u", &p); !errors.Is(err, user.ErrClosed) {
		t.Errorf("Put = %v", err)
	}
	if err := s.RecordView(ctx, "u", 1, 1); !errors.Is(err, user.ErrClosed) {
		t.Errorf("RecordView = %v", err)
	}
	if _, err := s.NewBulkWriter(); !errors.Is(err, user.ErrClosed) {
		t.Errorf("NewBulkWriter = %v", err)
	}
	if err := bw.Close(); !errors.Is(err, user.ErrClosed) {
		t.Errorf("BulkWriter.Close after Store.Close = %v", err)
	}
	if err := bw.Put("c", &p); !errors.Is(err, user.ErrClosed) {
		t.Errorf("BulkWriter.Put after Close = %v", err)
	}
	if user.ErrClosed.Error() != "user: closed" {
		t.Errorf("user.ErrClosed = %q", user.ErrClosed)
	}
}

func TestContextDone(t *testing.T) {
	s := openTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var p user.Profile
	if _, err := s.Get(ctx, "u", &p); !errors.Is(err, context.Canceled) {
		t.Errorf("Get = %v", err)
	}
	if err := s.RecordView(ctx, "u", 1, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("RecordView = %v", err)
	}
	if err := s.Put(ctx, "u", &p); !errors.Is(err, context.Canceled) {
		t.Errorf("Put = %v", err)
	}
}

func TestCorruptValue(t *testing.T) {
	s := openTest(t, Options{})
	if err := s.db.Set([]byte("ubroken"), []byte{1, 9}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := usertest.SampleProfile()
	if found, err := s.Get(ctx, "broken", p); !errors.Is(err, user.ErrCorrupt) || found {
		t.Fatalf("Get(corrupt) = %v, %v; want user.ErrCorrupt", found, err)
	}
	if len(p.Viewed)+len(p.Segments) != 0 {
		t.Errorf("profile not emptied: %+v", *p)
	}
	if err := s.RecordView(ctx, "broken", 1, 1); !errors.Is(err, user.ErrCorrupt) {
		t.Fatalf("RecordView(corrupt) = %v; want user.ErrCorrupt", err)
	}
	if v, c, err := s.db.Get([]byte("ubroken")); err != nil || string(v) != "\x01\x09" {
		t.Fatalf("corrupt value overwritten: %q %v", v, err)
	} else {
		c.Close()
	}
}

func TestBulkWriter(t *testing.T) {
	s := openTest(t, Options{FS: vfs.NewMem()})
	bw, err := s.NewBulkWriter()
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000 // several batches of 1 MiB
	seg := strings.Repeat("s", 100)
	mk := func(i int) *user.Profile {
		return &user.Profile{
			Viewed:      []user.GroupIDs{{Group: int64(1 + i%5), IDs: []int64{int64(i + 1), int64(i + 2)}}},
			Recommended: []user.GroupIDs{{Group: int64(1 + i%5), IDs: []int64{int64(i + 3)}}},
			Segments:    []string{seg + fmt.Sprint(i%3)},
		}
	}
	for i := 0; i < n; i++ {
		if err := bw.Put(fmt.Sprintf("bulk-%d", i), mk(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Put("bad", &user.Profile{Viewed: []user.GroupIDs{{Group: -1}}}); !errors.Is(err, user.ErrInvalidProfile) {
		t.Errorf("bulk Put(invalid) = %v", err)
	}
	if bw.Count() != n {
		t.Errorf("Count = %d", bw.Count())
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if got := mustGet(t, s, fmt.Sprintf("bulk-%d", i)); !usertest.EqualProfiles(got, mk(i)) {
			t.Errorf("bulk-%d = %+v", i, *got)
		}
	}
	if err := bw.Put("late", mk(0)); !errors.Is(err, user.ErrClosed) {
		t.Errorf("Put after Close = %v", err)
	}
}

func TestOpenBadOptions(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{MaxViewed: -1, MaxGroups: -2}); err == nil ||
		!strings.Contains(err.Error(), "max viewed") || !strings.Contains(err.Error(), "max groups") {
		t.Errorf("Open(bad options) = %v", err)
	}
}

func TestSecondStoreSharesMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := openTest(t, Options{Registerer: reg})
	b := openTest(t, Options{Registerer: reg})
	ctx := context.Background()
	var p user.Profile
	a.Get(ctx, "x", &p)
	b.Get(ctx, "x", &p)
	if got := testutil.ToFloat64(a.miss); got != 2 {
		t.Errorf("shared miss counter = %v, want 2", got)
	}
}

// TestOpenNegativeOptions: every negative option is refused, each named
// with its value.
func TestOpenNegativeOptions(t *testing.T) {
	_, err := Open(t.TempDir()+"/users", Options{BlockCacheBytes: -1, MaxViewed: -2, MaxGroups: -3, MaxRecommended: -4, TTL: -time.Second, MatchTTL: -time.Minute})
	if err == nil {
		t.Fatal("Open with negative options succeeded")
	}
	for _, want := range []string{
		"block cache bytes: must be >= 0, got -1", "max viewed: must be >= 0, got -2", "max groups: must be >= 0, got -3",
		"max recommended: must be >= 0, got -4", "ttl: must be >= 0, got -1s", "match ttl: must be >= 0, got -1m0s",
	} {
		if !strings.Contains(err.Error(), "user: options: "+want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
