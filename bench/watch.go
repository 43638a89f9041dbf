package bench

import (
	"cmp"
	"sync"
	"time"

	"github.com/rtbd/rtbd/bench/internal/proc"
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
	wa.self0, wa.selfErr = proc.SelfCPU()
	for i, p := range wa.w.Processes {
		wa.procCPU0[i], wa.procErr[i] = proc.CPU(p.PID)
	}
}

// stop ends the measurement (after the run's last answer).
func (wa *watcher) stop() {
	wa.timer.Stop()
	wa.baseOnce.Do(wa.baseline) // waits for the timer's, if it began
	wa.wall1 = time.Now()
	self1, err := proc.SelfCPU()
	if err != nil && wa.selfErr == nil {
		wa.selfErr = err
	}
	wa.self1 = self1
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
		cpu1, err := proc.CPU(p.PID)
		st, serr := proc.ReadStatus(p.PID)
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
