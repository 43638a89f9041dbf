package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// RunClosedLoop runs o.Concurrency workers against t, each sending a request,
// waiting for its outcome and repeating, for o.Duration (after o.Warmup) or
// until o.Requests measured requests were sent. Latency counts from the
// actual send time. Errors as for RunOpenLoop.
func RunClosedLoop(ctx context.Context, t Target, o ClosedLoopOptions) (*Result, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: target: nil", ErrInvalid)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	warmNs := int64(o.Warmup)
	endNs := int64(math.MaxInt64)
	if o.Duration > 0 {
		endNs = warmNs + int64(o.Duration)
	}
	tmo := timeoutNs(o.Timeout)
	agg := newAggregator(warmNs, int64(o.Tmax))
	go agg.run()
	w := startWatch(o.Watch, t0.Add(o.Warmup))

	var stop atomic.Bool
	var issued atomic.Int64
	var lastStart atomic.Int64
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	var wg sync.WaitGroup
	for id := 0; id < o.Concurrency; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			wk := &Worker{ID: id, Rand: rand.New(rand.NewPCG(o.Seed, uint64(id)))}
			rec := agg.newRecorder()
			defer rec.close()
			for !stop.Load() {
				start := int64(time.Since(t0))
				if start >= endNs {
					return
				}
				warm := start < warmNs
				if !warm && o.Requests > 0 && issued.Add(1) > o.Requests {
					stop.Store(true)
					return
				}
				if tmo > 0 {
					wk.Deadline = t0.Add(time.Duration(start + tmo))
				}
				out := t.Do(ctx, wk)
				end := int64(time.Since(t0))
				rec.record(sample{start: start, end: end, outcome: out, warm: warm})
				wk.Seq++
				if !warm {
					for {
						ls := lastStart.Load()
						if start <= ls || lastStart.CompareAndSwap(ls, start) {
							break
						}
					}
				}
			}
		}(id)
	}
	wg.Wait()
	close(agg.in)
	<-agg.done
	w.stop()

	aborted := ctx.Err() != nil
	sendNs := int64(o.Duration)
	if o.Duration == 0 || aborted || (o.Requests > 0 && issued.Load() >= o.Requests) {
		sendNs = max(0, lastStart.Load()-warmNs)
	}
	r := &Result{
		Target:      t.Name(),
		Mode:        ModeClosedLoop,
		Concurrency: o.Concurrency,
		Start:       t0.Add(o.Warmup),
		WarmupSec:   o.Warmup.Seconds(),
		DurationSec: float64(sendNs) / 1e9,
		TimeoutMs:   float64(tmo) / 1e6,
		TmaxMs:      float64(o.Tmax) / 1e6,
		Workers:     o.Concurrency,
		Aborted:     aborted,
	}
	agg.fill(r, sendNs)
	w.apply(r)
	if aborted {
		return r, fmt.Errorf("%w: %w", ErrAborted, ctx.Err())
	}
	return r, nil
}
