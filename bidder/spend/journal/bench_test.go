//go:build unix

package journal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/internal/cputime"
)

// BenchmarkAppend: concurrent Appends (64 goroutines on 2 cores, like the
// notice benchmark's connections) on a real disk; reports the process CPU
// per Append besides ns/op (on a shared machine CPU is steadier than wall
// time, and with Pebble grouping the fsyncs ns/op is mostly the wait).
func BenchmarkAppend(b *testing.B) {
	j, err := Open(filepath.Join(b.TempDir(), "j"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.SetParallelism(32)
	b.ReportAllocs()
	c0 := cputime.Self()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := notice(1)
		for pb.Next() {
			if err := j.Append("campaign", &n); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cputime.Self()-c0)/float64(time.Microsecond)/float64(b.N), "cpu-us/append")
}
