//go:build unix

package journal

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
	c0 := cpu()
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
	b.ReportMetric(float64(cpu()-c0)/float64(time.Microsecond)/float64(b.N), "cpu-us/append")
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
