//go:build unix

package feed_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: on this shared machine,
// rows per CPU-second is steadier than rows per wall-second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
