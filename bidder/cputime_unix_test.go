//go:build unix

package bidder

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) this process has used: on a
// shared, noisy machine, CPU per request is steadier than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
