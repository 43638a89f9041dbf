package bidder

import (
	"time"

	"github.com/rtbd/rtbd/bidder/hostcpu"
)

// cpuMeter measures the room on the CPUs the bidder may run on: of the
// time they ran (not stolen by a hypervisor), the share they were idle.
// A bidder offered more than it can serve leaves no idle time; one whose
// requests wait for another reason leaves plenty, even when, on a shared
// virtual machine, the hypervisor holds its vCPU back and every time it
// runs again it finds a backlog (which from inside looks like overload:
// goroutines wait for a P).
type cpuMeter struct {
	// unusable is the number of allowed CPUs the process cannot use at
	// once (allowed minus GOMAXPROCS, if positive): their idle time is
	// no room for it.
	unusable int
	// read returns the allowed CPUs' summed idle (idle+iowait), steal and
	// total times in ticks of tick, since boot.
	read func() (idle, steal, total uint64, err error)
	tick time.Duration

	ring [meterWindow]cpuTimes
	n    int
}

type cpuTimes struct {
	at                 time.Time
	idle, steal, total uint64
}

// meterWindow: readings kept; the room spans the oldest to the newest (8
// intervals: 200 ms at the default admission_interval, 20 ticks of a CPU).
const meterWindow = 9

// sample records a reading at now and returns the room over the window:
// idle time / time not stolen, 0 to 1 (false until two readings, or when
// reading failed or no time passed).
func (m *cpuMeter) sample(now time.Time) (float64, bool) {
	idle, steal, total, err := m.read()
	if err != nil {
		return 0, false
	}
	copy(m.ring[1:], m.ring[:len(m.ring)-1])
	m.ring[0] = cpuTimes{at: now, idle: idle, steal: steal, total: total}
	m.n = min(m.n+1, len(m.ring))
	if m.n < 2 {
		return 0, false
	}
	old := m.ring[m.n-1]
	dIdle, dSteal, dTotal := float64(idle-old.idle), float64(steal-old.steal), float64(total-old.total)
	if idle < old.idle || steal < old.steal || total < old.total {
		return 0, false // counters went backwards (a CPU hot-plugged)
	}
	unusable := float64(m.unusable) * float64(now.Sub(old.at)) / float64(m.tick)
	dIdle = max(dIdle-unusable, 0)
	ran := dTotal - dSteal - unusable
	if ran <= 0 {
		return 0, false
	}
	return min(dIdle/ran, 1), true
}

// sumTimes sums, over the CPUs in want, idle+iowait, steal and all time.
func sumTimes(ts []hostcpu.Times, want map[int]bool) (idle, steal, total uint64) {
	for _, t := range ts {
		if want[t.CPU] {
			idle += t.Idle + t.IOWait
			steal += t.Steal
			total += t.Total()
		}
	}
	return idle, steal, total
}
