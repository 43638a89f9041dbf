package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Load is one load of a mixed run.
type Load struct {
	Target  Target
	Options Options
}

// MixedOptions are the shared settings of RunMixed. Each load's
// Options.Duration and Options.Warmup must be zero or equal to these, and
// its Options.Watch empty (the mixed run watches once for all loads).
type MixedOptions struct {
	Duration time.Duration
	Warmup   time.Duration
	Watch    Watch
}

// Run loads t as o says (open or closed loop) and returns what it saw. It
// returns an error wrapping ErrInvalid for bad options; if ctx is cancelled
// it stops sending, waits for the requests in flight and returns the
// partial Result (Aborted set) with an error wrapping ErrAborted and
// ctx.Err().
func Run(ctx context.Context, t Target, o Options) (*Result, error) {
	var p problems
	p.check(t != nil, "target: nil")
	o.validate(&p, "")
	if err := p.err(); err != nil {
		return nil, err
	}
	rs, err := runLoads(ctx, []Load{{Target: t, Options: o}}, o.Warmup, o.Watch)
	return rs[0], err
}

// RunMixed runs several loads at once from a common start (for example bid
// requests at R1, win notices at R2 and pixel events at R3) and returns one
// Result per load, in order. Target names must be unique. Each load has its
// own pacer, workers and histograms; generator CPU and Watch figures are
// process-wide and repeated in every Result.
func RunMixed(ctx context.Context, loads []Load, o MixedOptions) ([]*Result, error) {
	var p problems
	p.check(len(loads) > 0, "loads: at least one load required")
	p.check(o.Duration > 0, "duration: must be > 0, got %v", o.Duration)
	p.check(o.Warmup >= 0, "warmup: must be >= 0, got %v", o.Warmup)
	seen := map[string]bool{}
	loads = append([]Load(nil), loads...)
	for i := range loads {
		l := &loads[i]
		prefix := fmt.Sprintf("loads[%d].", i)
		if l.Target == nil {
			p.addf("%starget: nil", prefix)
			continue
		}
		p.check(!seen[l.Target.Name()], "%starget: duplicate name %q", prefix, l.Target.Name())
		seen[l.Target.Name()] = true
		lo := &l.Options
		p.check(lo.Duration == 0 || lo.Duration == o.Duration, "%sduration: %v differs from the mixed run's %v", prefix, lo.Duration, o.Duration)
		p.check(lo.Warmup == 0 || lo.Warmup == o.Warmup, "%swarmup: %v differs from the mixed run's %v", prefix, lo.Warmup, o.Warmup)
		p.check(len(lo.Watch.Processes) == 0, "%swatch: set MixedOptions.Watch instead", prefix)
		lo.Duration, lo.Warmup = o.Duration, o.Warmup
		lo.validate(&p, prefix)
	}
	o.Watch.validate(&p, "")
	if err := p.err(); err != nil {
		return nil, err
	}
	rs, err := runLoads(ctx, loads, o.Warmup, o.Watch)
	if len(rs) > 1 {
		for _, r := range rs {
			r.GeneratorShared = len(rs)
		}
	}
	return rs, err
}

// runLoads runs valid loads from a common start, watching w from the end of
// warmup.
func runLoads(ctx context.Context, loads []Load, warmup time.Duration, w Watch) ([]*Result, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	t0 := time.Now()
	wa := startWatch(w, t0.Add(warmup))
	ls := make([]*load, len(loads))
	var wg sync.WaitGroup
	for i, l := range loads {
		ls[i] = newLoad(runCtx, i, l.Target, l.Options.withDefaults(), t0)
		wg.Go(ls[i].run)
	}
	wg.Wait()
	wa.stop()

	aborted := ctx.Err() != nil
	results := make([]*Result, len(ls))
	for i, l := range ls {
		results[i] = l.result(aborted)
		wa.apply(results[i])
	}
	if aborted {
		return results, fmt.Errorf("%w: %w", ErrAborted, ctx.Err())
	}
	return results, nil
}

// item is one scheduled request handed from the pacer to a worker.
type item struct {
	sched int64 // scheduled send time, ns since t0
	start int64 // when its latency starts counting: max(sched, pacer waking)
}

// load is one load of a run: its pacer (open loop) and workers.
type load struct {
	ctx    context.Context
	idx    int
	target Target
	o      Options
	t0     time.Time
	agg    *aggregator
	work   chan item
	wg     sync.WaitGroup

	warmNs, endNs, timeoutNs int64
	workers                  int   // started (open loop: by the pacer goroutine only)
	sendNs                   int64 // length of the measured sending phase, set when it ends
}

func newLoad(ctx context.Context, idx int, t Target, o Options, t0 time.Time) *load {
	warm := int64(o.Warmup)
	end := warm + int64(o.Duration)
	if o.Duration == 0 { // a closed loop until Requests
		end = 1<<63 - 1
	}
	return &load{
		ctx:       ctx,
		idx:       idx,
		target:    t,
		o:         o,
		t0:        t0,
		agg:       newAggregator(warm, int64(o.Tmax)),
		work:      make(chan item), // unbuffered: a send succeeds only to an idle worker
		warmNs:    warm,
		endNs:     end,
		timeoutNs: max(int64(cmp.Or(o.Timeout, DefaultTimeout)), 0),
	}
}

func (l *load) now() int64 { return int64(time.Since(l.t0)) }

func (l *load) run() {
	go l.agg.run()
	if l.o.Concurrency > 0 {
		l.closedLoop()
	} else {
		l.pace()
		l.sendNs = int64(l.o.Duration)
		if l.ctx.Err() != nil {
			l.sendNs = max(0, l.now()-l.warmNs)
		}
		close(l.work)
		l.wg.Wait()
	}
	close(l.agg.in)
	<-l.agg.done
}

func (l *load) result(aborted bool) *Result {
	r := &Result{
		Target:      l.target.Name(),
		Mode:        ModeOpenLoop,
		OfferedRate: l.o.Rate,
		Arrival:     l.o.Arrival,
		Concurrency: l.o.Concurrency,
		MaxInFlight: l.o.MaxInFlight,
		Start:       l.t0.Add(l.o.Warmup),
		WarmupSec:   l.o.Warmup.Seconds(),
		DurationSec: l.o.Duration.Seconds(),
		TimeoutMs:   float64(l.timeoutNs) / 1e6,
		TmaxMs:      float64(l.o.Tmax) / 1e6,
		Workers:     l.workers,
		Aborted:     aborted,
	}
	if l.o.Concurrency > 0 {
		r.Mode, r.DurationSec = ModeClosedLoop, float64(l.sendNs)/1e9
	}
	l.agg.fill(r, l.sendNs)
	return r
}

func (l *load) newWorker(id int) *Worker {
	return &Worker{ID: id, Rand: rand.New(rand.NewPCG(l.o.Seed, uint64(l.idx)<<32|uint64(id)))}
}

// expired reports whether it, not sent by now, is past its hard deadline.
func (l *load) expired(it item, now int64) bool {
	return l.timeoutNs > 0 && now >= it.start+l.timeoutNs
}

// send sends it now through w, unless it expired waiting for a worker, and
// records the outcome.
func (l *load) send(w *Worker, rec *recorder, it item, now int64) {
	s := sample{start: it.start, end: now, lagUs: uint32(clampUs(now - it.sched)), outcome: ErrTimeout,
		warm: it.sched < l.warmNs, expired: l.expired(it, now)}
	if !s.expired {
		if l.timeoutNs > 0 {
			w.Deadline = l.t0.Add(time.Duration(it.start + l.timeoutNs))
		}
		s.outcome = l.target.Do(l.ctx, w)
		s.end = l.now()
		w.Seq++
	}
	rec.record(s)
}

// pace schedules the requests of an open loop. It never sleeps per
// request: it wakes about once per millisecond, Go's timer granularity (or
// at the next scheduled time, if later), and dispatches every request that
// has come due. One that came due while it slept counts from the waking, so
// the generator's own sleep is not charged to the target.
func (l *load) pace() {
	rec := l.agg.newRecorder() // for requests that expire before a worker is free
	defer rec.close()
	period := 1e9 / l.o.Rate
	// Arrival gaps use their own stream (workers use (Seed, idx<<32|id)).
	rng := rand.New(rand.NewPCG(l.o.Seed^0x9e3779b97f4a7c15, uint64(l.idx)))
	var i, nextAt, wake int64
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := l.now()
		for nextAt <= now {
			if nextAt >= l.endNs {
				return
			}
			it := item{sched: nextAt, start: max(nextAt, wake)}
			if l.expired(it, now) {
				l.send(nil, &rec, it, now) // records it as expired; no worker needed
			} else if !l.dispatch(it) {
				return
			}
			i++
			if l.o.Arrival == Poisson {
				nextAt += int64(rng.ExpFloat64() * period)
			} else {
				nextAt = int64(float64(i) * period)
			}
			now = l.now()
		}
		if nextAt >= l.endNs {
			return
		}
		timer.Reset(time.Duration(max(nextAt-now, int64(time.Millisecond))))
		select {
		case <-timer.C:
		case <-l.ctx.Done():
			return
		}
		wake = l.now()
	}
}

// dispatch hands it to an idle worker, starts a new worker if none is idle
// and fewer than MaxInFlight exist, or else waits for a worker (it keeps its
// scheduled time). It returns false if the run was cancelled while waiting.
func (l *load) dispatch(it item) bool {
	select {
	case l.work <- it:
		return true
	default:
	}
	if l.workers < l.o.MaxInFlight {
		id := l.workers
		l.wg.Go(func() { l.worker(id, it) })
		l.workers++
		return true
	}
	select {
	case l.work <- it:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// worker sends it, then every item the pacer hands it.
func (l *load) worker(id int, it item) {
	w := l.newWorker(id)
	rec := l.agg.newRecorder()
	defer rec.close()
	for {
		l.send(w, &rec, it, l.now())
		var ok bool
		if it, ok = <-l.work; !ok {
			return
		}
	}
}
