// Package catalogtest is the conformance suite every product store (the
// local index, the remote client) must pass, with the fixture catalog it
// runs against. It is a test helper package: production code never imports
// it.
package catalogtest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Fixture groups and ids, after the talk's example request.
const (
	TalkGroup     = 1122 // products 101..110; 105 out of stock
	OtherGroup    = 7    // holds product 999
	BulkGroup     = 1    // products 1..200, every 10th out of stock
	FullGroup     = 2000 // product 1: every field set, non-ASCII text
	UnknownGroup  = 424242
	OutOfStockID  = 105
	OtherGroupID  = 999
	MissingID     = 998
	bulkProducts  = 200
	talkFirst     = 101
	talkLast      = 110
	fullProductID = 1
)

// Products returns the fixture catalog.
func Products() []*catalogpb.Product {
	var ps []*catalogpb.Product
	mk := func(g, id int64, inStock bool) *catalogpb.Product {
		return &catalogpb.Product{
			ProductId: id, ProductGroupId: g,
			Title:    fmt.Sprintf("Product %d of group %d", id, g),
			ImageUrl: fmt.Sprintf("https://img.example.com/%d/%d.jpg", g, id),
			Width:    300, Height: 300,
			LandingUrl:  fmt.Sprintf("https://shop.example.com/%d/item/%d", g, id),
			PriceMicros: 1_000_000 * id, Currency: "JPY",
			Category: "Apparel", Brand: "Acme", InStock: inStock, UpdatedAt: 1_764_460_800 + id,
		}
	}
	for id := int64(talkFirst); id <= talkLast; id++ {
		ps = append(ps, mk(TalkGroup, id, id != OutOfStockID))
	}
	ps = append(ps, mk(OtherGroup, OtherGroupID, true))
	for id := int64(1); id <= bulkProducts; id++ {
		ps = append(ps, mk(BulkGroup, id, id%10 != 0))
	}
	ps = append(ps, FullProduct())
	return ps
}

// FullProduct is the fixture product with every field set.
func FullProduct() *catalogpb.Product {
	return &catalogpb.Product{
		ProductId: fullProductID, ProductGroupId: FullGroup,
		Title:       "オーガニックコットン Tシャツ <b>\"Navy\"</b> & more",
		ImageUrl:    "https://img.example.com/full/1.jpg?w=600&h=600",
		Width:       600,
		Height:      628,
		LandingUrl:  "https://shop.example.com/item/1?utm_source=rtbd&q=%E2%9C%93",
		PriceMicros: 1_980_000_000, SalePriceMicros: 1_480_000_000,
		Currency: "JPY", Category: "Apparel & Accessories > Clothing > Shirts & Tops",
		Brand: "Brand ✓", InStock: true, UpdatedAt: 1_764_460_800,
		Description: "Soft, breathable.\nMachine washable.",
	}
}

// WriteFixture builds and publishes the fixture catalog in dir, with the
// similar lists of SimilarLists.
func WriteFixture(t testing.TB, dir string) {
	t.Helper()
	publish(t, dir, func(b *catalog.Builder) {
		for _, p := range Products() {
			if err := b.Put(p); err != nil {
				t.Fatal(err)
			}
		}
		w, err := b.NewSimilarWriter()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range SimilarLists() {
			if err := w.Add(l.Group, l.ID, l.List); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
	})
}

// SimilarList is a fixture product's similar list.
type SimilarList struct {
	Group, ID int64
	List      []catalog.Similar
}

// SimilarLists returns the fixture's similar lists, in key order: 101
// (103, the out-of-stock 105, 104), 102 (104, 101, 106), and products 1
// and 2 of BulkGroup, each listing the 15 products from 30 on.
func SimilarLists() []SimilarList {
	out := []SimilarList{
		{TalkGroup, 101, []catalog.Similar{{ID: 103, Score: 900_000}, {ID: OutOfStockID, Score: 800_000}, {ID: 104, Score: 500_000}}},
		{TalkGroup, 102, []catalog.Similar{{ID: 104, Score: 700_000}, {ID: 101, Score: 600_000}, {ID: 106, Score: 100_000}}},
	}
	for id := int64(1); id <= 2; id++ {
		var l []catalog.Similar
		for s := int64(30); s < 45; s++ {
			l = append(l, catalog.Similar{ID: s, Score: uint32(1000 - s)})
		}
		out = append(out, SimilarList{BulkGroup, id, l})
	}
	slices.SortFunc(out, func(a, b SimilarList) int {
		if a.Group != b.Group {
			return cmp.Compare(a.Group, b.Group)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// WriteCatalog builds a catalog version of ps in dir, publishes it and
// returns its name.
func WriteCatalog(t testing.TB, dir string, ps []*catalogpb.Product) string {
	t.Helper()
	return publish(t, dir, func(b *catalog.Builder) {
		for _, p := range ps {
			if err := b.Put(p); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// publish builds a catalog version in dir (holding its lock) with fill,
// publishes it and returns its name.
func publish(tb testing.TB, dir string, fill func(*catalog.Builder)) string {
	tb.Helper()
	lock, err := catalog.LockDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	defer lock.Close()
	b, err := catalog.NewBuilder(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	fill(b)
	name, err := b.Finish()
	if err != nil {
		tb.Fatal(err)
	}
	if err := catalog.Publish(dir, name); err != nil {
		tb.Fatal(err)
	}
	return name
}

// Client returns a Catalog client on a plaintext gRPC connection to addr
// (a node or server on loopback), closed when t ends.
func Client(t testing.TB, addr string) catalogpb.CatalogClient {
	t.Helper()
	return catalogpb.NewCatalogClient(Conn(t, addr))
}
