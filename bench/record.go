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
	start   int64 // when latency starts counting (intended send time)
	end     int64 // when Target.Do returned
	lagUs   uint32
	outcome Outcome
	warm    bool // scheduled during warmup: not part of the result
	expired bool // never sent: waited in the generator past its deadline
}

type batch struct{ s []sample }

// aggregator owns the histograms and counters of one load. Workers never
// touch them: each appends samples to its own batch (no lock) and hands a
// full batch over through a channel, one channel operation per batchSize
// requests. This is the "per-worker, merged" scheme with bounded memory:
// per-worker HDR histograms would cost ~140 KB x up to MaxInFlight workers,
// and per-second windows per worker would multiply that again.
type aggregator struct {
	in   chan *batch
	free chan *batch
	done chan struct{}

	measureFrom int64 // ns since t0: start of the measured phase
	tmaxNs      int64 // 0 = no DeadlineMiss reclassification

	hist    *hdr.Histogram
	lag     *hdr.Histogram
	counts  [numOutcomes]int64
	expired int64
	n       int64
	sumUs   float64
	minUs   int64
	maxUs   int64
	lagSum  float64
	lagMin  int64
	lagMax  int64
	lastEnd int64 // ns since measureFrom of the latest completion
	secs    []*secAgg
}

type secAgg struct {
	counts [numOutcomes]int64
	sumUs  float64
	maxUs  int64
	h      *hdr.Histogram
}

func newAggregator(measureFrom, tmaxNs int64) *aggregator {
	return &aggregator{
		in:          make(chan *batch, 64),
		free:        make(chan *batch, 64),
		done:        make(chan struct{}),
		measureFrom: measureFrom,
		tmaxNs:      tmaxNs,
		hist:        hdr.New(histLowUs, histHighUs, histDigits),
		lag:         hdr.New(histLowUs, histHighUs, histDigits),
		minUs:       math.MaxInt64,
		lagMin:      math.MaxInt64,
	}
}

// run consumes batches until in is closed.
func (a *aggregator) run() {
	defer close(a.done)
	for b := range a.in {
		for i := range b.s {
			a.add(&b.s[i])
		}
		b.s = b.s[:0]
		select {
		case a.free <- b:
		default:
		}
	}
}

func (a *aggregator) getBatch() *batch {
	select {
	case b := <-a.free:
		return b
	default:
		return &batch{s: make([]sample, 0, batchSize)}
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
	a.n++
	a.sumUs += float64(us)
	a.minUs = min(a.minUs, us)
	a.maxUs = max(a.maxUs, us)
	_ = a.hist.RecordValue(us) // us is clamped into range: cannot fail

	lag := int64(s.lagUs)
	a.lagSum += float64(lag)
	a.lagMin = min(a.lagMin, lag)
	a.lagMax = max(a.lagMax, lag)
	_ = a.lag.RecordValue(min(lag, histHighUs))

	end := s.end - a.measureFrom
	a.lastEnd = max(a.lastEnd, end)
	sec := int(max(end, 0) / 1e9)
	for len(a.secs) <= sec {
		a.secs = append(a.secs, nil)
	}
	sa := a.secs[sec]
	if sa == nil {
		sa = &secAgg{h: hdr.New(histLowUs, histHighUs, secHistDigits)}
		a.secs[sec] = sa
	}
	sa.counts[o]++
	sa.sumUs += float64(us)
	sa.maxUs = max(sa.maxUs, us)
	_ = sa.h.RecordValue(us)
}

// recorder is a worker's private buffer in front of an aggregator.
type recorder struct {
	a *aggregator
	b *batch
}

func (a *aggregator) newRecorder() recorder { return recorder{a: a, b: a.getBatch()} }

func (r *recorder) record(s sample) {
	r.b.s = append(r.b.s, s)
	if len(r.b.s) >= batchSize {
		r.a.in <- r.b
		r.b = r.a.getBatch()
	}
}

// close hands over what is left; the recorder must not be used afterwards.
func (r *recorder) close() {
	if r.b != nil && len(r.b.s) > 0 {
		r.a.in <- r.b
	}
	r.b = nil
}

// distributionPercentiles are ghz's latency distribution lines.
var distributionPercentiles = [...]float64{10, 25, 50, 75, 90, 95, 99, 99.9}

func statsOf(h *hdr.Histogram, n int64, sumUs float64, minUs, maxUs int64) LatencyStats {
	if n == 0 {
		return LatencyStats{}
	}
	return LatencyStats{
		Count:    n,
		AvgUs:    sumUs / float64(n),
		StdDevUs: h.StdDev(),
		MinUs:    minUs,
		P50Us:    capUs(h.ValueAtQuantile(50), maxUs),
		P90Us:    capUs(h.ValueAtQuantile(90), maxUs),
		P95Us:    capUs(h.ValueAtQuantile(95), maxUs),
		P99Us:    capUs(h.ValueAtQuantile(99), maxUs),
		P999Us:   capUs(h.ValueAtQuantile(99.9), maxUs),
		MaxUs:    maxUs,
	}
}

// capUs keeps a percentile (HDR reports the top of its bucket) at or below
// the exact maximum.
func capUs(v, maxUs int64) int64 { return min(v, maxUs) }

// fill writes the aggregated numbers into r. sendNs is the length of the
// sending phase in ns (for Second.Full); the elapsed time runs to the last
// answer after it.
func (a *aggregator) fill(r *Result, sendNs int64) {
	c := a.counts
	r.Requests = a.n
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
		r.AchievedRate = float64(a.n) / r.ElapsedSec
	}
	r.Latency = statsOf(a.hist, a.n, a.sumUs, a.minUs, a.maxUs)
	r.SendLag = statsOf(a.lag, a.n, a.lagSum, a.lagMin, a.lagMax)
	r.Histogram = ghzHistogram(a.hist, a.n, a.minUs, a.maxUs)
	r.Distribution = make([]Percentile, 0, len(distributionPercentiles))
	if a.n > 0 {
		for _, p := range distributionPercentiles {
			r.Distribution = append(r.Distribution, Percentile{P: p, Us: capUs(a.hist.ValueAtQuantile(p), a.maxUs)})
		}
	}
	r.Percentiles = percentileCurve(a.hist, a.n, a.minUs, a.maxUs)
	r.Timeline = make([]Second, 0, len(a.secs))
	for i, sa := range a.secs {
		s := Second{T: i, Full: int64(i+1)*1e9 <= sendNs}
		if sa != nil {
			s.Successes = sa.counts[OK]
			s.NoBids = sa.counts[NoBid]
			s.DeadlineMisses = sa.counts[DeadlineMiss]
			for o := ErrTimeout; o <= ErrOther; o++ {
				s.Errors += sa.counts[o]
			}
			s.Requests = s.Successes + s.NoBids + s.DeadlineMisses + s.Errors
			s.AvgUs = sa.sumUs / float64(s.Requests)
			s.P50Us = capUs(sa.h.ValueAtQuantile(50), sa.maxUs)
			s.P99Us = capUs(sa.h.ValueAtQuantile(99), sa.maxUs)
			s.MaxUs = sa.maxUs
		}
		r.Timeline = append(r.Timeline, s)
	}
}

// ghzHistogram reproduces ghz's response time histogram: 10 equal steps from
// the fastest to the slowest request (11 marks); each request is counted at
// the first mark it does not exceed.
func ghzHistogram(h *hdr.Histogram, n, minUs, maxUs int64) []HistogramBucket {
	if n == 0 {
		return nil
	}
	const bc = 10
	out := make([]HistogramBucket, bc+1)
	step := float64(maxUs-minUs) / bc
	for i := 0; i < bc; i++ {
		out[i].MarkUs = float64(minUs) + step*float64(i)
	}
	out[bc].MarkUs = float64(maxUs)
	bi := 0
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		// The bar holds values in [From, To]; place it by its lowest value,
		// clamped to the exact min/max so the extremes land in the first
		// and last buckets.
		v := float64(min(max(bar.From, minUs), maxUs))
		for bi < bc && v > out[bi].MarkUs {
			bi++
		}
		out[bi].Count += bar.Count
	}
	for i := range out {
		out[i].Frequency = float64(out[i].Count) / float64(n)
	}
	return out
}

// percentileCurve samples the distribution at p = 100(1 - 10^-x) for x in
// steps of 0.1 (0, 20.6, 36.9, ... 90, ... 99, ... 99.9 ...) up to what the
// sample count supports, then 100 (the maximum). Charts plot x, which is the
// log scale of 1/(1-p).
func percentileCurve(h *hdr.Histogram, n, minUs, maxUs int64) []Percentile {
	if n == 0 {
		return nil
	}
	xMax := math.Log10(float64(n))
	out := []Percentile{{P: 0, Us: minUs}}
	for i := 1; ; i++ {
		x := float64(i) / 10
		if x > xMax {
			break
		}
		p := 100 * (1 - math.Pow(10, -x))
		p = math.Round(p*1e4) / 1e4
		out = append(out, Percentile{P: p, Us: capUs(h.ValueAtQuantile(p), maxUs)})
	}
	return append(out, Percentile{P: 100, Us: maxUs})
}
