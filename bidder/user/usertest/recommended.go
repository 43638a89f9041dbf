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

// RecommendStore is what the suite exercises of a store an outside
// recommender writes to (`rtbd users recommend`): every store of rtbd.
type RecommendStore interface {
	SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error
}

// runRecommended checks SetRecommended: it replaces Recommended and keeps
// the rest, validates its input, and races RecordView without either
// write being lost.
func runRecommended(t *testing.T, open func(t *testing.T, lim Limits) Store) {
	recStore := func(t *testing.T, s Store) RecommendStore {
		t.Helper()
		rs, ok := s.(RecommendStore)
		if !ok {
			t.Fatalf("%T has no SetRecommended", s)
		}
		return rs
	}

	t.Run("SetRecommended", func(t *testing.T) {
		s := open(t, Limits{MaxGroups: 3, MaxViewed: 50, TTL: time.Hour})
		rs := recStore(t, s)
		if err := rs.SetRecommended(ctx(t), "empty", nil); err != nil {
			t.Fatal(err)
		}
		if p, found := get(t, s, "empty"); found {
			t.Fatalf("an empty list for a user without a profile wrote one: %+v", p)
		}
		rec := []user.GroupIDs{{Group: 7, IDs: []int64{9, 3, 5}}, {Group: 2, IDs: []int64{1}}}
		if err := rs.SetRecommended(ctx(t), "new", rec); err != nil {
			t.Fatal(err)
		}
		if p, found := get(t, s, "new"); !found || !reflect.DeepEqual(p.Recommended, rec) || len(p.Viewed) != 0 {
			t.Fatalf("a user without a profile: %v %+v, want Recommended %+v only", found, p, rec)
		}

		in := user.Profile{
			Viewed:      []user.GroupIDs{{Group: 7, IDs: []int64{4, 2}}},
			Recommended: []user.GroupIDs{{Group: 7, IDs: []int64{8}}, {Group: 5, IDs: []int64{50}}},
			Segments:    []string{"sport"},
		}
		if err := s.Put(ctx(t), "u", &in); err != nil {
			t.Fatal(err)
		}
		if err := rs.SetRecommended(ctx(t), "u", rec); err != nil {
			t.Fatal(err)
		}
		want := user.Profile{Viewed: in.Viewed, Recommended: rec, Segments: in.Segments}
		if p, _ := get(t, s, "u"); !reflect.DeepEqual(p, want) {
			t.Fatalf("after SetRecommended: %+v, want %+v (Viewed and Segments kept, Recommended replaced)", p, want)
		}
		if err := rs.SetRecommended(ctx(t), "u", nil); err != nil {
			t.Fatal(err)
		}
		want.Recommended = nil
		if p, _ := get(t, s, "u"); len(p.Recommended) != 0 || !reflect.DeepEqual(p.Viewed, want.Viewed) || !reflect.DeepEqual(p.Segments, want.Segments) {
			t.Fatalf("after an empty list: %+v, want %+v", p, want)
		}

		for _, tc := range []struct {
			name string
			uid  string
			rec  []user.GroupIDs
			want error
		}{
			{"group 0", "u", []user.GroupIDs{{Group: 0, IDs: []int64{1}}}, user.ErrInvalidProfile},
			{"product 0", "u", []user.GroupIDs{{Group: 1, IDs: []int64{0}}}, user.ErrInvalidProfile},
			{"product twice", "u", []user.GroupIDs{{Group: 1, IDs: []int64{3, 3}}}, user.ErrInvalidProfile},
			{"group twice", "u", []user.GroupIDs{{Group: 1, IDs: []int64{3}}, {Group: 1, IDs: []int64{4}}}, user.ErrInvalidProfile},
			{"too many groups", "u", []user.GroupIDs{{Group: 1}, {Group: 2}, {Group: 3}, {Group: 4}}, user.ErrInvalidProfile},
			{"too many products", "u", []user.GroupIDs{{Group: 1, IDs: seq(101)}}, user.ErrInvalidProfile},
			{"empty uid", "", rec, user.ErrInvalidUID},
			{"uid with a NUL", "a\x00b", rec, user.ErrInvalidUID},
		} {
			if err := rs.SetRecommended(ctx(t), tc.uid, tc.rec); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		if p, _ := get(t, s, "u"); len(p.Recommended) != 0 || !reflect.DeepEqual(p.Viewed, want.Viewed) {
			t.Fatalf("a rejected list changed the profile: %+v", p)
		}
	})

	// Views race an outside recommender's writes on one user. The
	// recommender's calls run one after the other, so its last list must
	// be the one left, and every view must be in the profile: a store
	// whose read-modify-writes are not atomic with each other loses one
	// or the other (a view written from a profile read before a list, or
	// a list from a profile read before a view).
	t.Run("SetRecommendedRacesViews", func(t *testing.T) {
		const writers, each, lists = 6, 8, 24
		s := open(t, Limits{MaxGroups: 20, MaxViewed: writers * each, TTL: time.Hour})
		rs := recStore(t, s)
		c := ctx(t)
		var wg sync.WaitGroup
		errs := make(chan error, writers*each+lists)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					pid := int64(w*each + i + 1)
					if err := s.RecordView(c, "hot", 1, pid); err != nil {
						errs <- fmt.Errorf("view %d: %w", pid, err)
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lists {
				l := []user.GroupIDs{{Group: 1, IDs: []int64{int64(1000 + i), int64(2000 + i)}}}
				if err := rs.SetRecommended(c, "hot", l); err != nil {
					errs <- fmt.Errorf("list %d: %w", i, err)
				}
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		p := viewsKept(t, s, "hot", writers*each)
		last := []user.GroupIDs{{Group: 1, IDs: []int64{1000 + lists - 1, 2000 + lists - 1}}}
		if !reflect.DeepEqual(p.Recommended, last) {
			t.Errorf("Recommended = %+v, want the last list written %+v", p.Recommended, last)
		}
	})
}

func seq(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	return ids
}
