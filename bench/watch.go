package bench

import (
	"time"

	"github.com/rtbd/rtbd/bench/internal/proc"
)

// watcher measures the generator's CPU and the watched processes over the
// measured phase of a run.
type watcher struct {
	w     Watch
	from  time.Time
	stopc chan struct{}
	done  chan struct{}

	wall0    time.Time
	self0    time.Duration
	selfErr  error
	procCPU0 []time.Duration
	procErr  []error

	// final
	wall1 time.Time
	self1 time.Duration
}

// startWatch begins measuring at from (the end of warmup), or at stop if
// that comes first.
func startWatch(w Watch, from time.Time) *watcher {
	wa := &watcher{
		w:        w,
		from:     from,
		stopc:    make(chan struct{}),
		done:     make(chan struct{}),
		procCPU0: make([]time.Duration, len(w.Processes)),
		procErr:  make([]error, len(w.Processes)),
	}
	go wa.loop()
	return wa
}

func (wa *watcher) baseline() {
	wa.wall0 = time.Now()
	wa.self0, wa.selfErr = proc.SelfCPU()
	for i, p := range wa.w.Processes {
		wa.procCPU0[i], wa.procErr[i] = proc.CPU(p.PID)
	}
}

func (wa *watcher) loop() {
	defer close(wa.done)
	t := time.NewTimer(time.Until(wa.from))
	select {
	case <-t.C:
	case <-wa.stopc:
		t.Stop()
		wa.baseline()
		return
	}
	wa.baseline()
	<-wa.stopc
}

// stop ends the measurement (after the run's last answer).
func (wa *watcher) stop() {
	close(wa.stopc)
	<-wa.done
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
		if wall > 0 {
			r.GeneratorCores = r.GeneratorCPUSec / wall
		}
	} else {
		r.Notes = append(r.Notes, "generator CPU unavailable: "+wa.selfErr.Error())
	}
	for i, p := range wa.w.Processes {
		ps := ProcessStats{Name: p.Name, PID: p.PID}
		cpu1, err := proc.CPU(p.PID)
		if err == nil {
			err = wa.procErr[i]
		}
		if err == nil {
			ps.CPUSec = (cpu1 - wa.procCPU0[i]).Seconds()
			if wall > 0 {
				ps.Cores = ps.CPUSec / wall
			}
			st, serr := proc.ReadStatus(p.PID)
			if serr == nil {
				ps.PeakRSSBytes, ps.RSSBytes = st.VmHWMBytes, st.VmRSSBytes
			} else {
				err = serr
			}
		}
		if err != nil {
			ps.Error = err.Error()
		}
		r.Processes = append(r.Processes, ps)
	}
}
