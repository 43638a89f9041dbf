package cpuset

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/prometheus/procfs"
)

// TestPinThread: the pinned thread sees only its CPU, restore gives the
// set back, and a CPU out of range is refused.
func TestPinThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := Allowed()
	// runtime.NumCPU counts these CPUs; their numbers may be higher
	// (taskset -c 1: NumCPU 1, Allowed [1]).
	if err != nil || len(before) != runtime.NumCPU() {
		t.Fatalf("Allowed() = %v, %v; NumCPU %d", before, err, runtime.NumCPU())
	}
	cpu := before[len(before)-1]
	restore, err := PinThread(cpu)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Allowed(); !slices.Equal(got, []int{cpu}) {
		t.Errorf("pinned to %d, Allowed() = %v", cpu, got)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if got, _ := Allowed(); !slices.Equal(got, before) {
		t.Errorf("after restore Allowed() = %v, want %v", got, before)
	}
	for _, c := range []int{-1, 1 << 20} {
		if _, err := PinThread(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("PinThread(%d) err = %v, want ErrInvalid", c, err)
		}
	}
}

// TestPinSelf: every thread of the process is moved to the set, and restore
// gives each its set back.
func TestPinSelf(t *testing.T) {
	before := threadMasks(t)
	cpus, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpus[len(cpus)-1]
	restore, err := PinSelf([]int{cpu})
	if err != nil {
		t.Fatal(err)
	}
	pinned := threadMasks(t)
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	var want mask
	want[cpu/64] = 1 << (cpu % 64)
	for tid, m := range pinned {
		if m != want {
			t.Errorf("thread %d pinned to CPU %d: mask %x", tid, cpu, m)
		}
	}
	for tid, m := range threadMasks(t) {
		if old, ok := before[tid]; ok && m != old {
			t.Errorf("thread %d after restore: mask %x, before %x", tid, m, old)
		}
	}
}

// threadMasks reads the CPU set of each thread of the process, by id.
func threadMasks(t *testing.T) map[int]mask {
	threads, err := procfs.AllThreads(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	masks := map[int]mask{}
	for _, th := range threads {
		if m, err := getMask(th.PID); err == nil { // else the thread ended
			masks[th.PID] = m
		}
	}
	if len(masks) == 0 {
		t.Fatal("no thread listed")
	}
	return masks
}
