package fasthist

import (
	"math"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var buckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.1, 0.25}

var samples = []float64{0, 0.00001, 0.00005, 0.000051, 0.0003, 0.0009, 0.001, 0.0049, 0.02, 0.099, 0.25, 0.3, 7}

// gather returns the families of c, by name.
func gather(t *testing.T, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestSameAsClientGolang checks that a Vec exposes what a client_golang
// histogram of the same name, buckets and label exposes for the same
// observations (made concurrently): count, cumulative buckets, sum.
func TestSameAsClientGolang(t *testing.T) {
	ours := NewVec("ours_seconds", "h", buckets, "stage", "a", "b")
	theirs := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "theirs_seconds", Help: "h", Buckets: buckets}, []string{"stage"})
	theirs.WithLabelValues("a")
	theirs.WithLabelValues("b")
	single := NewVec("single_seconds", "h", buckets, "")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				for _, s := range samples {
					ours.At(g % 2).Observe(s)
					theirs.WithLabelValues([]string{"a", "b"}[g%2]).Observe(s)
					single.At(0).Observe(s)
				}
			}
		}()
	}
	wg.Wait()
	mfs := gather(t, ours, theirs, single)
	o, th, si := mfs["ours_seconds"], mfs["theirs_seconds"], mfs["single_seconds"]
	if o == nil || th == nil || si == nil || o.GetType() != dto.MetricType_HISTOGRAM || len(o.Metric) != 2 || len(si.Metric) != 1 {
		t.Fatalf("families: %v", mfs)
	}
	if len(si.Metric[0].Label) != 0 {
		t.Errorf("single series has labels %v", si.Metric[0].Label)
	}
	for i := range o.Metric {
		a, b := o.Metric[i], th.Metric[i]
		if a.Label[0].GetValue() != b.Label[0].GetValue() {
			t.Fatalf("label %v vs %v", a.Label, b.Label)
		}
		ha, hb := a.GetHistogram(), b.GetHistogram()
		if ha.GetSampleCount() != hb.GetSampleCount() || ha.GetSampleCount() != 2*100*uint64(len(samples)) {
			t.Errorf("%s: count %d, client_golang %d", a.Label[0].GetValue(), ha.GetSampleCount(), hb.GetSampleCount())
		}
		if math.Abs(ha.GetSampleSum()-hb.GetSampleSum()) > 1e-6 {
			t.Errorf("%s: sum %v, client_golang %v", a.Label[0].GetValue(), ha.GetSampleSum(), hb.GetSampleSum())
		}
		if len(ha.Bucket) != len(hb.Bucket) {
			t.Fatalf("%d buckets, client_golang %d", len(ha.Bucket), len(hb.Bucket))
		}
		for j := range ha.Bucket {
			if ha.Bucket[j].GetUpperBound() != hb.Bucket[j].GetUpperBound() || ha.Bucket[j].GetCumulativeCount() != hb.Bucket[j].GetCumulativeCount() {
				t.Errorf("bucket %d: %v <= %v, client_golang %v <= %v", j, ha.Bucket[j].GetCumulativeCount(), ha.Bucket[j].GetUpperBound(),
					hb.Bucket[j].GetCumulativeCount(), hb.Bucket[j].GetUpperBound())
			}
		}
	}
}

func TestObserveAllocs(t *testing.T) {
	h := NewVec("x_seconds", "h", buckets, "").At(0)
	h.Observe(math.NaN()) // ignored
	if c, _, _ := h.snapshot(); c != 0 {
		t.Errorf("NaN counted")
	}
	if n := testing.AllocsPerRun(100, func() { h.Observe(0.0012) }); n != 0 {
		t.Errorf("Observe: %v allocs", n)
	}
}

// BenchmarkObserve compares an observation with client_golang's, serial
// and from parallel goroutines (one histogram shared, as the bid path
// shares its).
func BenchmarkObserve(b *testing.B) {
	ours := NewVec("ours_seconds", "h", buckets, "").At(0)
	theirs := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "theirs_seconds", Help: "h", Buckets: buckets})
	for _, c := range []struct {
		name string
		o    prometheus.Observer
	}{{"fasthist", ours}, {"client_golang", theirs}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.o.Observe(0.0012)
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.o.Observe(0.0012)
				}
			})
		})
	}
}
