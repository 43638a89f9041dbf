// Package usertest is the conformance suite every user profile store
// passes: the embedded Pebble store (bidder/user/pebblestore), Redis
// (bidder/user/redisstore) and Aerospike (bidder/user/aerostore).
package usertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/user"
)

// Store is what the suite exercises: the bidder's reads and /event writes,
// and Put for loading profiles.
type Store interface {
	Get(ctx context.Context, uid string, p *user.Profile) (found bool, err error)
	RecordView(ctx context.Context, uid string, group, pid int64) error
	Put(ctx context.Context, uid string, p *user.Profile) error
}

// Limits are the bounds a store under test is opened with.
type Limits struct {
	// MaxGroups and MaxViewed bound RecordView (oldest dropped).
	MaxGroups, MaxViewed int
	// TTL is the lifetime of a profile after its last write; 0: the
	// suite's default of one hour.
	TTL time.Duration
	// MatchTTL is the lifetime of a match entry after its last write (a
	// MatchStore's); 0: no expiry.
	MatchTTL time.Duration
}

// MatchStore is what the suite exercises of a store that keeps the match
// table (/match): every store of rtbd does.
type MatchStore interface {
	PutMatch(ctx context.Context, key, uid string) error
	GetMatched(ctx context.Context, key, fallback string, dst []byte, p *user.Profile) (uid []byte, found bool, err error)
}

// shortTTL is the TTL of the expiry cases: the shortest every store
// supports (Aerospike counts whole seconds).
const shortTTL = time.Second

// Run runs the suite; open returns a new, empty store with lim (each call
// its own keyspace).
func Run(t *testing.T, open func(t *testing.T, lim Limits) Store) {
	view := func(t *testing.T, s Store, uid string, group, pid int64) {
		t.Helper()
		if err := s.RecordView(ctx(t), uid, group, pid); err != nil {
			t.Fatalf("RecordView(%q, %d, %d): %v", uid, group, pid, err)
		}
	}

	t.Run("RoundTrip", func(t *testing.T) {
		s := open(t, Limits{MaxGroups: 20, MaxViewed: 50, TTL: time.Hour})
		if _, found := get(t, s, "nobody"); found {
			t.Fatal("a profile for a uid never written")
		}
		in := user.Profile{
			Viewed:      []user.GroupIDs{{Group: 7, IDs: []int64{3, 2, 1}}},
			Recommended: []user.GroupIDs{{Group: 7, IDs: []int64{9}}},
			Segments:    []string{"sport"},
		}
		if err := s.Put(ctx(t), "u1", &in); err != nil {
			t.Fatal(err)
		}
		if p, found := get(t, s, "u1"); !found || !reflect.DeepEqual(p, in) {
			t.Fatalf("after Put: %v %+v, want %+v", found, p, in)
		}
		view(t, s, "u2", 5, 10)
		view(t, s, "u2", 6, 20)
		view(t, s, "u2", 5, 11)
		want := []user.GroupIDs{{Group: 5, IDs: []int64{11, 10}}, {Group: 6, IDs: []int64{20}}}
		if p, found := get(t, s, "u2"); !found || !reflect.DeepEqual(p.Viewed, want) {
			t.Fatalf("after views: %v %+v, want %+v", found, p.Viewed, want)
		}
		if err := s.RecordView(ctx(t), "u2", 0, 1); !errors.Is(err, user.ErrInvalidProfile) {
			t.Fatalf("view in group 0: %v, want ErrInvalidProfile", err)
		}
		if err := s.RecordView(ctx(t), "bad\x00uid", 1, 1); !errors.Is(err, user.ErrInvalidUID) {
			t.Fatalf("view of a uid with a NUL: %v, want ErrInvalidUID", err)
		}
		var p user.Profile
		if _, err := s.Get(ctx(t), "", &p); !errors.Is(err, user.ErrInvalidUID) {
			t.Fatalf("Get of an empty uid: %v, want ErrInvalidUID", err)
		}
	})

	t.Run("Caps", func(t *testing.T) {
		s := open(t, Limits{MaxGroups: 2, MaxViewed: 3, TTL: time.Hour})
		for pid := int64(1); pid <= 5; pid++ {
			view(t, s, "u", 1, pid)
		}
		view(t, s, "u", 2, 100)
		view(t, s, "u", 3, 200) // group 1 is now the oldest: dropped
		want := []user.GroupIDs{{Group: 3, IDs: []int64{200}}, {Group: 2, IDs: []int64{100}}}
		if p, _ := get(t, s, "u"); !reflect.DeepEqual(p.Viewed, want) {
			t.Fatalf("groups: %+v, want %+v", p.Viewed, want)
		}
		for pid := int64(1); pid <= 5; pid++ {
			view(t, s, "v", 1, pid)
		}
		if p, _ := get(t, s, "v"); !reflect.DeepEqual(p.ViewedIn(1), []int64{5, 4, 3}) {
			t.Fatalf("products: %v, want the 3 newest [5 4 3]", p.ViewedIn(1))
		}
		big := user.Profile{Viewed: []user.GroupIDs{{Group: 1, IDs: []int64{1, 2, 3, 4}}}}
		if err := s.Put(ctx(t), "w", &big); !errors.Is(err, user.ErrInvalidProfile) {
			t.Fatalf("Put over the cap: %v, want ErrInvalidProfile", err)
		}
	})

	// Expiry: a profile rewritten more often than its TTL lives on; read
	// (not written) that often, it expires all the same.
	t.Run("TTL", func(t *testing.T) {
		s := open(t, Limits{MaxGroups: 20, MaxViewed: 50, TTL: shortTTL})
		for i := range 8 {
			view(t, s, "u", 1, int64(i+1))
			time.Sleep(shortTTL / 4)
		}
		view(t, s, "u", 1, 100)
		if _, found := get(t, s, "u"); !found {
			t.Fatal("a profile written every TTL/4 expired: writes do not renew it")
		}
		deadline := time.Now().Add(2 * shortTTL)
		for time.Now().Before(deadline) {
			get(t, s, "u") // a read must not renew
			time.Sleep(shortTTL / 5)
		}
		time.Sleep(shortTTL / 2)
		if p, found := get(t, s, "u"); found {
			t.Fatalf("read every TTL/5 for 2.5 TTLs after its last write, the profile is still there: %+v", p)
		}
		view(t, s, "u", 2, 1) // an expired profile starts afresh
		if p, _ := get(t, s, "u"); !reflect.DeepEqual(p.Viewed, []user.GroupIDs{{Group: 2, IDs: []int64{1}}}) {
			t.Fatalf("after expiry and a new view: %+v", p.Viewed)
		}
	})

	// Match table: an exchange's id resolves to rtbd's uid and its profile
	// in one call; entries are replaced and expire. Keys are unique per run
	// (a shared cluster's match set outlives the test).
	t.Run("Match", func(t *testing.T) {
		s := open(t, Limits{MaxGroups: 20, MaxViewed: 50, TTL: time.Hour, MatchTTL: shortTTL})
		ms, ok := s.(MatchStore)
		if !ok {
			t.Fatalf("%T keeps no match table (PutMatch, GetMatched)", s)
		}
		run := fmt.Sprintf("%x", time.Now().UnixNano())
		key := string(user.MatchKey(nil, "pbs", []byte("x-"+run)))
		var p user.Profile
		uid, found, err := ms.GetMatched(ctx(t), key, "", nil, &p)
		if err != nil || uid != nil || found {
			t.Fatalf("unknown key: %q %v %v", uid, found, err)
		}
		view(t, s, "fb-"+run, 3, 30)
		uid, found, err = ms.GetMatched(ctx(t), key, "fb-"+run, nil, &p)
		if err != nil || string(uid) != "fb-"+run || !found || !reflect.DeepEqual(p.ViewedIn(3), []int64{30}) {
			t.Fatalf("unknown key with a fallback: %q %v %v %+v, want the fallback's profile", uid, found, err, p.Viewed)
		}
		if err := ms.PutMatch(ctx(t), key, "r1-"+run); err != nil {
			t.Fatal(err)
		}
		uid, found, err = ms.GetMatched(ctx(t), key, "fb-"+run, make([]byte, 0, 64), &p)
		if err != nil || string(uid) != "r1-"+run || found {
			t.Fatalf("matched, no profile: %q %v %v, want r1-%s without a profile", uid, found, err, run)
		}
		view(t, s, "r2-"+run, 4, 40)
		if err := ms.PutMatch(ctx(t), key, "r2-"+run); err != nil {
			t.Fatal(err)
		}
		uid, found, err = ms.GetMatched(ctx(t), key, "", nil, &p)
		if err != nil || string(uid) != "r2-"+run || !found || !reflect.DeepEqual(p.ViewedIn(4), []int64{40}) {
			t.Fatalf("after a new match: %q %v %v %+v", uid, found, err, p.Viewed)
		}
		if err := ms.PutMatch(ctx(t), key, ""); !errors.Is(err, user.ErrInvalidUID) {
			t.Fatalf("PutMatch of an empty uid: %v, want ErrInvalidUID", err)
		}
		if _, _, err := ms.GetMatched(ctx(t), "", "", nil, &p); !errors.Is(err, user.ErrInvalidUID) {
			t.Fatalf("GetMatched of an empty key: %v, want ErrInvalidUID", err)
		}
		time.Sleep(shortTTL + shortTTL*3/2)
		if uid, _, err := ms.GetMatched(ctx(t), key, "", nil, &p); err != nil || uid != nil {
			t.Fatalf("an entry 2.5 TTLs after its write: %q %v, want none", uid, err)
		}
	})

	runRecommended(t, open)

	t.Run("ConcurrentWriters", func(t *testing.T) {
		const writers, each = 8, 6
		s := open(t, Limits{MaxGroups: 20, MaxViewed: writers * each, TTL: time.Hour})
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					pid := int64(w*each + i + 1)
					if err := s.RecordView(ctx(t), "hot", 1, pid); err != nil {
						errs <- fmt.Errorf("view %d: %w", pid, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		viewsKept(t, s, "hot", writers*each)
	})
}

// viewsKept fails t for each of products 1..n of group 1 missing from
// uid's views (writers recorded them concurrently), and returns the
// profile.
func viewsKept(t *testing.T, s Store, uid string, n int) user.Profile {
	t.Helper()
	p, _ := get(t, s, uid)
	got := map[int64]bool{}
	for _, id := range p.ViewedIn(1) {
		got[id] = true
	}
	for pid := int64(1); pid <= int64(n); pid++ {
		if !got[pid] {
			t.Errorf("view of product %d lost", pid)
		}
	}
	return p
}

// ctx is a call's context, bounded so that a stuck store fails the test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// get reads uid's profile; an error fails t.
func get(t *testing.T, s Store, uid string) (user.Profile, bool) {
	t.Helper()
	var p user.Profile
	found, err := s.Get(ctx(t), uid, &p)
	if err != nil {
		t.Fatalf("Get(%q): %v", uid, err)
	}
	return p, found
}
