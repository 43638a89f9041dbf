package proc

import (
	"fmt"
	"sort"

	"github.com/prometheus/procfs"
)

// CPUTimes is one per-CPU line of the host's /proc/stat: the time that CPU
// spent in each state since boot, in seconds. Steal is the time the
// hypervisor ran something else while this virtual CPU wanted to run (0
// on bare metal); guest time is already in User and Nice, so it is left
// out.
type CPUTimes struct {
	CPU                                                   int
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal float64
}

// Total is the sum of every state, steal included: the wall time the CPU
// existed, in seconds.
func (c CPUTimes) Total() float64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// Busy is the time the CPU ran something of this machine's (user, nice,
// system, irq, softirq).
func (c CPUTimes) Busy() float64 { return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ }

// Sub returns c - o per state (o an earlier reading of the same CPU); a
// state that went backwards (a CPU hot-plugged in between) counts 0.
func (c CPUTimes) Sub(o CPUTimes) CPUTimes {
	d := func(a, b float64) float64 { return max(a-b, 0) }
	return CPUTimes{CPU: c.CPU, User: d(c.User, o.User), Nice: d(c.Nice, o.Nice), System: d(c.System, o.System),
		Idle: d(c.Idle, o.Idle), IOWait: d(c.IOWait, o.IOWait), IRQ: d(c.IRQ, o.IRQ),
		SoftIRQ: d(c.SoftIRQ, o.SoftIRQ), Steal: d(c.Steal, o.Steal)}
}

// Add returns c + o per state, keeping c's CPU.
func (c CPUTimes) Add(o CPUTimes) CPUTimes {
	return CPUTimes{CPU: c.CPU, User: c.User + o.User, Nice: c.Nice + o.Nice, System: c.System + o.System,
		Idle: c.Idle + o.Idle, IOWait: c.IOWait + o.IOWait, IRQ: c.IRQ + o.IRQ,
		SoftIRQ: c.SoftIRQ + o.SoftIRQ, Steal: c.Steal + o.Steal}
}

// HostCPUs reads the per-CPU times of the host (its /proc/stat: the whole
// machine, not a container's share), in CPU order.
func HostCPUs() ([]CPUTimes, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	return hostCPUs(fs)
}

func hostCPUs(fs procfs.FS) ([]CPUTimes, error) {
	st, err := fs.Stat()
	if err != nil {
		return nil, fmt.Errorf("proc: /proc/stat: %w", err)
	}
	out := make([]CPUTimes, 0, len(st.CPU))
	for n, c := range st.CPU {
		out = append(out, CPUTimes{CPU: int(n), User: c.User, Nice: c.Nice, System: c.System, Idle: c.Idle,
			IOWait: c.Iowait, IRQ: c.IRQ, SoftIRQ: c.SoftIRQ, Steal: c.Steal})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPU < out[j].CPU })
	return out, nil
}
