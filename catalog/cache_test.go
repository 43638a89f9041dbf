package catalog

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

func product(g, id int64) *cached {
	return &cached{p: catalogpb.Product{ProductGroupId: g, ProductId: id}}
}

// checkGet fails unless the cache holds exactly what want says for (g, id):
// absent (want false), or a product of that key (or cached absence when
// nilOK).
func checkGet(t *testing.T, c *hotCache, g, id int64, want bool) {
	t.Helper()
	p, ok := c.get(g, id)
	switch {
	case ok != want:
		t.Fatalf("get(%d, %d): in cache %v, want %v", g, id, ok, want)
	case ok && p != nil && (p.p.ProductGroupId != g || p.p.ProductId != id):
		t.Fatalf("get(%d, %d) = product %d/%d", g, id, p.p.ProductGroupId, p.p.ProductId)
	}
}

func TestHotCacheBasics(t *testing.T) {
	c := newHotCache(100)
	checkGet(t, c, 1, 1, false)
	c.put(1, 1, product(1, 1))
	c.put(1, 2, nil) // absence is cached too
	c.put(2, 1, product(2, 1))
	checkGet(t, c, 1, 1, true)
	checkGet(t, c, 2, 1, true)
	if p, ok := c.get(1, 2); !ok || p != nil {
		t.Fatalf("cached absence: %v, %v", p, ok)
	}
	// A put of a present key replaces its product in place.
	newer := product(1, 1)
	c.put(1, 1, newer)
	if p, _ := c.get(1, 1); p != newer {
		t.Fatal("put of a present key did not replace the product")
	}
	if _, _, n := c.stats(); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	if newHotCache(0) != nil {
		t.Fatal("newHotCache(0) is not nil (the cache off)")
	}
}

// TestHotCacheSecondChance: once full, a new key gets in at its second
// sighting only, and takes the slot of an entry not read since the hand
// last passed, never that of one read meanwhile.
func TestHotCacheSecondChance(t *testing.T) {
	const size = 100 // one shard
	c := newHotCache(size)
	if len(c.shards) != 1 {
		t.Fatalf("%d shards, want 1", len(c.shards))
	}
	for id := range int64(size) {
		c.put(1, id, product(1, id))
	}
	// Read the even ids: they have a second chance.
	for id := int64(0); id < size; id += 2 {
		checkGet(t, c, 1, id, true)
	}
	c.put(1, 1000, product(1, 1000)) // first sighting: not admitted
	checkGet(t, c, 1, 1000, false)
	c.put(1, 1000, product(1, 1000)) // second: admitted
	checkGet(t, c, 1, 1000, true)
	// The hand cleared the even ids' flags and took id 1, the first odd.
	checkGet(t, c, 1, 1, false)
	for id := int64(0); id < size; id += 2 {
		checkGet(t, c, 1, id, true)
	}
	if _, _, n := c.stats(); n != size {
		t.Fatalf("%d entries, want %d", n, size)
	}
}

// TestHotCacheChurn runs many evictions (every key put twice, from a key
// space 20 times the cache) through a small cache, which rebuilds its
// index many times, and checks against a model after each put: exactly
// the model's keys are in, each with its own product.
func TestHotCacheChurn(t *testing.T) {
	const size, keys = 64, 1280
	c := newHotCache(size)
	s := &c.shards[0]
	in := map[int64]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	rebuilds := 0
	for step := range 20_000 {
		id := int64(r.IntN(keys))
		before := *s.idx.Load()
		c.put(3, id, product(3, id))
		c.put(3, id, product(3, id))
		if after := *s.idx.Load(); &after[0] != &before[0] {
			rebuilds++
		}
		// Recompute the model from the slots (what the cache says it
		// holds) and check it against get for every key.
		clear(in)
		for i := range s.n {
			e := s.slots[i].e.Load()
			if in[e.key.id] {
				t.Fatalf("step %d: key %d in two slots", step, e.key.id)
			}
			in[e.key.id] = true
		}
		if step%97 == 0 || step > 19_900 {
			for k := range int64(keys) {
				checkGet(t, c, 3, k, in[k])
			}
		}
		if !in[id] && s.n < s.cap {
			t.Fatalf("step %d: key %d not admitted while the cache had room", step, id)
		}
	}
	if s.n != size || len(in) != size {
		t.Fatalf("%d slots used, %d keys, want %d", s.n, len(in), size)
	}
	if rebuilds == 0 {
		t.Fatal("no index rebuild in 20,000 steps: the test did not reach it")
	}
	t.Logf("%d index rebuilds", rebuilds)
}

// TestHotCacheConcurrent: readers never see another key's product while
// writers churn the cache (run with -race).
func TestHotCacheConcurrent(t *testing.T) {
	const keys = 5000
	c := newHotCache(512)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var hits atomic.Int64
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range 100_000 {
				id := int64(r.IntN(keys))
				c.put(int64(id%3), id, product(int64(id%3), id))
			}
			stop.Store(true)
		}()
	}
	for rd := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 9))
			for !stop.Load() {
				id := int64(r.IntN(keys))
				g := int64(id % 3)
				if p, ok := c.get(g, id); ok {
					hits.Add(1)
					if p == nil || p.p.ProductGroupId != g || p.p.ProductId != id {
						t.Errorf("get(%d, %d) = %+v", g, id, p)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if hits.Load() == 0 {
		t.Fatal("no hit at all: the readers did not race the writers")
	}
}

// wired is an in-stock product with its encoding kept, as a catalog
// node's cache holds it.
func wired(g, id int64) *cached {
	c := &cached{p: catalogpb.Product{ProductGroupId: g, ProductId: id, InStock: true, Title: "t"}}
	c.aliasWire()
	return c
}

// touch reads the encodings of cached products and nothing of absent
// ones, and is safe beside writers (run with -race).
func TestHotCacheTouch(t *testing.T) {
	c := newHotCache(512)
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	if n := c.touch(1, ids); n != 0 {
		t.Fatalf("touch of an empty cache = %d, want 0", n)
	}
	for _, id := range ids {
		c.put(1, id, wired(1, id))
	}
	if n := c.touch(1, ids); n == 0 {
		t.Fatal("touch of cached products read none of their encodings")
	}
	if n := c.touch(2, ids); n != 0 {
		t.Fatalf("touch of another group's ids = %d, want 0", n)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(1, 7))
		for range 50_000 {
			id := int64(r.IntN(5000))
			c.put(1, id, wired(1, id))
		}
		stop.Store(true)
	}()
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(2, 9))
		batch := make([]int64, 40) // more than touchMax: the rest is ignored
		for !stop.Load() {
			for i := range batch {
				batch[i] = int64(r.IntN(5000))
			}
			c.touch(1, batch)
		}
	}()
	wg.Wait()
}
