package pebblestore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rtbd/rtbd/bidder/user"
)

const benchUsers = 10_000

// benchStore is a store with benchUsers users of a typical size (3 groups
// of 20 viewed, 20 recommended, 3 segments), flushed to disk tables so that
// reads go through the block cache as in production.
func benchStore(b *testing.B, opts Options) *Store {
	b.Helper()
	s := openTest(b, opts)
	bw, err := s.NewBulkWriter()
	if err != nil {
		b.Fatal(err)
	}
	var p user.Profile
	for i := 0; i < benchUsers; i++ {
		p.Reset()
		for g := int64(1); g <= 3; g++ {
			var v, r []int64
			for k := int64(0); k < 20; k++ {
				v = append(v, int64(i)*100+g*40+k+1)
				r = append(r, int64(i)*100+g*40+k+21)
			}
			p.Viewed = append(p.Viewed, user.GroupIDs{Group: g, IDs: v})
			p.Recommended = append(p.Recommended, user.GroupIDs{Group: g, IDs: r})
		}
		p.Segments = append(p.Segments, "sports", "high-value", fmt.Sprint("seg-", i%10))
		if err := bw.Put(fmt.Sprint("bench-user-", i), &p); err != nil {
			b.Fatal(err)
		}
	}
	if err := bw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	return s
}

func benchUIDs(prefix string) []string {
	u := make([]string, benchUsers)
	for i := range u {
		u[i] = fmt.Sprint(prefix, i)
	}
	return u
}

// BenchmarkGet: Store.Get with a reused user.Profile, against the raw Pebble
// point lookup of the same keys (the floor without the value cache); the
// nocache runs read Pebble every time.
func BenchmarkGet(b *testing.B) {
	b.Run("cache", func(b *testing.B) { benchGet(b, benchStore(b, Options{})) })
	b.Run("nocache", func(b *testing.B) { benchGet(b, benchStore(b, Options{CacheEntries: -1})) })
}

func benchGet(b *testing.B, s *Store) {
	ctx := context.Background()
	hits, misses := benchUIDs("bench-user-"), benchUIDs("nobody-")
	for _, c := range []struct {
		name string
		uids []string
	}{{"hit", hits}, {"miss", misses}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var p user.Profile
			for i := 0; b.Loop(); i++ {
				if _, err := s.Get(ctx, c.uids[i%benchUsers], &p); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				var p user.Profile
				i := int(n.Add(1)) * 7919
				for pb.Next() {
					i++
					if _, err := s.Get(ctx, c.uids[i%benchUsers], &p); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run(c.name+"/baseline-raw-pebble-get", func(b *testing.B) {
			b.ReportAllocs()
			keys := make([][]byte, benchUsers)
			for i, u := range c.uids {
				keys[i] = appendKey(nil, u)
			}
			for i := 0; b.Loop(); i++ {
				_, closer, err := s.db.Get(keys[i%benchUsers])
				if err == nil {
					closer.Close()
				} else if err != pebble.ErrNotFound {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecordView: the pixel's read-modify-write, on existing users.
func BenchmarkRecordView(b *testing.B) {
	s := benchStore(b, Options{})
	ctx := context.Background()
	uids := benchUIDs("bench-user-")
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := s.RecordView(ctx, uids[i%benchUsers], int64(1+i%3), int64(1+i%97)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(n.Add(1)) * 7919
			for pb.Next() {
				i++
				if err := s.RecordView(ctx, uids[i%benchUsers], int64(1+i%3), int64(1+i%97)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
