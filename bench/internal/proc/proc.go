package proc

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// ErrNotFound is returned when a requested field is absent (for example
// VmHWM of a kernel thread or a zombie).
var ErrNotFound = errors.New("proc: field not found")

// CPU returns the user+system CPU time consumed so far by process pid
// (all its threads), from /proc/PID/stat at USER_HZ resolution (10 ms).
func CPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("proc: %w", err)
	}
	st, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("proc: stat of pid %d: %w", pid, err)
	}
	return time.Duration(st.CPUTime()*float64(time.Second) + 0.5), nil
}

// Status holds the fields of /proc/PID/status the harness uses, in bytes.
type Status struct {
	VmHWMBytes int64 // peak resident set size
	VmRSSBytes int64 // current resident set size
}

// ReadStatus reads /proc/PID/status. A process without memory figures (a
// kernel thread, a zombie) is ErrNotFound.
func ReadStatus(pid int) (Status, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return Status{}, fmt.Errorf("proc: %w", err)
	}
	st, err := p.NewStatus()
	if err != nil {
		return Status{}, fmt.Errorf("proc: status of pid %d: %w", pid, err)
	}
	if st.VmHWM == 0 {
		return Status{}, fmt.Errorf("%w: VmHWM of pid %d", ErrNotFound, pid)
	}
	return Status{VmHWMBytes: int64(st.VmHWM), VmRSSBytes: int64(st.VmRSS)}, nil
}

// SelfCPU returns the user+system CPU time of the calling process from
// getrusage(RUSAGE_SELF), at microsecond resolution. It includes every
// goroutine of the process (for a benchmark, the generator and anything else
// running in-process, such as an in-process test server).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("proc: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
