package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/internal/metrictest"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		floor, live, roots int64
		base, want         int
	}{
		{256 * mib, 16 * mib, 16 * mib, 100, 1500}, // next cycle at 16 + 16*15 = 256 MiB
		{256 * mib, 16 * mib, 24 * mib, 100, 1000}, // stacks and globals count: 16 + 24*10 = 256
		{256 * mib, 64 * mib, 64 * mib, 100, 300},
		{256 * mib, 128 * mib, 128 * mib, 100, 100}, // 128 x 2 = 256: base already reaches the floor
		{256 * mib, 200 * mib, 200 * mib, 100, 100}, // base's goal (400) is above the floor
		{256 * mib, 300 * mib, 300 * mib, 100, 100}, // live above the floor
		{256 * mib, 64 * mib, 64 * mib, 500, 500},   // never below the operator's GOGC
		{256 * mib, 1024, 1024, 100, 6400},          // the runtime's minimum heap, 4 MiB x 64, is the floor
		{1024 * mib, 1024, 1024, 100, MaxPercent},
		{256 * mib, 0, 0, 100, 6400},    // no figures yet: the minimum heap
		{2 * mib, 1024, 1024, 100, 100}, // a floor under the runtime's own minimum changes nothing
	} {
		if got := Percent(c.floor, c.live, c.roots, c.base); got != c.want {
			t.Errorf("Percent(%d MiB, %d, %d, %d) = %d, want %d", c.floor/mib, c.live, c.roots, c.base, got, c.want)
		}
	}
}

var sink []byte

// churn allocates total bytes of garbage and returns the collections run
// meanwhile.
func churn(total int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < total/4096; i++ {
		sink = make([]byte, 4096)
	}
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// The floor's whole point: below it no collection starts. After a
// collection with a small live heap, allocating a quarter of the floor in
// garbage runs no collection at all with the floor, and at least one
// without it (at GOGC 100 the next cycle starts at twice the live heap, at
// least 4 MiB, and the test binary's live heap is far under 8 MiB). Both hold on
// any machine: no count depends on how fast the collector keeps up.
func TestFloorCutsCollections(t *testing.T) {
	const floor = 64 << 20
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(limit)
	runtime.GC()
	if n := churn(floor / 4); n == 0 {
		t.Fatalf("without a floor, %d MiB of garbage ran no collection", floor/4>>20)
	}

	reg := prometheus.NewRegistry()
	f := Start(Options{Bytes: floor, Registerer: reg})
	if f == nil {
		t.Fatal("Start returned nil")
	}
	// The hook adjusts GOGC after each collection, in the finalizer
	// goroutine. Collect with nothing allocating and make the hook's
	// adjustment for that cycle's figures here, so that what follows
	// does not depend on when the finalizer goroutine runs.
	runtime.GC()
	state.mu.Lock()
	adjustLocked()
	state.mu.Unlock()
	if p := f.Percent(); p <= 100 {
		t.Fatalf("GOGC in force %d, want above 100 for a small live heap", p)
	}
	if n := churn(floor / 4); n != 0 {
		t.Errorf("with a %d MiB floor, %d MiB of garbage ran %d collections, want 0 (GOGC %d)", floor>>20, floor/4>>20, n, f.Percent())
	}
	// A floor, not GOGC=off: twice the floor in garbage collects.
	if n := churn(2 * floor); n == 0 {
		t.Errorf("with a %d MiB floor, %d MiB of garbage ran no collection", floor>>20, 2*floor>>20)
	}
	runtime.GC()
	state.mu.Lock()
	adjustLocked()
	state.mu.Unlock()
	if v := metrictest.Must(t, reg, "rtbd_gc_floor_percent"); int(v) != f.Percent() {
		t.Errorf("rtbd_gc_floor_percent %v, want %d", v, f.Percent())
	}
	if v := metrictest.Must(t, reg, "rtbd_gc_floor_live_bytes"); v <= 0 {
		t.Errorf("rtbd_gc_floor_live_bytes %v, want > 0", v)
	}
	f.Stop()
	f.Stop() // twice is fine
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after Stop GOGC is %d, want the base 100", got)
	}
	runtime.GC() // the hook runs once more and must change nothing
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after a collection past Stop GOGC is %d, want 100", got)
	}
}

// GOGC is per process: handles share one floor (the largest), and GOGC
// comes back only when the last one stops.
func TestHandlesShareTheFloor(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	runtime.GC()
	a := Start(Options{Bytes: 32 << 20})
	b := Start(Options{Bytes: 128 << 20})
	if a.Percent() != b.Percent() || a.Percent() <= 100 {
		t.Fatalf("handles see GOGC %d and %d, want one value above 100", a.Percent(), b.Percent())
	}
	high := a.Percent()
	b.Stop() // back to the 32 MiB floor: a lower GOGC, not the base
	if p := a.Percent(); p >= high || p <= 100 {
		t.Errorf("after the larger floor stopped GOGC is %d, want between 100 and %d", p, high)
	}
	if got := debug.SetGCPercent(a.Percent()); got != a.Percent() {
		t.Errorf("runtime GOGC %d, handle says %d", got, a.Percent())
	}
	a.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after the last Stop GOGC is %d, want 100", got)
	}
	// A new start after all stopped works again, with its own hook.
	c := Start(Options{Bytes: 64 << 20})
	defer c.Stop()
	if c.Percent() <= 100 {
		t.Errorf("restarted floor: GOGC %d", c.Percent())
	}
}

// Under a memory limit the floor takes at most half of it.
func TestFloorCappedByMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(64 << 20)
	defer debug.SetMemoryLimit(prev)
	f := Start(Options{Bytes: 256 << 20})
	defer f.Stop()
	if got := f.Bytes(); got != 32<<20 {
		t.Fatalf("floor %d bytes under a 64 MiB limit, want 32 MiB", got)
	}
}

func TestStartOff(t *testing.T) {
	var nilFloor *Floor
	nilFloor.Stop()
	if Start(Options{Bytes: 0}) != nil || Start(Options{Bytes: -1}) != nil {
		t.Fatal("a floor of 0 bytes should be off (nil)")
	}
	prev := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(prev)
	if Start(Options{Bytes: 64 << 20}) != nil {
		t.Fatal("with GOGC=off there is no pacing to adjust: want nil")
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("Start changed GOGC=off to %d", got)
	}
}
