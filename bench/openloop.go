package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Load is one open-loop load of a mixed run.
type Load struct {
	Target  Target
	Options OpenLoopOptions
}

// MixedOptions are the shared settings of RunMixed. Each load's
// Options.Duration and Options.Warmup must be zero or equal to these, and
// its Options.Watch empty (the mixed run watches once for all loads).
type MixedOptions struct {
	Duration time.Duration
	Warmup   time.Duration
	Watch    Watch
}

// RunOpenLoop offers o.Rate requests per second to t for o.Duration (after
// o.Warmup) and returns what it saw. See OpenLoopOptions for the queueing
// and timing rules. It returns an error wrapping ErrInvalid for bad options;
// if ctx is cancelled it stops scheduling, waits for the requests in flight
// and returns the partial Result (Aborted set) with an error wrapping
// ErrAborted and ctx.Err().
func RunOpenLoop(ctx context.Context, t Target, o OpenLoopOptions) (*Result, error) {
	rs, err := RunMixed(ctx, []Load{{Target: t, Options: o}}, MixedOptions{Duration: o.Duration, Warmup: o.Warmup, Watch: o.Watch})
	if len(rs) == 0 {
		return nil, err
	}
	rs[0].GeneratorShared = 0
	return rs[0], err
}

// RunMixed runs several open-loop loads at once from a common start (for
// example bid requests at R1, win notices at R2 and pixel events at R3) and
// returns one Result per load, in order. Target names must be unique. Each
// load has its own pacer, workers and histograms; generator CPU and Watch
// figures are process-wide and repeated in every Result.
func RunMixed(ctx context.Context, loads []Load, o MixedOptions) ([]*Result, error) {
	var p problems
	p.check(len(loads) > 0, "loads: at least one load required")
	p.check(o.Duration > 0, "duration: must be > 0, got %v", o.Duration)
	p.check(o.Warmup >= 0, "warmup: must be >= 0, got %v", o.Warmup)
	o.Watch.validate(&p, "")
	seen := map[string]bool{}
	for i, l := range loads {
		prefix := fmt.Sprintf("loads[%d].", i)
		if l.Target == nil {
			p.addf("%starget: nil", prefix)
			continue
		}
		p.check(!seen[l.Target.Name()], "%starget: duplicate name %q", prefix, l.Target.Name())
		seen[l.Target.Name()] = true
		lo := l.Options
		p.check(lo.Duration == 0 || lo.Duration == o.Duration, "%sduration: %v differs from the mixed run's %v", prefix, lo.Duration, o.Duration)
		p.check(lo.Warmup == 0 || lo.Warmup == o.Warmup, "%swarmup: %v differs from the mixed run's %v", prefix, lo.Warmup, o.Warmup)
		p.check(len(lo.Watch.Processes) == 0 || len(loads) == 1, "%swatch: set MixedOptions.Watch instead", prefix)
		lo.Duration, lo.Warmup, lo.Watch = o.Duration, o.Warmup, Watch{}
		lo.validate(&p, prefix)
	}
	if err := p.err(); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	t0 := time.Now()
	warmNs := int64(o.Warmup)
	w := startWatch(o.Watch, t0.Add(o.Warmup))
	ls := make([]*openLoad, len(loads))
	var wg sync.WaitGroup
	for i, l := range loads {
		opt := l.Options
		opt.Duration, opt.Warmup = o.Duration, o.Warmup
		ls[i] = newOpenLoad(runCtx, i, l.Target, opt.withDefaults(), t0)
		wg.Add(1)
		go func(l *openLoad) {
			defer wg.Done()
			l.run()
		}(ls[i])
	}
	wg.Wait()
	w.stop()

	aborted := ctx.Err() != nil
	results := make([]*Result, len(ls))
	for i, l := range ls {
		r := &Result{
			Target:      l.target.Name(),
			Mode:        ModeOpenLoop,
			OfferedRate: l.o.Rate,
			Arrival:     l.o.Arrival,
			MaxInFlight: l.o.MaxInFlight,
			Start:       t0.Add(o.Warmup),
			WarmupSec:   o.Warmup.Seconds(),
			DurationSec: o.Duration.Seconds(),
			TimeoutMs:   float64(l.timeoutNs) / 1e6,
			TmaxMs:      float64(l.o.Tmax) / 1e6,
			Workers:     l.spawned,
			Aborted:     aborted,
		}
		sendNs := int64(o.Duration)
		if aborted {
			sendNs = max(0, l.stoppedAt-warmNs)
		}
		l.agg.fill(r, sendNs)
		w.apply(r)
		if len(ls) > 1 {
			r.GeneratorShared = len(ls)
		}
		results[i] = r
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

type openLoad struct {
	ctx    context.Context
	idx    int
	target Target
	o      OpenLoopOptions
	t0     time.Time
	agg    *aggregator
	work   chan item
	wg     sync.WaitGroup

	warmNs, endNs, timeoutNs int64
	spawned                  int   // pacer goroutine only
	stoppedAt                int64 // ns since t0 when the pacer stopped
}

func newOpenLoad(ctx context.Context, idx int, t Target, o OpenLoopOptions, t0 time.Time) *openLoad {
	warm := int64(o.Warmup)
	return &openLoad{
		ctx:       ctx,
		idx:       idx,
		target:    t,
		o:         o,
		t0:        t0,
		agg:       newAggregator(warm, int64(o.Tmax)),
		work:      make(chan item), // unbuffered: a send succeeds only to an idle worker
		warmNs:    warm,
		endNs:     warm + int64(o.Duration),
		timeoutNs: timeoutNs(o.Timeout),
	}
}

func (l *openLoad) now() int64 { return int64(time.Since(l.t0)) }

func (l *openLoad) run() {
	go l.agg.run()
	l.pace()
	close(l.work)
	l.wg.Wait()
	close(l.agg.in)
	<-l.agg.done
}

// pace schedules requests. It never sleeps per request: it wakes about once
// per pacerSlice (or at the next scheduled time, if later) and dispatches every
// request that has come due.
func (l *openLoad) pace() {
	rec := l.agg.newRecorder() // for requests that expire before a worker is free
	defer rec.close()
	period := 1e9 / l.o.Rate
	poisson := l.o.Arrival == Poisson
	// Arrival gaps use their own stream (workers use (Seed, idx<<32|id)).
	rng := rand.New(rand.NewPCG(l.o.Seed^0x9e3779b97f4a7c15, uint64(l.idx)))
	var i, nextAt, wake int64
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer func() { l.stoppedAt = l.now() }()
	for {
		now := l.now()
		for nextAt <= now {
			if nextAt >= l.endNs {
				return
			}
			it := item{sched: nextAt, start: max(nextAt, wake)}
			if l.timeoutNs > 0 && now >= it.start+l.timeoutNs {
				rec.record(sample{start: it.start, end: now, lagUs: lagUs(now - it.sched),
					outcome: ErrTimeout, warm: it.sched < l.warmNs, expired: true})
			} else if !l.dispatch(it) {
				return
			}
			i++
			if poisson {
				nextAt += int64(rng.ExpFloat64() * period)
			} else {
				nextAt = int64(float64(i) * period)
			}
			now = l.now()
		}
		if nextAt >= l.endNs {
			return
		}
		timer.Reset(time.Duration(max(nextAt-now, int64(pacerSlice))))
		select {
		case <-timer.C:
		case <-l.ctx.Done():
			timer.Stop()
			return
		}
		wake = l.now()
	}
}

// lagUs is a lag of ns nanoseconds in whole microseconds, clamped to the
// histograms' range (histHighUs fits a uint32).
func lagUs(ns int64) uint32 { return uint32(clampUs(ns)) }

// dispatch hands it to an idle worker, starts a new worker if none is idle
// and fewer than MaxInFlight exist, or else waits for a worker. It returns
// false if the run was cancelled while waiting.
func (l *openLoad) dispatch(it item) bool {
	select {
	case l.work <- it:
		return true
	default:
	}
	if l.spawned < l.o.MaxInFlight {
		l.wg.Add(1)
		go l.worker(l.spawned, it)
		l.spawned++
		return true
	}
	select {
	case l.work <- it:
		return true
	case <-l.ctx.Done():
		return false
	}
}

func (l *openLoad) worker(id int, it item) {
	defer l.wg.Done()
	w := &Worker{ID: id, Rand: rand.New(rand.NewPCG(l.o.Seed, uint64(l.idx)<<32|uint64(id)))}
	rec := l.agg.newRecorder()
	defer rec.close()
	for {
		sent := l.now()
		if l.timeoutNs > 0 && sent >= it.start+l.timeoutNs {
			// Expired while the pacer waited for a free worker: not sent.
			rec.record(sample{start: it.start, end: sent, lagUs: lagUs(sent - it.sched), outcome: ErrTimeout,
				warm: it.sched < l.warmNs, expired: true})
		} else {
			if l.timeoutNs > 0 {
				w.Deadline = l.t0.Add(time.Duration(it.start + l.timeoutNs))
			}
			out := l.target.Do(l.ctx, w)
			end := l.now()
			rec.record(sample{start: it.start, end: end, lagUs: lagUs(sent - it.sched), outcome: out, warm: it.sched < l.warmNs})
			w.Seq++
		}
		var ok bool
		if it, ok = <-l.work; !ok {
			return
		}
	}
}
