package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// CPUTimes is one per-CPU line of /proc/stat ("cpu0 ..."): the time that
// CPU spent in each state since boot, in ClockTicks. Steal is the time the
// hypervisor ran something else while this virtual CPU wanted to run (0 on
// bare metal and on kernels without steal accounting); Guest and GuestNice
// are already included in User and Nice, so they are left out here.
type CPUTimes struct {
	CPU                                                   int
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Total is the sum of every state, steal included: the wall time the CPU
// existed, in ClockTicks.
func (c CPUTimes) Total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// Busy is the time the CPU ran something of this machine's (user, nice,
// system, irq, softirq).
func (c CPUTimes) Busy() uint64 {
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ
}

// Sub returns c - o per field (o an earlier reading of the same CPU). A
// field that went backwards (a CPU hot-plugged in between) counts 0.
func (c CPUTimes) Sub(o CPUTimes) CPUTimes {
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return CPUTimes{CPU: c.CPU, User: d(c.User, o.User), Nice: d(c.Nice, o.Nice), System: d(c.System, o.System),
		Idle: d(c.Idle, o.Idle), IOWait: d(c.IOWait, o.IOWait), IRQ: d(c.IRQ, o.IRQ),
		SoftIRQ: d(c.SoftIRQ, o.SoftIRQ), Steal: d(c.Steal, o.Steal)}
}

// ParseHostStat parses the per-CPU lines of /proc/stat ("cpuN user nice
// system idle iowait irq softirq steal ..."), in file order. The aggregate
// "cpu" line and the other lines (intr, ctxt, ...) are skipped. Kernels
// before 2.6.11 print fewer columns: the missing ones are 0. A cpuN line
// with fewer than 4 values or a non-numeric one is an error wrapping
// ErrMalformed.
func ParseHostStat(r io.Reader) ([]CPUTimes, error) {
	var out []CPUTimes
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 || !bytes.HasPrefix(f[0], []byte("cpu")) || len(f[0]) == 3 {
			continue
		}
		n, err := strconv.Atoi(string(f[0][3:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: /proc/stat line %d: CPU name %q", ErrMalformed, line, f[0])
		}
		if len(f) < 5 {
			return nil, fmt.Errorf("%w: /proc/stat line %d: %d values, want at least 4", ErrMalformed, line, len(f)-1)
		}
		var v [8]uint64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			if v[i], err = strconv.ParseUint(string(f[i+1]), 10, 64); err != nil {
				return nil, fmt.Errorf("%w: /proc/stat line %d, value %d: %v", ErrMalformed, line, i+1, err)
			}
		}
		out = append(out, CPUTimes{CPU: n, User: v[0], Nice: v[1], System: v[2], Idle: v[3],
			IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("proc: /proc/stat: %w", err)
	}
	return out, nil
}

// ReadHostCPU reads the per-CPU times of the host (its /proc/stat: the
// whole machine, not a container's share).
func ReadHostCPU() ([]CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	return ParseHostStat(bytes.NewReader(b))
}
