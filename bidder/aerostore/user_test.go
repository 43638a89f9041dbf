package aerostore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rtbd/rtbd/bidder/aerostore"
	"github.com/rtbd/rtbd/bidder/aerostore/aerotest"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/usertest"
)

func TestUserStore(t *testing.T) {
	runUserTests(t, func(t *testing.T, o aerostore.Options) (*aerostore.UserStore, *as.Client) {
		_, c := testServer(t)
		o.Namespace = "test"
		return aerostore.NewUserStore(c, o), c
	})
}

func TestUserStoreCluster(t *testing.T) {
	c, ns := cluster(t)
	runUserTests(t, func(t *testing.T, o aerostore.Options) (*aerostore.UserStore, *as.Client) {
		u := uniqueSets(ns)
		o.Namespace, o.UserSet = u.Namespace, u.UserSet
		return aerostore.NewUserStore(c, o), c
	})
}

func runUserTests(t *testing.T, newStore func(t *testing.T, o aerostore.Options) (*aerostore.UserStore, *as.Client)) {
	ctx := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Cleanup(cancel)
		return c
	}
	t.Run("PutGet", func(t *testing.T) {
		s, _ := newStore(t, aerostore.Options{})
		var p user.Profile
		found, err := s.Get(ctx(t), "nobody", &p)
		if err != nil || found {
			t.Fatalf("missing user: %v %v", found, err)
		}
		in := user.Profile{
			Viewed:      []user.GroupIDs{{Group: 7, IDs: []int64{3, 2, 1}}},
			Recommended: []user.GroupIDs{{Group: 7, IDs: []int64{9}}},
			Segments:    []string{"sport"},
		}
		if err := s.Put(ctx(t), "u1", &in); err != nil {
			t.Fatal(err)
		}
		found, err = s.Get(ctx(t), "u1", &p)
		if err != nil || !found || !reflect.DeepEqual(p, in) {
			t.Fatalf("Get = %v %v %+v, want %+v", found, err, p, in)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		s, _ := newStore(t, aerostore.Options{})
		var p user.Profile
		if _, err := s.Get(ctx(t), "", &p); !errors.Is(err, user.ErrInvalidUID) {
			t.Errorf("Get empty uid: %v", err)
		}
		if err := s.RecordView(ctx(t), "u", 0, 1); !errors.Is(err, user.ErrInvalidProfile) {
			t.Errorf("RecordView group 0: %v", err)
		}
		if err := s.RecordView(ctx(t), "bad\x00uid", 1, 1); !errors.Is(err, user.ErrInvalidUID) {
			t.Errorf("RecordView bad uid: %v", err)
		}
	})
	t.Run("Corrupt", func(t *testing.T) {
		s, c := newStore(t, aerostore.Options{})
		key, err := as.NewKey(s.Options().Namespace, s.Options().UserSet, "broken")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PutBins(nil, key, as.NewBin("p", []byte{0xff, 0x01})); err != nil {
			t.Fatal(err)
		}
		var p user.Profile
		if _, err := s.Get(ctx(t), "broken", &p); !errors.Is(err, user.ErrCorrupt) {
			t.Errorf("Get of a corrupt profile: %v, want ErrCorrupt", err)
		}
		if err := s.RecordView(ctx(t), "broken", 1, 1); !errors.Is(err, user.ErrCorrupt) {
			t.Errorf("RecordView of a corrupt profile: %v, want ErrCorrupt", err)
		}
	})
	// SameAsPebble: the same views give the same profile as the embedded
	// user.Store, limits included.
	t.Run("SameAsPebble", func(t *testing.T) {
		s, _ := newStore(t, aerostore.Options{MaxViewed: 3, MaxGroups: 2})
		ref, err := user.Open("users", user.Options{FS: vfs.NewMem(), MaxViewed: 3, MaxGroups: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		views := [][2]int64{{1, 10}, {1, 11}, {2, 20}, {1, 10}, {3, 30}, {1, 12}, {1, 13}, {2, 21}, {1, 11}}
		for i, v := range views {
			if err := s.RecordView(ctx(t), "u", v[0], v[1]); err != nil {
				t.Fatal(err)
			}
			if err := ref.RecordView(ctx(t), "u", v[0], v[1]); err != nil {
				t.Fatal(err)
			}
			var a, b user.Profile
			if _, err := s.Get(ctx(t), "u", &a); err != nil {
				t.Fatal(err)
			}
			if _, err := ref.Get(ctx(t), "u", &b); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a.Viewed) != fmt.Sprint(b.Viewed) {
				t.Fatalf("after view %d: aerospike %v, pebble %v", i, a.Viewed, b.Viewed)
			}
		}
	})
	t.Run("ConcurrentViews", func(t *testing.T) {
		s, _ := newStore(t, aerostore.Options{MaxViewed: 1000})
		const G, N = 8, 20
		var wg sync.WaitGroup
		for g := range G {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range N {
					if err := s.RecordView(ctx(t), "hot", 5, int64(g*N+i+1)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		var p user.Profile
		if _, err := s.Get(ctx(t), "hot", &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Viewed) != 1 || len(p.Viewed[0].IDs) != G*N {
			t.Fatalf("concurrent views lost: %d ids, want %d", len(p.ViewedIn(5)), G*N)
		}
	})
}

func TestUserConformance(t *testing.T) {
	usertest.Run(t, func(t *testing.T, lim usertest.Limits) usertest.Store {
		_, c := testServer(t)
		return aerostore.NewUserStore(c, aerostore.Options{Namespace: aerotest.DefaultNamespace,
			MaxGroups: lim.MaxGroups, MaxViewed: lim.MaxViewed, UserTTL: lim.TTL}).WithMatchTTL(lim.MatchTTL)
	})
}

func TestUserConformanceCluster(t *testing.T) {
	c, ns := cluster(t)
	usertest.Run(t, func(t *testing.T, lim usertest.Limits) usertest.Store {
		o := uniqueSets(ns)
		o.MaxGroups, o.MaxViewed, o.UserTTL = lim.MaxGroups, lim.MaxViewed, lim.TTL
		return aerostore.NewUserStore(c, o).WithMatchTTL(lim.MatchTTL)
	})
}
