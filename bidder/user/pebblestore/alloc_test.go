//go:build !race

package pebblestore

import (
	"context"
	"testing"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/usertest"
)

// TestAllocs pins the allocations of the hot paths (the race detector
// allocates, hence the build tag), with the value cache (the default: its
// hits, misses and fills) and without it (every Get reads Pebble).
func TestAllocs(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries int
	}{{"cache", 0}, {"no cache", -1}} {
		t.Run(c.name, func(t *testing.T) { testAllocs(t, Options{CacheEntries: c.entries}) })
	}
}

func testAllocs(t *testing.T, opts Options) {
	s := openTest(t, opts)
	ctx := context.Background()
	want := usertest.SampleProfile()
	if err := s.Put(ctx, "alloc-user", want); err != nil {
		t.Fatal(err)
	}
	var p user.Profile
	check := func(name string, max float64, f func()) {
		t.Helper()
		f() // warm up: grow p, fill pools and the interner
		n := testing.AllocsPerRun(200, f)
		if n > max {
			t.Errorf("%s: %.1f allocs/op, want <= %v", name, n, max)
		}
		t.Logf("%s: %.1f allocs/op", name, n)
	}
	check("Get hit, reused user.Profile", 0, func() {
		if found, err := s.Get(ctx, "alloc-user", &p); !found || err != nil {
			t.Fatal(found, err)
		}
	})
	if !usertest.EqualProfiles(&p, want) {
		t.Fatalf("Get = %+v", p)
	}
	if err := s.PutMatch(ctx, "pbs:x-1", "alloc-user"); err != nil {
		t.Fatal(err)
	}
	uidBuf := make([]byte, 0, user.MaxUIDLen)
	check("GetMatched hit, reused user.Profile and uid buffer", 0, func() {
		uid, found, err := s.GetMatched(ctx, "pbs:x-1", "", uidBuf, &p)
		if string(uid) != "alloc-user" || !found || err != nil {
			t.Fatal(string(uid), found, err)
		}
	})
	check("Get miss", 0, func() {
		if found, err := s.Get(ctx, "nobody", &p); found || err != nil {
			t.Fatal(found, err)
		}
	})
	// Another user with the same segments in another order: interned.
	other := usertest.SampleProfile()
	other.Segments = []string{"日本", "sports"}
	if err := s.Put(ctx, "other-user", other); err != nil {
		t.Fatal(err)
	}
	uids := []string{"alloc-user", "other-user"}
	i := 0
	check("Get hit, alternating users", 0, func() {
		i++
		if found, err := s.Get(ctx, uids[i%2], &p); !found || err != nil {
			t.Fatal(found, err)
		}
	})
	// From a flushed table instead of the memtable, Pebble itself allocates
	// one 16-byte slice per table it opens a point iterator on
	// (sstable.Reader.TryAddBlockPropertyFilterForHideObsoletePoints); the
	// raw-Pebble baseline in BenchmarkGet shows the same.
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("Get hit from a table, reused user.Profile", 1, func() {
		if found, err := s.Get(ctx, "alloc-user", &p); !found || err != nil {
			t.Fatal(found, err)
		}
	})
	n := int64(0)
	check("RecordView", 0, func() {
		n++
		if err := s.RecordView(ctx, "view-user", 1+n%3, 1+n%40); err != nil {
			t.Fatal(err)
		}
	})

}
