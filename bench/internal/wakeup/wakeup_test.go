package wakeup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/rtbd/rtbd/bench/internal/cpuset"
)

func TestMeasure(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	cpus, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	from, to := cpus[0], cpus[len(cpus)-1]
	before := threadSets(t)
	for _, o := range []Options{{From: from, To: to, Samples: 300, Gap: 20 * time.Microsecond}, {From: from, To: from, Samples: 300}} {
		r, err := Measure(context.Background(), o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if r.From != o.From || r.To != o.To || r.Samples != o.Samples {
			t.Errorf("%+v: result %+v", o, r)
		}
		if !(0 < r.P50 && r.P50 <= r.P90 && r.P90 <= r.P99 && r.P99 <= r.Max) {
			t.Errorf("%+v: quantiles out of order: %v", o, r)
		}
		if s := r.String(); !strings.Contains(s, "p99") || !strings.Contains(s, "300 round trips") {
			t.Errorf("String() = %q", s)
		}
		t.Log(r)
	}
	// The pinned threads got their sets back: every thread of this
	// process may run where all of them could before.
	want := ""
	for _, set := range before {
		if want != "" && set != want {
			t.Fatalf("threads differ before Measure: %v", before)
		}
		want = set
	}
	for tid, set := range threadSets(t) {
		if set != want {
			t.Errorf("thread %d left on CPUs %s, before Measure all were on %s", tid, set, want)
		}
	}
}

// threadSets reads each thread's Cpus_allowed_list (through procfs), by
// thread id.
func threadSets(t *testing.T) map[int]string {
	threads, err := procfs.AllThreads(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sets := map[int]string{}
	for _, th := range threads {
		st, err := th.NewStatus()
		if err != nil {
			continue // the thread ended
		}
		if len(st.CpusAllowedList) == 0 {
			t.Fatalf("thread %d: no Cpus_allowed_list in its status", th.PID)
		}
		sets[th.PID] = fmt.Sprint(st.CpusAllowedList)
	}
	return sets
}

func TestMeasureInvalid(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{From: -1}, "from: CPU -1"},
		{Options{To: 1 << 20}, "to: CPU 1048576"},
		{Options{Samples: -1}, "samples"},
		{Options{Samples: MaxSamples + 1}, "samples"},
		{Options{Gap: -time.Second}, "gap"},
		{Options{Gap: MaxGap + 1}, "gap"},
	} {
		_, err := Measure(context.Background(), c.o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want ErrInvalid naming %q", c.o, err, c.want)
		}
	}
}

func TestMeasureCancelled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cpus, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	_, err = Measure(ctx, Options{From: cpus[0], To: cpus[0], Samples: 10})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The echo thread stopped too: no goroutine is left behind.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMeasureUnsupported(t *testing.T) {
	if runtime.GOOS == "linux" {
		t.Skip("pinning works here")
	}
	if _, err := Measure(context.Background(), Options{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}
