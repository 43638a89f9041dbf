package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// synthResult builds a Result from seeded lognormal latencies (median
// medianUs, sigma 0.5) plus shiftUs, at rate req/s for secs seconds, as if
// recorded by an open-loop run.
func synthResult(name string, seed uint64, secs, rate int, medianUs, shiftUs float64) *Result {
	rng := rand.New(rand.NewPCG(seed, 7))
	a := newAggregator(0, 0)
	for s := 0; s < secs; s++ {
		for i := 0; i < rate; i++ {
			start := int64(s)*1e9 + int64(i)*1e9/int64(rate)
			lat := medianUs*math.Exp(0.5*rng.NormFloat64()) + shiftUs
			a.add(&sample{start: start, end: start + int64(lat*1000), outcome: OK})
		}
	}
	r := &Result{Target: name, Mode: ModeOpenLoop, OfferedRate: float64(rate), DurationSec: float64(secs)}
	a.fill(r, int64(secs)*1e9)
	return r
}

func TestAggregatorCountsAndTimeline(t *testing.T) {
	const ms = int64(1e6)
	a := newAggregator(1000*ms /* warmup 1 s */, 50*ms /* tmax */)
	add := func(startMs, latMs int64, o Outcome, expired bool) {
		a.add(&sample{start: startMs * ms, end: (startMs + latMs) * ms, lagUs: 10, outcome: o, warm: startMs < 1000, expired: expired})
	}
	add(500, 1, OK, false)            // warmup: dropped
	add(1000, 2, OK, false)           // t=0
	add(1100, 4, NoBid, false)        // t=0
	add(1200, 60, OK, false)          // t=0, over tmax: deadline miss
	add(1300, 70, NoBid, false)       // t=0, deadline miss
	add(1400, 700, ErrTimeout, true)  // completes at 2100: t=1, expired
	add(2500, 3, ErrStatus5xx, false) // t=1
	add(2600, 3, ErrConn, false)      // t=1
	add(2700, 3, ErrStatus4xx, false) // t=1
	add(2800, 3, ErrOther, false)     // t=1
	add(2900, 200, OK, false)         // completes at 3100: t=2 (drain); over tmax: deadline miss
	add(2950, 1, Outcome(200), false) // unknown outcome: other, t=1
	r := &Result{}
	a.fill(r, 2000*ms)

	if r.Requests != 11 || r.Successes != 1 || r.NoBids != 1 || r.DeadlineMisses != 3 || r.Expired != 1 {
		t.Fatalf("counts: %+v", r)
	}
	want := ErrorCounts{Total: 6, Timeout: 1, Conn: 1, Status4xx: 1, Status5xx: 1, Other: 2}
	if r.Errors != want {
		t.Fatalf("errors %+v, want %+v", r.Errors, want)
	}
	if r.Requests != r.Successes+r.NoBids+r.DeadlineMisses+r.Errors.Total {
		t.Fatal("requests do not add up")
	}
	if r.Latency.MinUs != 1000 || r.Latency.MaxUs != 700_000 {
		t.Fatalf("min/max %d/%d", r.Latency.MinUs, r.Latency.MaxUs)
	}
	if len(r.Timeline) != 3 {
		t.Fatalf("timeline has %d windows, want 3", len(r.Timeline))
	}
	t0, t1, t2 := r.Timeline[0], r.Timeline[1], r.Timeline[2]
	if t0.Requests != 4 || t0.Successes != 1 || t0.NoBids != 1 || t0.DeadlineMisses != 2 || !t0.Full {
		t.Fatalf("t=0: %+v", t0)
	}
	if t1.Requests != 6 || t1.Errors != 6 || !t1.Full || t1.MaxUs != 700_000 {
		t.Fatalf("t=1: %+v", t1)
	}
	if t2.Requests != 1 || t2.DeadlineMisses != 1 || t2.Full {
		t.Fatalf("t=2 (drain): %+v", t2)
	}
	// ElapsedSec covers the drain to the last completion (3100 ms - 1000 ms).
	if math.Abs(r.ElapsedSec-2.1) > 1e-9 || math.Abs(r.AchievedRate-11/2.1) > 1e-9 {
		t.Fatalf("elapsed %v rate %v", r.ElapsedSec, r.AchievedRate)
	}
	var hsum int64
	for _, b := range r.Histogram {
		hsum += b.Count
	}
	if len(r.Histogram) != 11 || hsum != r.Requests || r.Histogram[0].MarkUs != 1000 || r.Histogram[10].MarkUs != 700_000 {
		t.Fatalf("histogram %+v", r.Histogram)
	}
	if r.SendLag.P50Us != 10 || r.SendLag.MaxUs != 10 {
		t.Fatalf("send lag %+v", r.SendLag)
	}
}

func TestLatencyStatsMatchDistribution(t *testing.T) {
	r := synthResult("x", 1, 10, 1000, 2000, 0)
	l := r.Latency
	if l.Count != 10000 || r.Requests != 10000 {
		t.Fatalf("count %d", l.Count)
	}
	// Lognormal(median 2 ms, sigma 0.5): p50 = 2 ms, p99 = 2 ms * e^(0.5*2.326) = 6.4 ms.
	if math.Abs(float64(l.P50Us)-2000) > 60 || math.Abs(float64(l.P99Us)-6396) > 400 {
		t.Fatalf("p50 %d p99 %d", l.P50Us, l.P99Us)
	}
	if !(l.MinUs <= l.P50Us && l.P50Us <= l.P90Us && l.P90Us <= l.P95Us && l.P95Us <= l.P99Us && l.P99Us <= l.P999Us && l.P999Us <= l.MaxUs) {
		t.Fatalf("percentiles not monotonic: %+v", l)
	}
	if len(r.Distribution) != 8 || r.Distribution[2].P != 50 || r.Distribution[2].Us != l.P50Us {
		t.Fatalf("distribution %+v", r.Distribution)
	}
	ps := r.Percentiles
	if ps[0].P != 0 || ps[len(ps)-1].P != 100 || ps[len(ps)-1].Us != l.MaxUs {
		t.Fatalf("percentile curve ends %+v %+v", ps[0], ps[len(ps)-1])
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].P <= ps[i-1].P || ps[i].Us < ps[i-1].Us {
			t.Fatalf("curve not increasing at %d: %+v %+v", i, ps[i-1], ps[i])
		}
	}
}
