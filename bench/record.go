package bench

import (
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// HDR histogram ranges, in microseconds.
const (
	histLowUs     = 1
	histHighUs    = 60_000_000 // 60 s
	histDigits    = 3          // whole-run histograms
	secHistDigits = 2          // per-second histograms (~20 KB each instead of ~140 KB)
	batchSize     = 256        // samples a worker buffers before handing them over
)

// sample is one finished request, as a worker records it. Times are ns since
// the run's t0.
type sample struct {
	start   int64  // when latency starts counting (intended send time)
	end     int64  // when Target.Do returned
	lagUs   uint32 // clampUs: histHighUs fits a uint32
	outcome Outcome
	warm    bool // scheduled during warmup: not part of the result
	expired bool // never sent: waited in the generator past its deadline
}

// aggregator owns the histograms and counters of one load. Workers never
// touch them: each appends samples to its own batch (no lock) and hands a
// full batch over through a channel, one channel operation per batchSize
// requests. This is the "per-worker, merged" scheme with bounded memory:
// per-worker HDR histograms would cost ~140 KB x up to MaxInFlight workers,
// and per-second windows per worker would multiply that again.
type aggregator struct {
	in   chan []sample
	free chan []sample // emptied batches, for reuse
	done chan struct{}

	measureFrom int64 // ns since t0: start of the measured phase
	tmaxNs      int64 // 0 = no DeadlineMiss reclassification

	latency, lag dist
	counts       [numOutcomes]int64
	expired      int64
	lastEnd      int64 // ns since measureFrom of the latest completion
	secs         []*secAgg
}

// secAgg is one 1 s window of the measured phase.
type secAgg struct {
	counts  [numOutcomes]int64
	latency dist
}

// dist is a distribution of microseconds: an HDR histogram beside the exact
// count, sum, minimum and maximum (HDR rounds to its buckets).
type dist struct {
	h            *hdr.Histogram
	n            int64
	sumUs        float64
	minUs, maxUs int64
}

func newDist(digits int) dist {
	return dist{h: hdr.New(histLowUs, histHighUs, digits), minUs: math.MaxInt64}
}

// record adds us, which must be in [0, histHighUs].
func (d *dist) record(us int64) {
	d.n++
	d.sumUs += float64(us)
	d.minUs = min(d.minUs, us)
	d.maxUs = max(d.maxUs, us)
	_ = d.h.RecordValue(us) // in range: cannot fail
}

// at is the p-th percentile, kept at or below the exact maximum (HDR
// reports the top of its bucket).
func (d *dist) at(p float64) int64 { return min(d.h.ValueAtQuantile(p), d.maxUs) }

func (d *dist) stats() LatencyStats {
	if d.n == 0 {
		return LatencyStats{}
	}
	return LatencyStats{Count: d.n, AvgUs: d.sumUs / float64(d.n), StdDevUs: d.h.StdDev(), MinUs: d.minUs,
		P50Us: d.at(50), P90Us: d.at(90), P95Us: d.at(95), P99Us: d.at(99), P999Us: d.at(99.9), MaxUs: d.maxUs}
}

func newAggregator(measureFrom, tmaxNs int64) *aggregator {
	return &aggregator{
		in:          make(chan []sample, 64),
		free:        make(chan []sample, 64),
		done:        make(chan struct{}),
		measureFrom: measureFrom,
		tmaxNs:      tmaxNs,
		latency:     newDist(histDigits),
		lag:         newDist(histDigits),
	}
}

// run consumes batches until in is closed.
func (a *aggregator) run() {
	defer close(a.done)
	for b := range a.in {
		for i := range b {
			a.add(&b[i])
		}
		select {
		case a.free <- b[:0]:
		default:
		}
	}
}

// clampUs is ns nanoseconds in whole microseconds, clamped to
// [0, histHighUs].
func clampUs(ns int64) int64 { return min(max(ns/1000, 0), histHighUs) }

// add records one sample. Only the aggregator goroutine (or a test holding
// the aggregator exclusively) calls it.
func (a *aggregator) add(s *sample) {
	if s.warm {
		return
	}
	latNs := s.end - s.start
	us := clampUs(latNs)
	o := s.outcome
	if o >= numOutcomes {
		o = ErrOther
	}
	if a.tmaxNs > 0 && (o == OK || o == NoBid) && latNs > a.tmaxNs {
		o = DeadlineMiss
	}
	a.counts[o]++
	if s.expired {
		a.expired++
	}
	a.latency.record(us)
	a.lag.record(int64(s.lagUs))

	end := s.end - a.measureFrom
	a.lastEnd = max(a.lastEnd, end)
	sec := int(max(end, 0) / 1e9)
	for len(a.secs) <= sec {
		a.secs = append(a.secs, nil)
	}
	if a.secs[sec] == nil {
		a.secs[sec] = &secAgg{latency: newDist(secHistDigits)}
	}
	a.secs[sec].counts[o]++
	a.secs[sec].latency.record(us)
}

// recorder is a worker's private buffer in front of an aggregator.
type recorder struct {
	a *aggregator
	b []sample
}

func (a *aggregator) newRecorder() recorder { return recorder{a: a, b: a.getBatch()} }

func (a *aggregator) getBatch() []sample {
	select {
	case b := <-a.free:
		return b
	default:
		return make([]sample, 0, batchSize)
	}
}

func (r *recorder) record(s sample) {
	r.b = append(r.b, s)
	if len(r.b) >= batchSize {
		r.a.in <- r.b
		r.b = r.a.getBatch()
	}
}

// close hands over what is left; the recorder must not be used afterwards.
func (r *recorder) close() {
	if len(r.b) > 0 {
		r.a.in <- r.b
	}
	r.b = nil
}

// distributionPercentiles are ghz's latency distribution lines.
var distributionPercentiles = [...]float64{10, 25, 50, 75, 90, 95, 99, 99.9}

// fill writes the aggregated numbers into r. sendNs is the length of the
// sending phase in ns (for Second.Full); the elapsed time runs to the last
// answer after it.
func (a *aggregator) fill(r *Result, sendNs int64) {
	c := a.counts
	r.Requests = a.latency.n
	r.Successes = c[OK]
	r.NoBids = c[NoBid]
	r.DeadlineMisses = c[DeadlineMiss]
	r.Errors = ErrorCounts{
		Timeout:   c[ErrTimeout],
		Conn:      c[ErrConn],
		Status4xx: c[ErrStatus4xx],
		Status5xx: c[ErrStatus5xx],
		Other:     c[ErrOther],
	}
	r.Errors.Total = r.Errors.Timeout + r.Errors.Conn + r.Errors.Status4xx + r.Errors.Status5xx + r.Errors.Other
	r.Expired = a.expired
	r.ElapsedSec = float64(max(sendNs, a.lastEnd)) / 1e9
	if r.ElapsedSec > 0 {
		r.AchievedRate = float64(r.Requests) / r.ElapsedSec
	}
	r.Latency = a.latency.stats()
	r.SendLag = a.lag.stats()
	r.Histogram = a.latency.ghzHistogram()
	r.Distribution = make([]Percentile, 0, len(distributionPercentiles))
	if r.Requests > 0 {
		for _, p := range distributionPercentiles {
			r.Distribution = append(r.Distribution, Percentile{P: p, Us: a.latency.at(p)})
		}
	}
	r.Percentiles = a.latency.percentileCurve()
	r.Timeline = make([]Second, 0, len(a.secs))
	for i, sa := range a.secs {
		s := Second{T: i, Full: int64(i+1)*1e9 <= sendNs}
		if sa != nil {
			d := &sa.latency
			s.Requests = d.n
			s.Successes = sa.counts[OK]
			s.NoBids = sa.counts[NoBid]
			s.DeadlineMisses = sa.counts[DeadlineMiss]
			s.Errors = d.n - s.Successes - s.NoBids - s.DeadlineMisses
			s.AvgUs = d.sumUs / float64(d.n)
			s.P50Us, s.P99Us, s.MaxUs = d.at(50), d.at(99), d.maxUs
		}
		r.Timeline = append(r.Timeline, s)
	}
}

// ghzHistogram reproduces ghz's response time histogram: 10 equal steps from
// the fastest to the slowest request (11 marks); each request is counted at
// the first mark it does not exceed.
func (d *dist) ghzHistogram() []HistogramBucket {
	if d.n == 0 {
		return nil
	}
	const bc = 10
	out := make([]HistogramBucket, bc+1)
	step := float64(d.maxUs-d.minUs) / bc
	for i := 0; i < bc; i++ {
		out[i].MarkUs = float64(d.minUs) + step*float64(i)
	}
	out[bc].MarkUs = float64(d.maxUs)
	bi := 0
	for _, bar := range d.h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		// The bar holds values in [From, To]; place it by its lowest value,
		// clamped to the exact min/max so the extremes land in the first
		// and last buckets.
		v := float64(min(max(bar.From, d.minUs), d.maxUs))
		for bi < bc && v > out[bi].MarkUs {
			bi++
		}
		out[bi].Count += bar.Count
	}
	for i := range out {
		out[i].Frequency = float64(out[i].Count) / float64(d.n)
	}
	return out
}

// percentileCurve samples the distribution at p = 100(1 - 10^-x) for x in
// steps of 0.1 (0, 20.6, 36.9, ... 90, ... 99, ... 99.9 ...) up to what the
// sample count supports, then 100 (the maximum). Charts plot x, which is the
// log scale of 1/(1-p).
func (d *dist) percentileCurve() []Percentile {
	if d.n == 0 {
		return nil
	}
	xMax := math.Log10(float64(d.n))
	out := []Percentile{{P: 0, Us: d.minUs}}
	for i := 1; float64(i)/10 <= xMax; i++ {
		p := 100 * (1 - math.Pow(10, -float64(i)/10))
		p = math.Round(p*1e4) / 1e4
		out = append(out, Percentile{P: p, Us: d.at(p)})
	}
	return append(out, Percentile{P: 100, Us: d.maxUs})
}
