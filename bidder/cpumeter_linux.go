package bidder

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/rtbd/rtbd/bidder/hostcpu"
)

// newCPUMeter returns a meter of the CPUs in the process's affinity mask,
// read from /proc/stat, or nil when that cannot be read.
func newCPUMeter() *cpuMeter {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	want := map[int]bool{}
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			want[i] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	m := &cpuMeter{unusable: max(len(want)-runtime.GOMAXPROCS(0), 0), tick: hostcpu.Tick}
	m.read = func() (uint64, uint64, uint64, error) {
		ts, err := hostcpu.Read()
		if err != nil {
			return 0, 0, 0, err
		}
		idle, steal, total := sumTimes(ts, want)
		return idle, steal, total, nil
	}
	if _, _, total, err := m.read(); err != nil || total == 0 {
		return nil
	}
	return m
}
