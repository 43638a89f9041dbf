package remote

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// benchCallers is the number of concurrent callers of the parallel runs.
const benchCallers = 64

// Baselines and the client, side by side, against the same in-process test
// nodes on loopback:
//
//	empty-grpc:   grpc.health.v1 Check on one plain ClientConn (the empty call)
//	raw-catalog:  GetProductMasters through the generated client, one plain ClientConn
//	client-1node: GetProductMasters through Client, 1 node (ConnsPerNode 2)
//	client-3node: GetProductMasters through Client, 3 nodes round-robin
//
// Compare ns/op within one run (the machine is shared and noisy). The serial
// runs also report the median and p99 round trip in microseconds.
func BenchmarkEmptyCall(b *testing.B) {
	cases := benchCases(b)
	for _, tc := range cases {
		b.Run(tc.name+"/serial", func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if err := tc.call(ctx); err != nil {
					b.Fatal(err)
				}
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(start))
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
			}
		})
		b.Run(tc.name+"/parallel64", func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			b.SetParallelism((benchCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := tc.call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

type benchCase struct {
	name string
	call func(ctx context.Context) error
}

// benchCases starts three nodes and returns the four calls compared.
func benchCases(b *testing.B) []benchCase {
	nodes := startNodes(b, "a", "b", "c")
	raw, err := grpc.NewClient("passthrough:///"+nodes[0].addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	hc := healthpb.NewHealthClient(raw)
	cat := catalogpb.NewCatalogClient(raw)
	one := newTestClient(b, Options{Target: staticTarget(nodes[0])})
	three := newTestClient(b, Options{Target: staticTarget(nodes...)})
	warmUp(b, one, nodes[0])
	warmUp(b, three, nodes...)
	r := req(groupOK)
	hreq := &healthpb.HealthCheckRequest{}
	return []benchCase{
		{"empty-grpc", func(ctx context.Context) error { _, err := hc.Check(ctx, hreq); return err }},
		{"raw-catalog", func(ctx context.Context) error { _, err := cat.GetProductMasters(ctx, r); return err }},
		{"client-1node", func(ctx context.Context) error { _, err := one.GetProductMasters(ctx, r); return err }},
		{"client-3node", func(ctx context.Context) error { _, err := three.GetProductMasters(ctx, r); return err }},
	}
}

// BenchmarkThroughputRatio measures the calls/s of 64 concurrent callers for
// each case in short interleaved rounds (one round per b.N, order rotated),
// so that the noise of a shared machine hits every case alike, and reports
// the median calls/s of each and the ratio of the client's to the empty
// gRPC call's. Run with e.g. -benchtime=15x.
func BenchmarkThroughputRatio(b *testing.B) {
	cases := benchCases(b)
	const round = 250 * time.Millisecond
	rates := make([][]float64, len(cases))
	r := 0
	for b.Loop() {
		for k := range cases {
			i := (k + r) % len(cases)
			rates[i] = append(rates[i], measureRate(b, cases[i].call, benchCallers, round))
		}
		r++
	}
	med := make([]float64, len(cases))
	for i, c := range cases {
		slices.Sort(rates[i])
		med[i] = rates[i][len(rates[i])/2]
		b.ReportMetric(med[i], c.name+"-calls/s")
	}
	b.ReportMetric(med[3]/med[0], "client3/empty")
	b.ReportMetric(med[1]/med[0], "raw/empty")
	b.ReportMetric(0, "ns/op") // not meaningful here
}

// measureRate runs callers goroutines calling f for d and returns calls/s.
func measureRate(b *testing.B, f func(context.Context) error, callers int, d time.Duration) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if err := f(ctx); err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

// BenchmarkClientNoDeadline is the path of a caller whose ctx has no
// deadline: the client adds CallTimeout (a timer per call).
func BenchmarkClientNoDeadline(b *testing.B) {
	n := startNode(b, "a")
	c := newTestClient(b, Options{Target: staticTarget(n), CallTimeout: time.Second})
	warmUp(b, c, n)
	r := req(groupOK)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.GetProductMasters(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}
