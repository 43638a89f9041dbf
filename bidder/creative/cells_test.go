package creative

import (
	"bytes"
	"runtime"
	"sync"
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// TestCellCacheSameMarkup: banners rendered through a CellCache are the
// bytes rendered without one, whether the cells are first seen, stored or
// hit, also with a cache so small that products share slots and evict
// each other; the counters add up to the cells rendered.
func TestCellCacheSameMarkup(t *testing.T) {
	for _, tc := range []struct {
		name              string
		products, entries int
	}{{"roomy", 200, 4096}, {"colliding", 48, 1}} { // 48 products on 64 slots
		t.Run(tc.name, func(t *testing.T) {
			ps := products(tc.products)
			ps[7] = evil()
			c := NewCellCache(tc.entries)
			cells := 0
			for round := 0; round < 3; round++ {
				for _, size := range [][2]int{{300, 250}, {728, 90}, {320, 50}} {
					for _, links := range []Linker{nil, testLinks{}, baseLinks{base: "https://bid.example/click/T/"}} {
						b := Banner{W: size[0], H: size[1], Products: ps, Advertiser: "Acme", Links: links}
						want := AppendBanner(nil, &b)
						b.Cells = c
						if got := AppendBanner(nil, &b); !bytes.Equal(got, want) {
							t.Fatalf("round %d %v %T: cached markup differs\n got %s\nwant %s", round, size, links, got, want)
						}
						cells += len(ps)
					}
				}
			}
			hits, misses := c.Stats()
			if hits+misses != int64(cells) {
				t.Errorf("hits %d + misses %d != %d cells", hits, misses, cells)
			}
			// The roomy cache misses each product about twice (the first
			// sighting is only remembered; a product whose two slots both
			// hold others misses again); the 64-slot one misses more, and
			// still hits some.
			if tc.name == "roomy" && (misses < int64(2*len(ps)) || misses > int64(cells/10)) {
				t.Errorf("roomy: %d misses of %d cells, want %d to %d", misses, cells, 2*len(ps), cells/10)
			}
			if tc.name == "colliding" && (misses <= int64(len(ps)) || hits == 0) {
				t.Errorf("colliding: %d hits, %d misses", hits, misses)
			}
		})
	}
}

// TestCellCacheKeyedByPointer: a product with another pointer is another
// entry, even with the same id, so a store's new version of a product
// (new pointer) is rendered anew, never served the old markup.
func TestCellCacheKeyedByPointer(t *testing.T) {
	c := NewCellCache(64)
	old := &catalogpb.Product{ProductId: 1, Title: "Old title", ImageUrl: "https://img.example/1.jpg", PriceMicros: 1_000_000, Currency: "USD"}
	b := Banner{W: 300, H: 250, Products: []*catalogpb.Product{old}, Cells: c}
	for range 3 { // seen, stored, hit
		AppendBanner(nil, &b)
	}
	fresh := &catalogpb.Product{ProductId: 1, Title: "New title", ImageUrl: "https://img.example/1.jpg", PriceMicros: 2_000_000, Currency: "USD"}
	b.Products = []*catalogpb.Product{fresh}
	got := AppendBanner(nil, &b)
	if !bytes.Contains(got, []byte("New title")) || bytes.Contains(got, []byte("Old title")) {
		t.Fatalf("new product rendered with the old markup: %s", got)
	}
	if hits, misses := c.Stats(); hits != 1 || misses != 3 {
		t.Errorf("hits %d misses %d, want 1 and 3", hits, misses)
	}
	var nilCache *CellCache
	if h, m := nilCache.Stats(); h != 0 || m != 0 || NewCellCache(0) != nil {
		t.Error("a nil cache has stats, or NewCellCache(0) is not nil")
	}
}

// TestCellCacheSkipsFreshProducts: products decoded afresh for each
// banner (the long tail a store's hot cache does not keep: a new pointer
// every time) are not stored, bar the doorkeeper's rare false "seen
// before"; a product shown again is stored at its second sighting.
func TestCellCacheSkipsFreshProducts(t *testing.T) {
	c := NewCellCache(4096)
	hot := products(1)[0]
	// All kept alive: a freed product's address could come back as a new
	// product's, which the doorkeeper rightly takes for one seen before.
	var all [][]*catalogpb.Product
	for i := 0; i < 100; i++ {
		ps := append(products(15), hot)
		all = append(all, ps)
		AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Cells: c})
	}
	stored := 0
	for i := range c.slots {
		if e := c.slots[i].Load(); e != nil && e.p != hot {
			stored++
		}
	}
	if stored > 150 { // of 1,500 fresh products
		t.Errorf("%d fresh products stored, want few", stored)
	}
	runtime.KeepAlive(all)
	if hits, _ := c.Stats(); hits != 98 {
		t.Errorf("the product in every banner hit %d times, want 98 (seen, stored, then hits)", hits)
	}
}

// TestCellCacheConcurrent renders the same products from several
// goroutines through one small cache (run with -race).
func TestCellCacheConcurrent(t *testing.T) {
	ps := products(100)
	want := AppendBanner(nil, &Banner{W: 300, H: 250, Products: ps, Links: testLinks{}})
	c := NewCellCache(16)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []byte
			for i := 0; i < 50; i++ {
				dst = AppendBanner(dst[:0], &Banner{W: 300, H: 250, Products: ps, Links: testLinks{}, Cells: c})
				if !bytes.Equal(dst, want) {
					t.Error("concurrent cached render differs")
					return
				}
			}
		}()
	}
	wg.Wait()
}
