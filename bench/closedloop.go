package bench

import (
	"slices"
	"sync"
	"sync/atomic"
)

// closedLoop runs Concurrency workers, each sending a request, waiting for
// its outcome and repeating, until the end of Duration, Requests measured
// requests or the run's cancellation.
func (l *load) closedLoop() {
	l.workers = l.o.Concurrency
	var issued atomic.Int64
	lastStart := make([]int64, l.o.Concurrency) // of each worker's measured requests
	var wg sync.WaitGroup
	for id := range l.o.Concurrency {
		wg.Go(func() {
			w := l.newWorker(id)
			rec := l.agg.newRecorder()
			defer rec.close()
			for l.ctx.Err() == nil {
				start := l.now()
				warm := start < l.warmNs
				if start >= l.endNs || !warm && l.o.Requests > 0 && issued.Add(1) > l.o.Requests {
					return
				}
				l.send(w, &rec, item{sched: start, start: start}, start)
				if !warm {
					lastStart[id] = start
				}
			}
		})
	}
	wg.Wait()
	l.sendNs = int64(l.o.Duration)
	if l.o.Duration == 0 || l.ctx.Err() != nil || l.o.Requests > 0 && issued.Load() >= l.o.Requests {
		l.sendNs = max(0, slices.Max(lastStart)-l.warmNs)
	}
}
