package bench

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bench/internal/proc"
)

// TestApplyHostWindows feeds the watcher readings a second apart (the
// third second with half of two CPUs' time stolen) and checks that each
// timeline second gets the steal of its own interval, and the run the
// shares of the whole.
func TestApplyHostWindows(t *testing.T) {
	start := time.Unix(1000, 0)
	// Each CPU: 100 ticks a second. Seconds 0 and 1: 60 busy, 40 idle;
	// second 2: 20 busy, 30 idle, 50 stolen.
	per := []proc.CPUTimes{{User: 60, Idle: 40}, {User: 60, Idle: 40}, {User: 20, Idle: 30, Steal: 50}}
	var cur [2]proc.CPUTimes
	cur[1].CPU = 1
	wa := &watcher{}
	at := start
	for i := 0; i <= len(per); i++ {
		wa.host = append(wa.host, hostReading{at: at, cpus: []proc.CPUTimes{cur[0], cur[1]}})
		if i == len(per) {
			break
		}
		for c := range cur {
			p := per[i]
			cur[c].User += p.User
			cur[c].Idle += p.Idle
			cur[c].Steal += p.Steal
		}
		at = at.Add(time.Second + time.Duration(i)*3*time.Millisecond) // a ticker a little late
	}
	r := &Result{Start: start, Timeline: []Second{{T: 0}, {T: 1}, {T: 2}}}
	wa.applyHost(r)
	if r.Host == nil {
		t.Fatal("no Host")
	}
	for i, want := range []float64{0, 0, 50} {
		if got := r.Timeline[i].StealPct; got != want {
			t.Errorf("second %d: steal %.1f%%, want %.1f%%", i, got, want)
		}
	}
	h := r.Host
	// 600 ticks: busy 60+60+20 per CPU = 140/300, idle 110/300, steal 50/300.
	if h.CPUs != 2 || h.BusyPct != 46.7 || h.IdlePct != 36.7 || h.StealPct != 16.7 || len(h.PerCPU) != 2 || h.PerCPU[1].StealPct != 16.7 {
		t.Errorf("host %+v", h)
	}
	// Fewer than two readings: nothing.
	r2 := &Result{Start: start, Timeline: []Second{{T: 0}}}
	(&watcher{host: wa.host[:1]}).applyHost(r2)
	if r2.Host != nil {
		t.Errorf("one reading gave %+v", r2.Host)
	}
}

// TestRunReportsHost: a real open-loop run on Linux reports the host's
// CPUs, with shares that add up to the whole.
func TestRunReportsHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux")
	}
	tg := TargetFunc("h", func(context.Context, *Worker) Outcome { return OK })
	r, err := RunOpenLoop(context.Background(), tg, OpenLoopOptions{Rate: 200, Duration: 2 * time.Second, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Host
	if h == nil || h.CPUs == 0 || len(h.PerCPU) != h.CPUs {
		t.Fatalf("host %+v", h)
	}
	if sum := h.BusyPct + h.IdlePct + h.StealPct; math.Abs(sum-100) > 0.5 {
		t.Errorf("busy %.1f + idle %.1f + steal %.1f = %.1f, want 100", h.BusyPct, h.IdlePct, h.StealPct, sum)
	}
	if len(r.Timeline) < 2 {
		t.Fatalf("timeline %d seconds", len(r.Timeline))
	}
}

// TestFindMaxRateStealRetries: a step that fails while the host steals its
// CPUs is re-run (up to StealRetries) instead of ending the search, and
// is marked so in the steps; without StealRetries the steal is only
// reported. The steal is a fake /proc/stat (no hypervisor to ask here).
func TestFindMaxRateStealRetries(t *testing.T) {
	var mu sync.Mutex
	var stealing bool
	var cum proc.CPUTimes
	readHostCPU = func() ([]proc.CPUTimes, error) {
		mu.Lock()
		defer mu.Unlock()
		cum.User += 10
		if stealing {
			cum.Steal += 10
		} else {
			cum.Idle += 10
		}
		return []proc.CPUTimes{cum}, nil
	}
	t.Cleanup(func() { readHostCPU = proc.HostCPUs })
	stalling := func() Target {
		var calls atomic.Int64
		return TargetFunc("stolen", func(context.Context, *Worker) Outcome {
			n := calls.Add(1)
			// The second step (calls 51-150): the host steals from its
			// 61st call until the next step, and the step fails.
			stolen := n > 60 && n <= 150
			mu.Lock()
			stealing = stolen
			mu.Unlock()
			if stolen {
				return ErrStatus5xx
			}
			return OK
		})
	}
	o := FindMaxRateOptions{Objective: Objective{P99: time.Second}, StartRate: 100, MaxRate: 800,
		Precision: 0.2, StepDuration: 500 * time.Millisecond, Load: OpenLoopOptions{Timeout: 10 * time.Second}}
	plain, err := FindMaxRate(context.Background(), stalling(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s := plain.Steps[1]; s.Rate != 200 || s.Pass || s.StealPct < StealWarnPct {
		t.Fatalf("without StealRetries: step 2 = %+v, want 200 failing with its steal reported", s)
	}
	if plain.MaxRate >= 200 {
		t.Fatalf("without StealRetries: max rate %v, want below the stolen 200", plain.MaxRate)
	}
	o.StealRetries = 1
	retried, err := FindMaxRate(context.Background(), stalling(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range retried.Steps {
		t.Logf("rate %.0f pass %v steal %.1f%% %s", s.Rate, s.Pass, s.StealPct, s.Reason)
	}
	if s := retried.Steps[1]; s.Rate != 200 || s.Pass || !strings.Contains(s.Reason, "the host stole") {
		t.Fatalf("step 2 = %+v, want the stolen 200 marked for a re-run", s)
	}
	if s := retried.Steps[2]; s.Rate != 200 || !s.Pass {
		t.Fatalf("step 3 = %+v, want 200 again, passing", s)
	}
	if retried.MaxRate != 800 {
		t.Fatalf("with StealRetries 1: max rate %v, want the cap 800", retried.MaxRate)
	}
}
