package catalog_test

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// TestMallocArenasBounded: Pebble's C allocations (block cache, blocks
// read) made from many OS threads at once stay in MallocArenas glibc
// arenas, not one per thread (see MallocArenas).
func TestMallocArenasBounded(t *testing.T) {
	if catalog.MallocArenas == 0 || catalog.MallocArenasNow() < 0 {
		t.Skip("no C malloc arenas here (built without cgo, or not glibc)")
	}
	if _, set := os.LookupEnv("MALLOC_ARENA_MAX"); set {
		t.Skip("MALLOC_ARENA_MAX is set: glibc applies that limit instead")
	}
	dir := t.TempDir()
	catalogtest.BuildSynthetic(t, dir, 20_000, 4)
	// A 1 MiB block cache and no hot cache: lookups keep reading blocks,
	// each one a C allocation.
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1, BlockCacheBytes: 1 << 20, HotCacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reqs := catalogtest.Workload{N: 20_000, Groups: 4, IDs: 15}.Requests(512, 1)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // 32 goroutines on 32 threads: one arena each, unbounded
			defer runtime.UnlockOSThread()
			for i := range 50 {
				if _, err := l.GetProductMasters(context.Background(), reqs[(g*50+i)%len(reqs)]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := catalog.MallocArenasNow(); n > catalog.MallocArenas {
		t.Fatalf("%d malloc arenas after 32 threads read through Pebble, want <= %d", n, catalog.MallocArenas)
	}
}
