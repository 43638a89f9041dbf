package pebblestore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/usertest"
)

// TestCacheSeesEveryWrite reads users through the value cache (one entry,
// so that users evict each other, and the default size) and checks that
// every write path is visible to the next Get: Put, RecordView,
// SetRecommended, a bulk load,
// a profile over the cached size, and a user first read as absent.
func TestCacheSeesEveryWrite(t *testing.T) {
	for _, entries := range []int{1, 0, -1} {
		t.Run(fmt.Sprintf("entries=%d", entries), func(t *testing.T) {
			s := openTest(t, Options{CacheEntries: entries})
			ctx := context.Background()
			var p user.Profile
			get := func(uid string) (bool, *user.Profile) {
				t.Helper()
				found, err := s.Get(ctx, uid, &p)
				if err != nil {
					t.Fatal(err)
				}
				return found, &p
			}
			// Absent, read twice (the second from the cache), then written.
			for range 2 {
				if found, _ := get("u1"); found {
					t.Fatal("u1 found before any write")
				}
			}
			want := usertest.SampleProfile()
			if err := s.Put(ctx, "u1", want); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if found, got := get("u1"); !found || !usertest.EqualProfiles(got, want) {
					t.Fatalf("after Put: found %v, %+v", found, got)
				}
			}
			// Another user in the same entry, then u1 again.
			if err := s.Put(ctx, "u2", &user.Profile{Segments: []string{"u2"}}); err != nil {
				t.Fatal(err)
			}
			if found, got := get("u2"); !found || len(got.Segments) != 1 || got.Segments[0] != "u2" {
				t.Fatalf("u2: found %v, %+v", found, got)
			}
			if found, got := get("u1"); !found || !usertest.EqualProfiles(got, want) {
				t.Fatalf("u1 after u2: found %v, %+v", found, got)
			}
			// RecordView after a cached read.
			if err := s.RecordView(ctx, "u1", 77, 7001); err != nil {
				t.Fatal(err)
			}
			if _, got := get("u1"); len(got.ViewedIn(77)) != 1 || got.ViewedIn(77)[0] != 7001 {
				t.Fatalf("after RecordView: viewed in 77 = %v", got.ViewedIn(77))
			}
			// SetRecommended after a cached read.
			if err := s.SetRecommended(ctx, "u1", []user.GroupIDs{{Group: 77, IDs: []int64{7002}}}); err != nil {
				t.Fatal(err)
			}
			if _, got := get("u1"); len(got.RecommendedIn(77)) != 1 || got.RecommendedIn(77)[0] != 7002 {
				t.Fatalf("after SetRecommended: recommended in 77 = %v", got.RecommendedIn(77))
			}
			// A bulk load replaces a cached profile.
			w, err := s.NewBulkWriter()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Put("u1", &user.Profile{Segments: []string{"bulk"}}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if _, got := get("u1"); len(got.Segments) != 1 || got.Segments[0] != "bulk" {
				t.Fatalf("after bulk load: %+v", got)
			}
			// A profile too big to keep is read from Pebble every time.
			big := &user.Profile{}
			for g := int64(1); g <= 10; g++ {
				ids := make([]int64, 50)
				for i := range ids {
					ids[i] = g<<32 + int64(i) + 1
				}
				big.Viewed = append(big.Viewed, user.GroupIDs{Group: g, IDs: ids})
			}
			if err := s.Put(ctx, "u3", big); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if found, got := get("u3"); !found || !usertest.EqualProfiles(got, big) {
					t.Fatalf("big profile: found %v", found)
				}
			}
			if err := s.RecordView(ctx, "u3", 1, 1<<40); err != nil {
				t.Fatal(err)
			}
			if _, got := get("u3"); got.ViewedIn(1)[0] != 1<<40 {
				t.Fatalf("big profile after RecordView: %v", got.ViewedIn(1)[:1])
			}
		})
	}
}

// TestCacheConcurrentWrites races Gets with RecordViews of the same users:
// once the writes are done, every Get sees the last of them.
func TestCacheConcurrentWrites(t *testing.T) {
	s := openTest(t, Options{CacheEntries: 4})
	ctx := context.Background()
	uids := []string{"a", "b", "c", "d", "e", "f"}
	var wg sync.WaitGroup
	for _, uid := range uids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := int64(1); i <= 200; i++ {
				if err := s.RecordView(ctx, uid, 5, i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			var p user.Profile
			for range 400 {
				if _, err := s.Get(ctx, uid, &p); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, uid := range uids {
		if v := mustGet(t, s, uid).ViewedIn(5); len(v) == 0 || v[0] != 200 {
			t.Errorf("%s: viewed in 5 starts %v, want 200 (the last view)", uid, v[:min(len(v), 3)])
		}
	}
}
