package catalog

import "testing"

// dirtyPool hands out buffers of the length asked for, of their class's
// capacity, and reuses them without clearing.
func TestDirtyPool(t *testing.T) {
	p := &dirtyPool{}
	for _, c := range []struct{ n, cap int }{{0, 1 << 10}, {1, 1 << 10}, {1 << 10, 1 << 10}, {1<<10 + 1, 2 << 10},
		{4700, 8 << 10}, {16 << 10, 16 << 10}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1}} {
		b := p.Get(c.n)
		if len(*b) != c.n || cap(*b) != c.cap {
			t.Errorf("Get(%d): len %d cap %d, want %d and %d", c.n, len(*b), cap(*b), c.n, c.cap)
		}
		p.Put(b)
	}
	b := p.Get(3000)
	(*b)[0], (*b)[2999] = 7, 9
	p.Put(b)
	// sync.Pool may drop what it holds (a GC); whenever it gives b back,
	// it gives it back unchanged.
	for range 100 {
		if c := p.Get(4000); &(*c)[0] == &(*b)[0] {
			if (*c)[0] != 7 || (*c)[2999] != 9 {
				t.Fatalf("reused buffer changed: %d %d", (*c)[0], (*c)[2999])
			}
			return
		}
	}
	t.Log("buffer never reused (the pool dropped it)")
}

// Buffers not made by the pool are not taken in.
func TestDirtyPoolForeign(t *testing.T) {
	p := &dirtyPool{}
	for _, n := range []int{100, 3000, 2 << 20} {
		b := make([]byte, n)
		p.Put(&b)
	}
	for range 10 {
		if b := p.Get(2000); cap(*b) != 2<<10 {
			t.Fatalf("Get(2000) cap %d after foreign Puts, want 2048", cap(*b))
		}
	}
}
