package remote

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// BenchmarkNearCacheGetLarge is one get of a random id from a near cache
// holding 200,000 products, far more than the CPU's caches: the cost of a
// hit as a bidder with many users sees it, mostly memory latency.
func BenchmarkNearCacheGetLarge(b *testing.B) {
	const n = 200_000
	c := newNearCache(1<<30, 30*time.Second, 5*time.Minute, nil)
	vs := &verState{v: &catalogpb.IndexVersion{Generation: 1, ContentHash: 0xA}, epoch: 1}
	c.ver.Store(vs)
	now := c.now()
	for id := int64(1); id <= n; id++ {
		c.put(ncKey{1, id}, &catalogpb.Product{ProductId: id, ProductGroupId: 1, InStock: true}, 100, 0xA, now)
	}
	keys := make([]ncKey, 1<<16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i] = ncKey{1, 1 + rng.Int64N(n)}
	}
	b.ResetTimer()
	i, hits := 0, 0
	for b.Loop() {
		if p, ok := c.get(keys[i&(len(keys)-1)], now, vs); ok && p.InStock {
			hits++
		}
		i++
	}
	if hits != i {
		b.Fatalf("%d hits of %d gets", hits, i)
	}
}
