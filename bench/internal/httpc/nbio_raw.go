//go:build linux && !race

package httpc

import (
	"syscall"
	"unsafe"
)

// nbWrite and nbRead are write(2) and read(2) on a connection's socket,
// which Go's net package always sets non-blocking: either call returns at
// once (EAGAIN when it would wait), so they are made as raw system calls,
// without the runtime's entersyscall/exitsyscall.
//
// That bookkeeping is not only its own cost. While a goroutine is "in a
// system call", the runtime's monitor thread (sysmon) may hand its P to
// another thread, and every such hand-off resets sysmon to waking every
// 20 us for the next millisecond or more. On loopback a write also does
// the receiving side's TCP work, so it is long enough to be caught: at
// 20,000 requests/s sysmon's wake-ups were about a fifth of the
// generator's CPU (perf), and 1% with these calls. BenchmarkGeneratorCost:
// 0.43-0.52 cores before, 0.29-0.39 after (six runs each, alternated).
func nbWrite(fd uintptr, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func nbRead(fd uintptr, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
