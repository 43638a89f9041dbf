package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestMannWhitney(t *testing.T) {
	// Completely separated 4 vs 4: exact two-sided p = 2/C(8,4) = 2/70.
	if p := mannWhitneyP([]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}); math.Abs(p-2.0/70) > 1e-12 {
		t.Fatalf("separated 4v4: p = %v", p)
	}
	if p := mannWhitneyP([]float64{5, 6, 7, 8}, []float64{1, 2, 3, 4}); math.Abs(p-2.0/70) > 1e-12 {
		t.Fatalf("symmetric: p = %v", p)
	}
	// Interleaved: no evidence.
	if p := mannWhitneyP([]float64{1, 3, 5, 7}, []float64{2, 4, 6, 8}); p < 0.5 {
		t.Fatalf("interleaved: p = %v", p)
	}
	// Known value: x={1,2,4}, y={3,5,6}: U = 1, P(U<=1) = 2/20, two-sided 0.2.
	if p := mannWhitneyP([]float64{1, 2, 4}, []float64{3, 5, 6}); math.Abs(p-0.2) > 1e-12 {
		t.Fatalf("3v3: p = %v", p)
	}
	// All tied: no evidence.
	if p := mannWhitneyP([]float64{1, 1, 1, 1, 1}, []float64{1, 1, 1, 1, 1}); p != 1 {
		t.Fatalf("all ties: p = %v", p)
	}
	// Large samples use the normal approximation; a clear shift is tiny p.
	var x, y []float64
	for i := 0; i < 40; i++ {
		x = append(x, float64(i))
		y = append(y, float64(i)+25)
	}
	if p := mannWhitneyP(x, y); p > 1e-4 {
		t.Fatalf("shifted 40v40: p = %v", p)
	}
	if p := mannWhitneyP(x, x); p < 0.9 {
		t.Fatalf("identical 40v40: p = %v", p)
	}
}

func reportOf(results ...*Result) *Report { return NewReport(Meta{Title: "t"}, results...) }

// TestCompareSameDistributionNoChange: runs drawn from the same distribution
// with different seeds must all compare as "no change".
func TestCompareSameDistributionNoChange(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		a := reportOf(synthResult("bid", seed, 30, 500, 2000, 0))
		b := reportOf(synthResult("bid", seed+100, 30, 500, 2000, 0))
		ds := Compare(a, b)
		if len(ds) != 4 {
			t.Fatalf("%d deltas, want 4 metrics", len(ds))
		}
		for _, d := range ds {
			if d.Verdict != NoChange {
				t.Errorf("seed %d: %s %s: %s (A %.3f B %.3f, p %.3g): %s", seed, d.Target, d.Metric, d.Verdict, d.A, d.B, d.PValue, d.Reason)
			}
		}
	}
}

// TestCompareShiftIsRegression: +1 ms on every request is a latency
// regression, and throughput is unchanged.
func TestCompareShiftIsRegression(t *testing.T) {
	a := reportOf(synthResult("bid", 1, 30, 500, 2000, 0))
	b := reportOf(synthResult("bid", 2, 30, 500, 2000, 1000))
	want := map[string]Verdict{"p50": Regression, "p99": Regression, "avg": Regression, "throughput": NoChange}
	for _, d := range Compare(a, b) {
		if d.Verdict != want[d.Metric] {
			t.Errorf("%s: %s (A %.3f B %.3f p %.3g): %s; want %s", d.Metric, d.Verdict, d.A, d.B, d.PValue, d.Reason, want[d.Metric])
		}
		if d.Metric == "p50" && math.Abs(d.Diff-1) > 0.1 {
			t.Errorf("p50 diff %.3f ms, want ~1", d.Diff)
		}
	}
	// And the reverse direction is an improvement.
	for _, d := range Compare(b, a) {
		if d.Metric != "throughput" && d.Verdict != Improvement {
			t.Errorf("reverse %s: %s", d.Metric, d.Verdict)
		}
	}
	var buf bytes.Buffer
	if err := WriteCompare(&buf, a, b, Compare(a, b)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"target", "metric", "verdict", "regression", "no change", "rule:", "bid"} {
		if !strings.Contains(out, s) {
			t.Errorf("compare text lacks %q:\n%s", s, out)
		}
	}
}

func TestCompareShortRunsAndMissingTargets(t *testing.T) {
	a := reportOf(synthResult("bid", 1, 3, 500, 2000, 0), synthResult("win", 1, 30, 100, 500, 0))
	b := reportOf(synthResult("bid", 2, 3, 500, 2000, 5000), synthResult("pixel", 1, 30, 100, 500, 0))
	var got []string
	for _, d := range Compare(a, b) {
		got = append(got, d.Target+"/"+d.Metric+"="+string(d.Verdict))
	}
	want := []string{
		"bid/p50=inconclusive", "bid/p99=inconclusive", "bid/avg=inconclusive", "bid/throughput=no change",
		"win/-=inconclusive", "pixel/-=inconclusive",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func TestMinMannWhitneyP(t *testing.T) {
	for _, c := range []struct {
		n1, n2 int
		want   float64
	}{{4, 4, 2.0 / 70}, {5, 5, 2.0 / 252}, {6, 6, 2.0 / 924}, {1, 1, 1}, {0, 5, 1}, {3, 9, 2.0 / 220}} {
		if got := minMannWhitneyP(c.n1, c.n2); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("minMannWhitneyP(%d, %d) = %v, want %v", c.n1, c.n2, got, c.want)
		}
	}
	// The rule: 5 and 5 samples cannot tell (inconclusive), 6 and 6 can.
	if minMannWhitneyP(5, 5) <= compareAlpha/4 || minMannWhitneyP(6, 6) > compareAlpha/4 {
		t.Errorf("power rule: 5,5 -> %v, 6,6 -> %v against %v", minMannWhitneyP(5, 5), minMannWhitneyP(6, 6), compareAlpha/4)
	}
}

// TestCompareShortRunsInconclusive: a real +1 ms shift measured over 5
// seconds per run is "inconclusive" (the test cannot reach significance
// with 5 samples unless they separate completely), never "no change";
// over 8 seconds it is a regression.
func TestCompareShortRunsInconclusive(t *testing.T) {
	for _, secs := range []int{5, 8} {
		a := reportOf(synthResult("bid", 1, secs, 500, 2000, 0))
		b := reportOf(synthResult("bid", 2, secs, 500, 2000, 1000))
		for _, d := range Compare(a, b) {
			if d.Metric != "p50" {
				continue
			}
			want := Regression
			if secs == 5 {
				want = Inconclusive
			}
			if d.Verdict != want {
				t.Errorf("%d s: p50 %s (n %d,%d, p %.3g): %s, want %s", secs, d.Verdict, d.NA, d.NB, d.PValue, d.Reason, want)
			}
		}
	}
}

func TestObjectiveNoBids(t *testing.T) {
	o := Objective{P99: 5e6, MaxNoBidRatio: 0.01}
	r := &Result{Requests: 1000, Successes: 995, NoBids: 5}
	if why := o.Check(r); why != "" {
		t.Errorf("0.5%% no-bids: %s", why)
	}
	r.Successes, r.NoBids = 500, 500
	if why := o.Check(r); !strings.Contains(why, "no-bids 50.000% >= 1%") {
		t.Errorf("50%% no-bids: %q", why)
	}
	if s := o.String(); !strings.Contains(s, "no-bids < 1%") {
		t.Errorf("String: %q", s)
	}
	if why := (Objective{P99: 5e6}).Check(r); why != "" {
		t.Errorf("unchecked no-bids: %q", why)
	}
}

func TestClassifyWin(t *testing.T) {
	for _, c := range []struct {
		status  int
		outcome string
		want    Outcome
	}{
		{204, "accepted", OK}, {204, "replay", OK}, {204, "", OK}, {200, "", OK},
		{204, "unhandled", NoBid}, {400, "forged", ErrStatus4xx}, {503, "unavailable", ErrStatus5xx},
	} {
		if got := classifyWin(c.status, []byte(c.outcome)); got != c.want {
			t.Errorf("classifyWin(%d, %q) = %v, want %v", c.status, c.outcome, got, c.want)
		}
	}
}
