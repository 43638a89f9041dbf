// Package gcfloor keeps the Go garbage collector from running while the
// heap is below a floor: the "GC floor" a latency-bound server sets so
// that a small live heap does not mean a collection every few megabytes.
//
// Go's pacer starts a cycle when the heap reaches live x (1 + GOGC/100).
// A bidder's live heap is small (campaigns, caches: tens of MiB) while it
// allocates a few KiB per bid, tens of MiB a second, so with the default
// GOGC it collects many times a second. Each cycle takes a whole P for its
// mark worker (a quarter of the CPU at GOMAXPROCS 4, half at 2) for a few
// milliseconds, and requests arriving then queue: that, not the bid's own
// work, is what sets the bidder's p99 at moderate load.
//
// A Floor raises GOGC after each collection so that the next one starts at
// max(floor, live x (1 + base/100)), base being the GOGC the process
// started with, and puts it back to base once live x (1 + base/100) is
// above the floor. The cost is memory: the heap may hold up to the floor in
// garbage, which is the point. GOMEMLIMIT still bounds it: the runtime
// collects at the memory limit whatever GOGC says, and a floor above half
// the limit is capped there. This is Uber's "GOGC tuner" idea, driven by
// the runtime's own figures for the last cycle.
package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Limits of the GOGC the floor sets.
const (
	// MaxPercent caps GOGC, so that a nearly empty heap (a process just
	// started) does not get an absurd value.
	MaxPercent = 10_000
)

// The runtime's own figures for the last cycle (Go's pacer: the next
// cycle starts at live + (live + stacks + globals) x GOGC/100).
var metricNames = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// Options configure a Floor.
type Options struct {
	// Bytes is the heap size below which no collection starts. Required
	// (> 0).
	Bytes int64
	// Logger receives the start and stop (never per collection). Nil: none.
	Logger *zap.Logger
	// Registerer receives rtbd_gc_floor_percent (the GOGC in force) and
	// rtbd_gc_floor_live_bytes (the live heap after the last collection).
	// Nil: none.
	Registerer prometheus.Registerer
}

// Floor is a handle on the process's GC floor; Stop releases it.
//
// GOGC is one setting per process, so there is one floor per process:
// handles share it (several bidders in one test binary, say), the floor
// is the largest asked for, and GOGC goes back to its value at the first
// Start when the last handle stops.
type Floor struct {
	stopped atomic.Bool
	bytes   int64
	log     *zap.Logger
}

// state is the process's floor.
var state struct {
	mu      sync.Mutex
	handles map[*Floor]struct{}
	bytes   int64 // the largest floor of the live handles
	base    int   // GOGC before the first handle
	gen     int   // bumped on every start from zero: stale hooks stop
	sample  []rtmetrics.Sample
	percent atomic.Int64 // GOGC in force
	live    atomic.Int64 // bytes live after the last collection
}

// Start starts (or joins) the process's floor with o.Bytes. It returns nil
// (and changes nothing) when o.Bytes <= 0 or when the collector is off
// (GOGC=off): there is no pacing to adjust then.
func Start(o Options) *Floor {
	if o.Bytes <= 0 {
		return nil
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	first := len(state.handles) == 0
	if first {
		base := debug.SetGCPercent(100)
		debug.SetGCPercent(base)
		if base < 0 {
			return nil
		}
		state.base, state.bytes, state.handles = base, 0, map[*Floor]struct{}{}
		state.percent.Store(int64(base))
		state.gen++
		if state.sample == nil {
			state.sample = make([]rtmetrics.Sample, len(metricNames))
			for i, n := range metricNames {
				state.sample[i].Name = n
			}
		}
	}
	bytes := o.Bytes
	// With a memory limit (GOMEMLIMIT), the floor takes at most half of it:
	// a floor near the limit would have the runtime collect at the limit,
	// with its GC CPU cap, instead of at the floor.
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 && bytes > limit/2 {
		log.Warn("gc floor capped at half the memory limit", zap.Int64("floor_bytes", bytes),
			zap.Int64("memory_limit_bytes", limit), zap.Int64("capped_bytes", limit/2))
		bytes = limit / 2
	}
	f := &Floor{bytes: bytes, log: log}
	state.handles[f] = struct{}{}
	state.bytes = max(state.bytes, bytes)
	if o.Registerer != nil {
		o.Registerer.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_gc_floor_percent",
				Help: "GOGC in force, as set by the GC floor after the last collection (bidder.gc_floor_mb)."},
				func() float64 { return float64(state.percent.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_gc_floor_live_bytes",
				Help: "Live heap after the last garbage collection, as the GC floor saw it."},
				func() float64 { return float64(state.live.Load()) }),
		)
	}
	adjustLocked()
	if first {
		arm(state.gen)
	}
	log.Info("gc floor on", zap.Int64("floor_bytes", state.bytes), zap.Int("base_gogc", state.base),
		zap.Int64("gogc", state.percent.Load()))
	return f
}

// sentinel is an object whose finalizer runs after the collection that
// found it unreachable, i.e. once per GC cycle: the hook that re-adjusts
// GOGC. It is large enough not to be a tiny allocation (those share a
// block and may never be finalized).
type sentinel struct {
	gen int
	_   [16]byte
}

func arm(gen int) {
	runtime.SetFinalizer(&sentinel{gen: gen}, func(s *sentinel) {
		state.mu.Lock()
		defer state.mu.Unlock()
		if len(state.handles) == 0 || s.gen != state.gen {
			return // stopped (and maybe started again, with its own hook)
		}
		adjustLocked()
		arm(s.gen)
	})
}

// adjustLocked sets GOGC so that the next cycle starts at the floor, or
// at base's goal when that is higher. Called with state.mu held.
func adjustLocked() {
	rtmetrics.Read(state.sample)
	var v [3]int64
	for i, s := range state.sample {
		if s.Value.Kind() == rtmetrics.KindUint64 {
			v[i] = int64(s.Value.Uint64())
		}
	}
	live := v[0]
	state.live.Store(live)
	p := Percent(state.bytes, live, live+v[1]+v[2], state.base)
	// Small changes are not worth a pacer update.
	if cur := state.percent.Load(); p != int(cur) && (p == state.base || abs(int64(p)-cur)*20 > cur) {
		debug.SetGCPercent(p)
		state.percent.Store(int64(p))
	}
}

// Percent is the GOGC that starts the next collection when the heap
// reaches floor bytes, given live bytes of live heap and roots bytes of GC
// roots (live heap + scanned stacks + globals: what GOGC is a percentage
// of), never below base nor above MaxPercent, and never so high that the
// runtime's minimum heap (which grows with GOGC) passes the floor.
func Percent(floor, live, roots int64, base int) int {
	if floor <= live {
		return base
	}
	p := int64(MaxPercent) // no figures yet
	if roots > 0 {
		p = (floor - live) * 100 / roots
	}
	// The runtime never aims below its minimum heap, 4 MiB x GOGC/100: a
	// larger GOGC would put the next cycle past the floor.
	p = min(p, floor*100/heapMinimum)
	return int(min(max(p, int64(base)), MaxPercent))
}

// heapMinimum is the Go runtime's minimum heap goal at GOGC=100.
const heapMinimum = 4 << 20

// Percent returns the GOGC in force.
func (f *Floor) Percent() int { return int(state.percent.Load()) }

// Bytes returns the process's floor (the largest of the live handles').
func (f *Floor) Bytes() int64 {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.bytes
}

// Stop releases the handle; the last one puts GOGC back to its value at
// the first Start. Safe on nil and more than once.
func (f *Floor) Stop() {
	if f == nil || f.stopped.Swap(true) {
		return
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	delete(state.handles, f)
	if len(state.handles) > 0 {
		state.bytes = 0
		for h := range state.handles {
			state.bytes = max(state.bytes, h.bytes)
		}
		adjustLocked()
		return
	}
	debug.SetGCPercent(state.base)
	state.percent.Store(int64(state.base))
	f.log.Info("gc floor off", zap.Int("gogc", state.base))
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
