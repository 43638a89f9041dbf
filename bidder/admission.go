package bidder

import (
	"context"
	"math"
	"math/rand/v2"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Admission is the bidder's admission control by queueing delay. A
// bidder offered more than it can process does not fail by running out of
// memory or connections: requests queue (in the sockets, then for the
// CPU), every answer gets later, and soon all of them arrive after the
// SSP's tmax, bids included, so the work is wasted. MaxInFlight does not
// see this queue (a request waiting has not reached the handler yet).
//
// When the request's arrival time is known (bidder/arrival: the kernel's
// receive time, on Linux), the queueing delay of each request is measured
// (arrival to handler start) and ShedQueued applies CoDel's idea to it: a
// queue whose delay (a moving average over requests) stayed above Target
// for a whole Interval is a standing queue, not a burst, and while it
// stands each request that waited longer than Target is shed, and Run
// raises, interval by interval, the share of the young ones shed too (a
// bidder at its limit serving every young request has no CPU left to
// drain the queue). Shedding is cheap, so the queue drains, and the
// requests served are answered within their tmax. A burst shorter than
// Interval (a GC pause, a neighbour's moment on a shared host) sheds
// nothing.
//
// A queue is only shed while it is the bidder's own, that is while the
// CPUs have no room: Run samples the Go scheduler's run queue
// (/sched/goroutines/runnable) every Interval/5, and reads the allowed
// CPUs' idle and steal times (/proc/stat, Linux) every Interval. When the
// run queue was empty in at least half of the last 20 samples, or the
// CPUs were idle for at least a fifth of the time the hypervisor let them
// run over the last 8 intervals, the requests waited somewhere else (a
// virtual CPU the hypervisor held back, which finds a backlog each time it
// runs again; a stalled network) and shedding them would throw bids away
// without shortening anything. Such a request is served (the deadline
// still turns away one whose wait ate its budget).
//
// Without an arrival time (another platform, a race build, a connection
// that is not TCP), the Go runtime's /sched/latencies:seconds (how long
// goroutines stay runnable before they run) is the signal: Run reads it
// every Interval and computes the p99 of that window; above Target it
// raises the fraction of requests Shed sheds (multiplicatively), below
// Target/2 it lowers it (additively). That signal is sampled and noisy
// (on a shared 2-vCPU VM it sheds far more than needed under 2x overload),
// which is why the measured delay is preferred.
//
// A shed request is answered at once, before its body is decoded (a no-bid
// with nbr 507, or 503).
//
// Shed and ShedQueued are safe for concurrent use and allocation-free; Run
// is the controllers' loop (the young share, and the fallback's fraction).
type Admission struct {
	o    AdmissionOptions
	prob atomic.Uint32 // shed probability in 1/65536
	p99  atomic.Int64  // last window's p99 scheduling latency, ns

	// queueAvg: moving average of the requests' queueing delays, ns.
	// aboveSince: unix ns when it last went above Target; 0 while below.
	queueAvg   atomic.Int64
	aboveSince atomic.Int64
	// qprob: fraction (1/65536) of the requests that did not wait past
	// Target that are shed too, raised by Run while the queue stands.
	qprob    atomic.Uint32
	standing atomic.Bool // the queue has stood above Target for an Interval
	// spare: Run saw the CPUs with room (the run queue empty in at least
	// half of its last samples, or the CPUs idle a fifth of the time they
	// ran): a standing queue is then not shed.
	spare atomic.Bool
	// meter reads the CPUs' room (nil: Run makes one; none on other
	// platforms). A test may set it before Run.
	meter *cpuMeter

	runnableGauge, roomGauge prometheus.Gauge

	shedGauge, p99Gauge, qshedGauge prometheus.Gauge
}

// AdmissionOptions configure an Admission.
type AdmissionOptions struct {
	// Target is the queueing delay (arrival to handler) above which a
	// standing queue's requests are shed; without arrival times, the p99
	// goroutine scheduling latency (runnable to running) above which the
	// fallback controller sheds. Default 5ms.
	Target time.Duration
	// Interval is how long the delay must stay above Target before
	// requests are shed (CoDel's interval), and the fallback controller's
	// window. Default 25ms.
	Interval time.Duration
	// MaxShed caps the fraction shed (so that a probe of the real load
	// always gets through). Default 0.95.
	MaxShed float64
	// Registerer receives rtbd_bidder_admission_*; nil registers none.
	Registerer prometheus.Registerer
}

const (
	schedMetric = "/sched/latencies:seconds"
	// runnableMetric: goroutines waiting for a P (Go 1.26); without it the
	// queue always counts as the bidder's own.
	runnableMetric = "/sched/goroutines/runnable:goroutines"
	// minWindowEvents: a window with fewer scheduling events says little
	// (an idle process); it counts as below target.
	minWindowEvents = 50
)

// NewAdmission returns an Admission shedding nothing until Run sees a
// scheduling delay above the target.
func NewAdmission(o AdmissionOptions) *Admission {
	if o.Target <= 0 {
		o.Target = 5 * time.Millisecond
	}
	if o.Interval <= 0 {
		o.Interval = 25 * time.Millisecond
	}
	if o.MaxShed <= 0 || o.MaxShed > 1 {
		o.MaxShed = 0.95
	}
	a := &Admission{o: o,
		shedGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_bidder_admission_shed_ratio",
			Help: "Fraction of bid requests the fallback admission control (scheduling latency, used for requests without an arrival time) sheds now."}),
		qshedGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_bidder_admission_queue_shed_ratio",
			Help: "Fraction of the bid requests that did not wait past bidder.admission_latency that the admission control sheds too, to make room while a queue stands."}),
		p99Gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_bidder_admission_sched_latency_p99_seconds",
			Help: "p99 of the goroutine scheduling latency in the admission control's last window."}),
	}
	a.runnableGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_bidder_admission_busy_ratio",
		Help: "Share of the admission control's last samples (every admission_interval/5, up to 20) in which goroutines waited for a CPU; under 0.5 a standing queue is not the bidder's and is not shed."})
	a.roomGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_bidder_admission_cpu_room_ratio",
		Help: "Share of the time the bidder's allowed CPUs ran (not stolen by a hypervisor) that they were idle, over the admission control's last 8 intervals (Linux /proc/stat); from 0.2 up a standing queue is not the bidder's and is not shed."})
	if o.Registerer != nil {
		o.Registerer.MustRegister(a.shedGauge, a.p99Gauge, a.qshedGauge, a.runnableGauge, a.roomGauge)
	}
	return a
}

// Shed reports whether this request is to be shed: true with the current
// shed probability. A nil Admission sheds nothing.
func (a *Admission) Shed() bool {
	if a == nil {
		return false
	}
	p := a.prob.Load()
	return p != 0 && uint32(rand.Uint32()>>16) < p
}

// queueEWMAShift sets the weight of one request in the queueing delay's
// moving average: 1/16.
const queueEWMAShift = 4

// ShedQueued reports whether a request that waited queued (arrival to
// handler start, measured) is to be shed: true if it waited longer than
// Target while the queue stands, that is while the moving average of the
// requests' waits has stayed above Target for at least Interval. now is
// the handler's start. A nil Admission sheds nothing.
//
// CoDel proper ends a standing queue at the first packet through in time
// (its minimum). Go's run queues are not FIFO (a goroutine readied by the
// running one runs next), so under overload a few requests get through
// young while the rest wait ever longer; the average is not fooled by them.
func (a *Admission) ShedQueued(queued time.Duration, now time.Time) bool {
	if a == nil {
		return false
	}
	// A racy read-modify-write: a lost update only nudges the average.
	e := a.queueAvg.Load()
	e += (int64(queued) - e) >> queueEWMAShift
	a.queueAvg.Store(e)
	standing := false
	if e <= int64(a.o.Target) {
		if a.aboveSince.Load() != 0 {
			a.aboveSince.Store(0)
		}
		if a.standing.Load() {
			a.standing.Store(false)
		}
	} else {
		t := now.UnixNano()
		since := a.aboveSince.Load()
		if since == 0 {
			a.aboveSince.CompareAndSwap(0, t)
			since = t
		}
		standing = t-since >= int64(a.o.Interval)
		if standing && !a.standing.Load() {
			a.standing.Store(true)
		}
	}
	if standing && queued > a.o.Target && !a.spare.Load() {
		return true
	}
	// Shedding only the old requests keeps a queue from growing, not
	// from standing: a bidder at its limit serving every young request
	// has no CPU left to drain the queue after a stall. While the queue
	// stands, Run raises the fraction of young ones shed too.
	p := a.qprob.Load()
	return p != 0 && uint32(rand.Uint32()>>16) < p
}

// nextQueueShed is the young-request shed fraction after a window: up by
// a quarter of the rest (at least 5 points) while the queue stands, down
// by 5 points once the average wait is under half the target.
func nextQueueShed(shed float64, standing bool, avg, target time.Duration, maxShed float64) float64 {
	switch {
	case standing:
		shed += max((1-shed)/4, 0.05)
	case avg < target/2:
		shed -= 0.05
	}
	return min(max(shed, 0), maxShed)
}

// Spare reports whether Run last saw the CPUs with room (a standing queue
// is then not shed).
func (a *Admission) Spare() bool { return a != nil && a.spare.Load() }

// Standing reports whether ShedQueued currently sees a standing queue.
func (a *Admission) Standing() bool { return a != nil && a.standing.Load() }

// ShedRatio is the fraction of requests shed now.
func (a *Admission) ShedRatio() float64 { return float64(a.prob.Load()) / 65536 }

// SchedP99 is the p99 scheduling latency of the last window.
func (a *Admission) SchedP99() time.Duration { return time.Duration(a.p99.Load()) }

// Run updates the shed probability every Interval until ctx is done, then
// sheds nothing. Between, every Interval/5, it samples the run queue.
func (a *Admission) Run(ctx context.Context) {
	samples := []rtmetrics.Sample{{Name: schedMetric}, {Name: runnableMetric}}
	rtmetrics.Read(samples)
	if samples[0].Value.Kind() != rtmetrics.KindFloat64Histogram {
		return // a runtime without the metric: never shed
	}
	hasRunnable := samples[1].Value.Kind() == rtmetrics.KindUint64
	prev := cloneHist(samples[0].Value.Float64Histogram(), nil)
	t := time.NewTicker(a.o.Interval / subSamples)
	defer t.Stop()
	defer a.set(0, 0)
	defer func() { a.qprob.Store(0); a.qshedGauge.Set(0); a.spare.Store(false) }()
	var busy busyWindow
	meter := a.meter
	if meter == nil {
		meter = newCPUMeter()
	}
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if hasRunnable {
			rtmetrics.Read(samples[1:])
			busy.add(samples[1].Value.Uint64() > 0)
		}
		if tick%subSamples != 0 {
			continue
		}
		rtmetrics.Read(samples[:1])
		cur := samples[0].Value.Float64Histogram()
		p99, n := windowP99(prev, cur)
		prev = cloneHist(cur, prev)
		a.set(nextShed(a.ShedRatio(), p99, n, a.o.Target, a.o.MaxShed), p99)
		spare := false
		if hasRunnable {
			r := busy.ratio()
			spare = r < 0.5
			a.runnableGauge.Set(r)
		}
		if meter != nil {
			if room, ok := meter.sample(time.Now()); ok {
				spare = spare || room >= 0.2
				a.roomGauge.Set(room)
			}
		}
		a.spare.Store(spare)
		q := nextQueueShed(float64(a.qprob.Load())/65536, a.standing.Load() && !a.spare.Load(), time.Duration(a.queueAvg.Load()), a.o.Target, a.o.MaxShed)
		a.qprob.Store(uint32(math.Round(q * 65536)))
		a.qshedGauge.Set(q)
	}
}

// subSamples is the number of run-queue samples per Interval.
const subSamples = 5

// busyWindow holds the last busySamples run-queue samples: whether a
// goroutine waited for a CPU.
type busyWindow struct {
	s      [busySamples]bool
	n, pos int
	busy   int
}

const busySamples = 20

func (w *busyWindow) add(busy bool) {
	if w.n == len(w.s) {
		if w.s[w.pos] {
			w.busy--
		}
	} else {
		w.n++
	}
	w.s[w.pos] = busy
	if busy {
		w.busy++
	}
	w.pos = (w.pos + 1) % len(w.s)
}

// ratio is the busy share of the samples held (1 with none: until it
// knows better, a standing queue counts as the bidder's own).
func (w *busyWindow) ratio() float64 {
	if w.n == 0 {
		return 1
	}
	return float64(w.busy) / float64(w.n)
}

func (a *Admission) set(shed float64, p99 time.Duration) {
	a.prob.Store(uint32(math.Round(shed * 65536)))
	a.p99.Store(int64(p99))
	a.shedGauge.Set(shed)
	a.p99Gauge.Set(p99.Seconds())
}

// nextShed is the controller: the shed fraction after a window whose p99
// scheduling latency was p99 over n events.
func nextShed(shed float64, p99 time.Duration, n uint64, target time.Duration, maxShed float64) float64 {
	switch {
	case n >= minWindowEvents && p99 > target:
		// Multiplicative: close a quarter of the remaining gap, at
		// least 5 points, so 2x overload is met within a few windows.
		shed += max((1-shed)/4, 0.05)
	case n < minWindowEvents || p99 < target/2:
		shed -= 0.02
	}
	return min(max(shed, 0), maxShed)
}

// windowP99 is the p99 (a bucket's upper bound) and the number of events
// of cur minus prev (the same buckets, read earlier).
func windowP99(prev, cur *rtmetrics.Float64Histogram) (time.Duration, uint64) {
	if prev == nil || len(prev.Counts) != len(cur.Counts) {
		return 0, 0
	}
	var total uint64
	for i, c := range cur.Counts {
		total += c - prev.Counts[i]
	}
	if total == 0 {
		return 0, 0
	}
	want := total - total/100 // events at or below the p99
	var cum uint64
	for i, c := range cur.Counts {
		cum += c - prev.Counts[i]
		if cum >= want {
			upper := cur.Buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = cur.Buckets[i]
			}
			return time.Duration(upper * float64(time.Second)), total
		}
	}
	return time.Duration(cur.Buckets[len(cur.Buckets)-1] * float64(time.Second)), total
}

// cloneHist copies h into dst (reusing its slices) and returns it.
func cloneHist(h *rtmetrics.Float64Histogram, dst *rtmetrics.Float64Histogram) *rtmetrics.Float64Histogram {
	if dst == nil {
		dst = &rtmetrics.Float64Histogram{}
	}
	dst.Counts = append(dst.Counts[:0], h.Counts...)
	dst.Buckets = append(dst.Buckets[:0], h.Buckets...)
	return dst
}
