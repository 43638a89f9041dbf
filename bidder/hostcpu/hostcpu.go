// Package hostcpu reads what the host's CPUs did since boot, per CPU, from
// Linux /proc/stat: user, nice, system, idle, iowait, irq, softirq and
// steal time (time a virtual CPU wanted to run while the hypervisor ran
// someone else's), in USER_HZ ticks. The bidder's admission control reads
// it to tell its own overload from a held-back vCPU; the bench harness, to
// say how much of a run's latency tail was the host's.
//
// Parse takes the file's contents and never panics on malformed text; its
// errors wrap ErrMalformed. Read is safe for concurrent use.
package hostcpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Tick is USER_HZ, the unit of /proc/stat: 100 per second on every Linux
// architecture Go supports.
const Tick = time.Second / 100

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("hostcpu: malformed /proc/stat")

// Times is one per-CPU line of /proc/stat ("cpu0 ..."): the time that
// CPU spent in each state since boot, in ticks (Tick). Steal is the time the
// hypervisor ran something else while this virtual CPU wanted to run (0 on
// bare metal and on kernels without steal accounting); Guest and GuestNice
// are already included in User and Nice, so they are left out here.
type Times struct {
	CPU                                                   int
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Total is the sum of every state, steal included: the wall time the CPU
// existed, in ticks (Tick).
func (c Times) Total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// Busy is the time the CPU ran something of this machine's (user, nice,
// system, irq, softirq).
func (c Times) Busy() uint64 {
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ
}

// Sub returns c - o per field (o an earlier reading of the same CPU). A
// field that went backwards (a CPU hot-plugged in between) counts 0.
func (c Times) Sub(o Times) Times {
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return Times{CPU: c.CPU, User: d(c.User, o.User), Nice: d(c.Nice, o.Nice), System: d(c.System, o.System),
		Idle: d(c.Idle, o.Idle), IOWait: d(c.IOWait, o.IOWait), IRQ: d(c.IRQ, o.IRQ),
		SoftIRQ: d(c.SoftIRQ, o.SoftIRQ), Steal: d(c.Steal, o.Steal)}
}

// Parse parses the per-CPU lines of /proc/stat ("cpuN user nice
// system idle iowait irq softirq steal ..."), in file order. The aggregate
// "cpu" line and the other lines (intr, ctxt, ...) are skipped. Kernels
// before 2.6.11 print fewer columns: the missing ones are 0. A cpuN line
// with fewer than 4 values or a non-numeric one is an error wrapping
// ErrMalformed.
func Parse(r io.Reader) ([]Times, error) {
	var out []Times
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
		out = append(out, Times{CPU: n, User: v[0], Nice: v[1], System: v[2], Idle: v[3],
			IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hostcpu: /proc/stat: %w", err)
	}
	return out, nil
}

// Read reads the per-CPU times of the host (its /proc/stat: the
// whole machine, not a container's share).
func Read() ([]Times, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("hostcpu: %w", err)
	}
	return Parse(bytes.NewReader(b))
}
