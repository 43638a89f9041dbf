package bench

import (
	"fmt"
	"io"
	"math"

	"github.com/aclements/go-moremath/stats"
)

// Verdict is the outcome of comparing one metric of one target.
type Verdict string

// Verdicts.
const (
	NoChange     Verdict = "no change"
	Regression   Verdict = "regression"
	Improvement  Verdict = "improvement"
	Inconclusive Verdict = "inconclusive" // too few per-second samples, or the target is in one report only
)

// Delta is the change of one metric ("p50", "p99", "avg" in ms, or
// "throughput" in req/s) of one target from report A to B.
type Delta struct {
	Target  string  `json:"target"`
	Metric  string  `json:"metric"`
	Unit    string  `json:"unit"`
	A       float64 `json:"a"` // whole-run values
	B       float64 `json:"b"`
	Diff    float64 `json:"diff"`     // B - A
	DiffPc  float64 `json:"diff_pct"` // 100 (B - A) / A
	MedianA float64 `json:"median_a"` // medians of the per-second samples
	MedianB float64 `json:"median_b"`
	NA      int     `json:"n_a"` // per-second samples used
	NB      int     `json:"n_b"`
	PValue  float64 `json:"p_value"` // Mann-Whitney U, two-sided; 1 when too few samples
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// The verdict rule's thresholds (see Compare).
const (
	compareAlpha = 0.01 // significance level of the Mann-Whitney U test
	minRelative  = 0.05 // minimum effect relative to A
	minAbsMs     = 0.2  // minimum absolute effect for latency metrics
	minSamples   = 4    // per-second samples per side, before the power rule
)

// Compare compares every target present in both reports (matched by name,
// and by order among equal names) on p50, p99, avg latency and throughput.
// The rule, per metric:
//
//  1. Effect size: the whole-run change |B - A| must reach max(5% of A,
//     0.2 ms) for latency, 5% of A for throughput, else "no change" (long
//     runs make tiny shifts significant; identical builds must not differ).
//  2. Power: each run needs at least 4 per-second samples (full 1 s windows
//     that saw requests), and enough that complete separation could reach
//     p <= alpha/4 (the smallest two-sided p, 2/C(nA+nB, nA), is 0.0079 for
//     5 and 5, 0.0022 for 6 and 6: runs of at least 7 s), else "inconclusive".
//  3. Noise: the per-second samples (each window's p50, p99, average or
//     request count) must differ by a two-sided Mann-Whitney U test at
//     p < 0.01 (go-moremath's, as benchstat uses: exact with ties for small
//     samples, the normal approximation with tie correction beyond), and
//     their medians must move the same way as the whole-run value, else
//     "no change".
//  4. Direction: higher latency or lower throughput is a "regression", the
//     opposite an "improvement".
func Compare(a, b *Report) []Delta {
	var out []Delta
	usedB := make([]bool, len(b.Results))
	for _, ra := range a.Results {
		if ib := claim(b.Results, usedB, ra.Target); ib >= 0 {
			out = append(out, compareResults(ra, b.Results[ib])...)
		} else {
			out = append(out, Delta{Target: ra.Target, Metric: "-", PValue: 1, Verdict: Inconclusive, Reason: "only in A"})
		}
	}
	for i, rb := range b.Results {
		if !usedB[i] {
			out = append(out, Delta{Target: rb.Target, Metric: "-", PValue: 1, Verdict: Inconclusive, Reason: "only in B"})
		}
	}
	return out
}

// claim marks used and returns the index of the first result named target
// not used yet; -1 when there is none.
func claim(rs []*Result, used []bool, target string) int {
	for i, r := range rs {
		if !used[i] && r.Target == target {
			used[i] = true
			return i
		}
	}
	return -1
}

// metricDefs are the metrics compared, in output order: the whole-run value
// and the value of one timeline window.
var metricDefs = [...]struct {
	name, unit string
	whole      func(*Result) float64
	perSec     func(Second) float64
}{
	{"p50", "ms", func(r *Result) float64 { return usToMs(r.Latency.P50Us) }, func(s Second) float64 { return usToMs(s.P50Us) }},
	{"p99", "ms", func(r *Result) float64 { return usToMs(r.Latency.P99Us) }, func(s Second) float64 { return usToMs(s.P99Us) }},
	{"avg", "ms", func(r *Result) float64 { return r.Latency.AvgUs / 1000 }, func(s Second) float64 { return s.AvgUs / 1000 }},
	{"throughput", "req/s", func(r *Result) float64 { return r.AchievedRate }, func(s Second) float64 { return float64(s.Requests) }},
}

func compareResults(ra, rb *Result) []Delta {
	out := make([]Delta, 0, len(metricDefs))
	for _, m := range metricDefs {
		a, b := m.whole(ra), m.whole(rb)
		d := Delta{Target: ra.Target, Metric: m.name, Unit: m.unit, A: a, B: b, Diff: b - a, DiffPc: 100 * safeDiv(b-a, a), PValue: 1}
		xa, xb := perSecond(ra, m.perSec), perSecond(rb, m.perSec)
		d.NA, d.NB = len(xa), len(xb)
		d.MedianA, d.MedianB = median(xa), median(xb)
		minEffect := minRelative * math.Abs(d.A)
		worse := d.Diff < 0 // lower throughput
		if m.unit == "ms" {
			minEffect = max(minEffect, minAbsMs)
			worse = d.Diff > 0 // higher latency
		}
		minP := minMannWhitneyP(d.NA, d.NB)
		enough := d.NA >= minSamples && d.NB >= minSamples && minP <= compareAlpha/4
		if enough {
			d.PValue = mannWhitneyP(xa, xb)
		}
		switch {
		case math.Abs(d.Diff) < minEffect || d.Diff == 0:
			d.Verdict = NoChange
			d.Reason = fmt.Sprintf("|change| %s below minimum effect %s", fmtUnit(math.Abs(d.Diff), m.unit), fmtUnit(minEffect, m.unit))
		case !enough:
			d.Verdict = Inconclusive
			d.Reason = fmt.Sprintf("too few per-second samples (%d, %d) for the test to tell (smallest possible p %.2g; runs of >= 7 s give 6 each)", d.NA, d.NB, minP)
		case d.PValue >= compareAlpha:
			d.Verdict = NoChange
			d.Reason = fmt.Sprintf("within per-second noise (p = %.3g >= %g)", d.PValue, compareAlpha)
		case (d.MedianB-d.MedianA)*d.Diff <= 0:
			d.Verdict = NoChange
			d.Reason = "per-second medians move against the whole-run value"
		default:
			d.Verdict, d.Reason = Improvement, fmt.Sprintf("p = %.3g < %g", d.PValue, compareAlpha)
			if worse {
				d.Verdict = Regression
			}
		}
		out = append(out, d)
	}
	return out
}

func fmtUnit(v float64, unit string) string {
	if unit == "ms" {
		return fmtMs(v) + " ms"
	}
	return fmtRate(v) + " " + unit
}

// perSecond returns the value of each full timeline window that saw
// requests.
func perSecond(r *Result, val func(Second) float64) []float64 {
	var xs []float64
	for _, s := range r.Timeline {
		if s.Full && s.Requests > 0 {
			xs = append(xs, val(s))
		}
	}
	return xs
}

// minMannWhitneyP is the smallest two-sided p-value of the exact
// Mann-Whitney U test with samples of n1 and n2: 2/C(n1+n2, n1).
func minMannWhitneyP(n1, n2 int) float64 {
	c := 1.0 // C(n1+n2, n1), computed incrementally
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return min(1, 2/c)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Sample{Xs: xs}.Quantile(0.5)
}

// mannWhitneyP returns the two-sided p-value of the Mann-Whitney U test of
// samples x and y; 1 (no evidence) when either is empty or every value
// ties.
func mannWhitneyP(x, y []float64) float64 {
	r, err := stats.MannWhitneyUTest(x, y, stats.LocationDiffers)
	if err != nil {
		return 1 // stats.ErrSampleSize, stats.ErrSamplesEqual
	}
	return min(1, r.P)
}

// WriteCompare writes deltas as an aligned table headed by the two reports'
// identities, followed by the verdict rule.
func WriteCompare(w io.Writer, a, b *Report, deltas []Delta) error {
	out := &textWriter{}
	out.printf("A: %s\nB: %s\n\n", reportIdent(a), reportIdent(b))
	tw := out.tab()
	fmt.Fprintf(tw, "target\tmetric\tA\tB\tchange\tchange %%\tper-s median A\tB\tn A,B\tp\tverdict\treason\t\n")
	for _, d := range deltas {
		if d.Metric == "-" {
			fmt.Fprintf(tw, "%s\t-\t\t\t\t\t\t\t\t\t%s\t%s\t\n", d.Target, d.Verdict, d.Reason)
			continue
		}
		f := func(v float64) string { return fmtUnit(v, d.Unit) }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.3f\t%+.1f%%\t%s\t%s\t%d,%d\t%.3g\t%s\t%s\t\n",
			d.Target, d.Metric, f(d.A), f(d.B), d.Diff, d.DiffPc, f(d.MedianA), f(d.MedianB), d.NA, d.NB, d.PValue, d.Verdict, d.Reason)
	}
	out.flush(tw)
	out.printf("\nrule: a change counts only if it is at least max(5%%, 0.2 ms) (throughput: 5%%) and the per-second samples differ\n" +
		"(Mann-Whitney U, two-sided, p < 0.01, >= 6 full seconds per run, else \"inconclusive\") in the same direction; else \"no change\".\n")
	return out.copyTo(w)
}

func reportIdent(r *Report) string {
	s := r.Created.Format("2006-01-02 15:04:05 MST")
	if r.Title != "" {
		s = r.Title + ", " + s
	}
	if r.GitRev != "" {
		s += ", git " + r.GitRev
	}
	return s + ", host " + r.Host
}
