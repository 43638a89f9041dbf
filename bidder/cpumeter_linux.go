package bidder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
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
	buf := make([]byte, 64<<10)
	m := &cpuMeter{unusable: max(len(want)-runtime.GOMAXPROCS(0), 0), tick: time.Second / 100} // USER_HZ
	m.read = func() (uint64, uint64, uint64, error) {
		f, err := os.Open("/proc/stat")
		if err != nil {
			return 0, 0, 0, err
		}
		n, err := io.ReadFull(f, buf)
		f.Close()
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return 0, 0, 0, err
		}
		// The cpu lines come first: a file longer than buf loses only
		// its tail (the interrupt counts of a large machine).
		return cpuLineTimes(buf[:n], want)
	}
	if _, _, _, err := m.read(); err != nil {
		return nil
	}
	return m
}

// cpuLineTimes sums, over the /proc/stat lines "cpuN user nice system idle
// iowait irq softirq steal ..." of the CPUs in want, idle+iowait, steal
// and all eight. A kernel that prints fewer columns has no steal (0).
func cpuLineTimes(b []byte, want map[int]bool) (idle, steal, total uint64, err error) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) < 4 || !bytes.HasPrefix(line, []byte("cpu")) || line[3] == ' ' {
			continue
		}
		f := bytes.Fields(line)
		n, err := strconv.Atoi(string(f[0][3:]))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("/proc/stat: CPU name %q", f[0])
		}
		if !want[n] {
			continue
		}
		var v [8]uint64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			if v[i], err = strconv.ParseUint(string(f[i+1]), 10, 64); err != nil {
				return 0, 0, 0, fmt.Errorf("/proc/stat: cpu%d value %d: %v", n, i+1, err)
			}
		}
		idle += v[3] + v[4]
		steal += v[7]
		for _, x := range v {
			total += x
		}
	}
	return idle, steal, total, nil
}
