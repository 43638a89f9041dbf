package creative

import (
	"bytes"
	"sync"
	"testing"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// TestCellCacheSameMarkup: banners rendered through a CellCache are the
// bytes rendered without one, on the first render (misses), the second
// (hits) and with a cache so small that products share slots and evict
// each other; the counters add up to the cells rendered.
func TestCellCacheSameMarkup(t *testing.T) {
	ps := products(200)
	ps[7] = evil()
	for _, tc := range []struct {
		name    string
		entries int
	}{{"roomy", 4096}, {"colliding", 1}} {
		t.Run(tc.name, func(t *testing.T) {
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
			// 200 products: the roomy cache misses each about once (a
			// product whose two slots both hold others misses again); the
			// 64-slot one misses more, and still hits some.
			if tc.name == "roomy" && (misses < int64(len(ps)) || misses > int64(cells/20)) {
				t.Errorf("roomy: %d misses of %d cells, want %d to %d", misses, cells, len(ps), cells/20)
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
	AppendBanner(nil, &b)
	fresh := &catalogpb.Product{ProductId: 1, Title: "New title", ImageUrl: "https://img.example/1.jpg", PriceMicros: 2_000_000, Currency: "USD"}
	b.Products = []*catalogpb.Product{fresh}
	got := AppendBanner(nil, &b)
	if !bytes.Contains(got, []byte("New title")) || bytes.Contains(got, []byte("Old title")) {
		t.Fatalf("new product rendered with the old markup: %s", got)
	}
	if hits, misses := c.Stats(); hits != 0 || misses != 2 {
		t.Errorf("hits %d misses %d, want 0 and 2", hits, misses)
	}
	var nilCache *CellCache
	if h, m := nilCache.Stats(); h != 0 || m != 0 || NewCellCache(0) != nil {
		t.Error("a nil cache has stats, or NewCellCache(0) is not nil")
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
