package shading_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// roundTrips counts what a go-redis client sends: pipelines (one network
// round trip each) and commands.
type roundTrips struct{ trips, cmds atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.trips.Add(1)
		r.cmds.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.trips.Add(1)
		r.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// cpuTicks is the user plus system CPU time of process pid so far, in
// clock ticks (1/100 s on Linux), from /proc/PID/stat.
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): utime and stime are the 14th and 15th of the line.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, raw)
	}
	return ut + st
}

const clockTicksPerSec = 100 // USER_HZ on Linux

// BenchmarkFleetSync: the fleet sync of one bidder holding 512 and 4,096
// segments against a redis-server (started here; skipped without one),
// at the defaults (5 min slots, 2 h horizon, a Sync every 5 s of
// simulated time, so 60 Syncs cross one slot boundary). The store holds a
// fleet's counts for every segment in every slot of the horizon; the
// bidder loads them (outside the timer, logged), then each timed Sync
// flushes new counts of every segment (active: the worst case of the
// write) or of none (idle: the read-back alone) and reads the fleet's
// back. Per Sync: ns/op, keys asked (segment x slot), redis round trips
// (pipelines and single commands) and commands, and redis-server's CPU
// (utime + stime from /proc, 10 ms ticks: run enough Syncs) in ms and as
// a share of the 5 s interval; B/op and allocs/op are the bidder's. The machine's load moves these figures:
// compare runs made side by side.
func BenchmarkFleetSync(b *testing.B) {
	if _, err := os.Stat(spendtest.RedisServerPath); err != nil {
		b.Skipf("%s not installed: %v", spendtest.RedisServerPath, err)
	}
	r := spendtest.StartRedis(b, spendtest.RedisOptions{})
	var rt roundTrips
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, DialTimeout: time.Second})
	rdb.AddHook(&rt)
	b.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		b.Fatal(err)
	}
	pid := 0
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		b.Fatalf("no process_id in INFO server: %q", info)
	}
	const interval = 5 * time.Second
	for _, n := range []int{512, 4096} {
		for _, active := range []bool{true, false} {
			mode := "idle"
			if active {
				mode = "active"
			}
			b.Run(fmt.Sprintf("segments=%d/%s", n, mode), func(b *testing.B) {
				prefix := fmt.Sprintf("b%d%s:", n, mode)
				st := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
				opts := shading.Options{MaxSegments: 2 * n, Explore: -1, Fleet: &shading.FleetOptions{Interval: interval}}
				s := shading.New(opts)
				now := time.Now()
				fine := fillFleet(b, st, n, now)
				stats, err := s.Load(ctx, st, now)
				if err != nil || stats.Segments != n {
					b.Fatalf("Load: %+v, %v; want %d segments", stats, err, n)
				}
				if b.N > 1 {
					b.Logf("Load of %d segments: %d keys in %d calls, %d entries", n, stats.Keys, stats.Calls, stats.Read)
				}
				var keys, flushed int
				trips0, cmds0 := rt.trips.Load(), rt.cmds.Load()
				cpu0 := cpuTicks(b, pid)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					now = now.Add(interval)
					if active {
						b.StopTimer()
						for _, id := range fine {
							s.Observe(id, 2_000_000, now.Add(-time.Hour), false, 2_500_000, true, now)
						}
						s.Refresh(now) // settles them: pending for the Sync
						b.StartTimer()
					}
					stats, err := s.Sync(ctx, st, now)
					if err != nil {
						b.Fatal(err)
					}
					keys += stats.Keys
					flushed += stats.Flushed
				}
				b.StopTimer()
				cpu := float64(cpuTicks(b, pid)-cpu0) / clockTicksPerSec * 1000 / float64(b.N)
				b.ReportMetric(float64(keys)/float64(b.N), "keys/sync")
				b.ReportMetric(float64(flushed)/float64(b.N), "flushed/sync")
				b.ReportMetric(float64(rt.trips.Load()-trips0)/float64(b.N), "trips/sync")
				b.ReportMetric(float64(rt.cmds.Load()-cmds0)/float64(b.N), "cmds/sync")
				b.ReportMetric(cpu, "redis-cpu-ms/sync")
				b.ReportMetric(100*cpu/float64(interval/time.Millisecond), "redis-cpu-%-of-interval")
				if s.Len() != n {
					b.Fatalf("holding %d segments, want %d", s.Len(), n)
				}
			})
		}
	}
}

// fillFleet writes a fleet's counts into st for n segments (an exchange,
// its publishers and their formats) in every slot of the horizon before
// now, and returns the finest segments (each one's observation counts at
// every level).
func fillFleet(b *testing.B, st shading.Store, n int, now time.Time) []shading.SegmentID {
	b.Helper()
	seen := map[shading.SegmentID]bool{}
	var ids, fine []shading.SegmentID
	for i := 0; len(ids) < n; i++ {
		f := shading.Segment(0, "pub"+strconv.Itoa(i/63), shading.FormatBanner, int64(100+i%63), 250)
		for _, id := range []shading.SegmentID{f.At(shading.LevelExchange), f.At(shading.LevelPublisher), f} {
			if !seen[id] && len(ids) < n {
				seen[id] = true
				ids = append(ids, id)
				if id == f {
					fine = append(fine, f)
				}
			}
		}
	}
	w := int64(shading.DefaultFleetSlot / time.Second)
	horizon := shading.DefaultFleetHalfLives * shading.DefaultHalfLife
	cur := now.Unix() - now.Unix()%w
	for sl := cur - int64(horizon/time.Second) - w; sl <= cur; sl += w {
		counts := make([]shading.SlotCounts, len(ids))
		for i, id := range ids {
			c := shading.SlotCounts{Segment: id, Slot: sl}
			c.N[shading.KindBids][20+i%8] = 90
			c.N[shading.KindWins][20+i%8] = 30
			c.N[shading.KindLosses][20+i%8] = 60
			c.N[shading.KindMins][22+i%8] = 60
			counts[i] = c
		}
		if err := st.AddShading(context.Background(), sl, counts, ids, time.Unix(sl, 0).Add(horizon+time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
	return fine
}
