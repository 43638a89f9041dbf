package spend_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

// BenchmarkAdd measures win notices absorbed per second by one Writer
// (b.RunParallel, 10 campaigns with frequency caps, 10k users) and the store
// writes (Flush calls) they cause, against the unbuffered baseline that
// writes every notice to the store as it comes, on the same store kind in
// the same run. Metrics: adds/s, writes/s, adds/write.
//
//	go test -run '^$' -bench BenchmarkAdd -benchtime 2s ./bidder/spend/
func BenchmarkAdd(b *testing.B) {
	var users [10000]string
	for i := range users {
		users[i] = "user-" + strconv.Itoa(i)
	}
	var camps [10]spend.CampaignBudget
	for i := range camps {
		camps[i] = spend.CampaignBudget{ID: "camp-" + strconv.Itoa(i), DailyMicros: 1 << 50, FreqCap: 1 << 20, FreqPeriod: 24 * time.Hour}
	}
	r := spendtest.StartRedis(b, spendtest.RedisOptions{})
	stores := map[string]func(b *testing.B) spend.Store{
		"pebble": func(b *testing.B) spend.Store { return memPebble(b) },
		"redis": func(b *testing.B) spend.Store {
			return redisstore.New(redisClient(b, r.Addr), redisstore.Options{Prefix: "b" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"})
		},
	}
	for _, kind := range []string{"pebble", "redis"} {
		b.Run("buffered/"+kind, func(b *testing.B) {
			cs := newCounting(stores[kind](b))
			w, err := spend.NewWriter(cs, spend.Options{})
			if err != nil {
				b.Fatal(err)
			}
			w.SetCampaigns(camps[:])
			el := timeParallel(b, func(i uint64) error {
				return w.Add(camps[i%10].ID, users[i%10000], 1500, time.Now())
			})
			b.StopTimer()
			closeWriter(b, w) // the final flush is not timed but its writes are counted
			report(b, el, cs.flushes.Load())
		})
		b.Run("unbuffered/"+kind, func(b *testing.B) {
			cs := newCounting(stores[kind](b))
			var seq atomic.Uint64
			el := timeParallel(b, func(i uint64) error {
				now := time.Now()
				win := now.Truncate(24 * time.Hour)
				_, err := cs.Flush(context.Background(), []spend.Delta{{
					ID: "u:" + strconv.FormatUint(seq.Add(1), 36), Campaign: camps[i%10].ID, Day: now.UTC().Format(time.DateOnly), Micros: 1500, Imps: 1,
					Freq: []spend.FreqDelta{{User: users[i%10000], Window: win.Unix(), Count: 1, Expires: win.Add(25 * time.Hour)}},
				}})
				return err
			})
			report(b, el, cs.flushes.Load())
		})
	}
}

// timeParallel reports allocations, resets the timer and runs op b.N times
// over b.RunParallel, each goroutine counting i up from its own start; it
// returns the time taken. An error from op fails b.
func timeParallel(b *testing.B, op func(i uint64) error) time.Duration {
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(1) * 7919
		for pb.Next() {
			i++
			if err := op(i); err != nil {
				b.Error(err)
				return
			}
		}
	})
	return time.Since(start)
}

func report(b *testing.B, el time.Duration, writes int64) {
	b.ReportMetric(float64(b.N)/el.Seconds(), "adds/s")
	b.ReportMetric(float64(writes)/el.Seconds(), "writes/s")
	if writes > 0 {
		b.ReportMetric(float64(b.N)/float64(writes), "adds/write")
	}
}
