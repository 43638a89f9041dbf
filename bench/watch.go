package bench

import (
	"cmp"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// watcher measures the generator's CPU and the watched processes over the
// measured phase of a run: from its baseline, taken at the end of the
// warmup (or at stop if that comes first), to stop.
type watcher struct {
	w        Watch
	timer    *time.Timer
	baseOnce sync.Once

	wall0, wall1 time.Time
	self0, self1 time.Duration
	selfErr      error
	procCPU0     []time.Duration
	procErr      []error
}

// startWatch takes the baseline at from (the end of warmup).
func startWatch(w Watch, from time.Time) *watcher {
	wa := &watcher{w: w, procCPU0: make([]time.Duration, len(w.Processes)), procErr: make([]error, len(w.Processes))}
	wa.timer = time.AfterFunc(time.Until(from), func() { wa.baseOnce.Do(wa.baseline) })
	return wa
}

func (wa *watcher) baseline() {
	wa.wall0 = time.Now()
	wa.self0, wa.selfErr = selfCPU()
	for i, p := range wa.w.Processes {
		wa.procCPU0[i], wa.procErr[i] = procCPU(p.PID)
	}
}

// stop ends the measurement (after the run's last answer).
func (wa *watcher) stop() {
	wa.timer.Stop()
	wa.baseOnce.Do(wa.baseline) // waits for the timer's, if it began
	wa.wall1 = time.Now()
	var err error
	wa.self1, err = selfCPU()
	wa.selfErr = cmp.Or(wa.selfErr, err)
}

// apply writes generator and process stats into r.
func (wa *watcher) apply(r *Result) {
	wall := wa.wall1.Sub(wa.wall0).Seconds()
	if wa.selfErr == nil {
		r.GeneratorCPUSec = (wa.self1 - wa.self0).Seconds()
		r.GeneratorCores = safeDiv(r.GeneratorCPUSec, wall)
	} else {
		r.Notes = append(r.Notes, "generator CPU unavailable: "+wa.selfErr.Error())
	}
	for i, p := range wa.w.Processes {
		ps := ProcessStats{Name: p.Name, PID: p.PID}
		cpu1, err := procCPU(p.PID)
		st, serr := readStatus(p.PID)
		if err = cmp.Or(wa.procErr[i], err, serr); err != nil {
			ps.Error = err.Error()
		} else {
			ps.CPUSec = (cpu1 - wa.procCPU0[i]).Seconds()
			ps.Cores = safeDiv(ps.CPUSec, wall)
			ps.PeakRSSBytes, ps.RSSBytes = st.VmHWMBytes, st.VmRSSBytes
		}
		r.Processes = append(r.Processes, ps)
	}
}

// selfCPU is the user+system CPU time of this process from getrusage: the
// generator and anything else in-process, such as a test server.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), err
}

// procCPU is the user+system CPU time of process pid (all its threads),
// from /proc/PID/stat at USER_HZ resolution (10 ms).
func procCPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}

// procStatus is a process's resident set size from /proc/PID/status.
type procStatus struct {
	VmHWMBytes int64 // peak
	VmRSSBytes int64 // current
}

// readStatus reads /proc/PID/status; a process without memory figures (a
// kernel thread, a zombie) is an error.
func readStatus(pid int) (procStatus, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procStatus{}, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return procStatus{}, err
	}
	if st.VmHWM == 0 {
		return procStatus{}, fmt.Errorf("bench: no VmHWM in /proc/%d/status", pid)
	}
	return procStatus{VmHWMBytes: int64(st.VmHWM), VmRSSBytes: int64(st.VmRSS)}, nil
}
