//go:build linux

package cpuset

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/prometheus/procfs"
)

type mask [16]uint64 // 1024 CPUs

// getMask reads thread tid's CPU set (0: the calling thread).
func getMask(tid int) (mask, error) {
	var m mask
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, uintptr(tid), unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m))); e != 0 {
		return m, fmt.Errorf("cpuset: sched_getaffinity: %w", e)
	}
	return m, nil
}

// setMask sets thread tid's CPU set (0: the calling thread).
func setMask(tid int, m *mask) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m))); e != 0 {
		return e
	}
	return nil
}

// PinSelf moves every thread of this process to cpus (threads started
// later inherit their creator's set) and returns a function that puts the
// previous set back.
func PinSelf(cpus []int) (restore func() error, err error) {
	old, err := getMask(0)
	if err != nil {
		return nil, err
	}
	var m mask
	for _, c := range cpus {
		m[c/64] |= 1 << (c % 64)
	}
	if err := setAll(&m); err != nil {
		return nil, err
	}
	return func() error { return setAll(&old) }, nil
}

func setAll(m *mask) error {
	threads, err := procfs.AllThreads(os.Getpid())
	if err != nil {
		return fmt.Errorf("cpuset: %w", err)
	}
	for _, t := range threads {
		if err := setMask(t.PID, m); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("cpuset: sched_setaffinity(%d): %w", t.PID, err)
		}
	}
	return nil
}

// PinThread moves the calling thread alone to cpu and returns a function
// that puts the thread's previous set back. The caller must hold its
// thread (runtime.LockOSThread) until it has called restore; if restore
// fails, it should end the goroutine without unlocking, so that the
// runtime ends the thread instead of reusing it.
func PinThread(cpu int) (restore func() error, err error) {
	var m mask
	if cpu < 0 || cpu >= len(m)*64 {
		return nil, fmt.Errorf("%w: CPU %d", ErrInvalid, cpu)
	}
	old, err := getMask(0)
	if err != nil {
		return nil, err
	}
	m[cpu/64] |= 1 << (cpu % 64)
	if err := setMask(0, &m); err != nil {
		return nil, fmt.Errorf("cpuset: sched_setaffinity(CPU %d): %w", cpu, err)
	}
	return func() error {
		if err := setMask(0, &old); err != nil {
			return fmt.Errorf("cpuset: sched_setaffinity: %w", err)
		}
		return nil
	}, nil
}

// Allowed returns the CPUs this thread may run on (sched_getaffinity), in
// order: under taskset or a container's cpuset, not every CPU of the
// machine.
func Allowed() ([]int, error) {
	m, err := getMask(0)
	if err != nil {
		return nil, err
	}
	var cpus []int
	for c := range len(m) * 64 {
		if m[c/64]&(1<<(c%64)) != 0 {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
