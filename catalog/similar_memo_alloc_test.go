//go:build !race

package catalog_test

import (
	"testing"

	"github.com/rtbd/rtbd/catalog"
)

// TestMergeMemoHitAllocs: a memo hit copies the ids into the caller's
// buffer and allocates nothing (the bid path asks it for every lookup of a
// user with only viewed products).
func TestMergeMemoHitAllocs(t *testing.T) {
	m := catalog.NewMergeMemo(64)
	viewed := []int64{5, 9, 2, 40, 41, 42, 43, 44, 45, 46, 47, 48}
	ids := make([]int64, catalog.MemoIDs)
	for i := range ids {
		ids[i] = int64(100 + i)
	}
	m.Put(3, viewed, ids, false, 0, 0)
	dst := make([]int64, 0, catalog.MemoIDs)
	allocs := testing.AllocsPerRun(1000, func() {
		got, ok := m.Get(3, viewed, 28, 0, 0, dst[:0])
		if !ok || len(got) != 28 {
			t.Fatalf("Get: %d ids, %v", len(got), ok)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per memo hit, want 0", allocs)
	}
}
