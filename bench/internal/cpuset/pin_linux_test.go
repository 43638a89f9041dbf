package cpuset

import (
	"errors"
	"runtime"
	"slices"
	"testing"
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
