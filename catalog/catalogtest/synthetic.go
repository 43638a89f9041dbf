package catalogtest

import (
	"strconv"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/workload"
)

// SyntheticProduct returns product i (0-based) of a synthetic catalog with
// groups product groups: id i+1 and group 1+i%groups (the id layout of
// `rtbd gen`'s feeds, which Workload relies on), strings of a shop's sizes
// (about 300 bytes encoded), a list price and, on one product in five, a
// sale price; one product in twenty is out of stock. The same (i, groups)
// always give the same product.
func SyntheticProduct(i, groups int) *catalogpb.Product {
	if groups <= 0 {
		groups = 1
	}
	id, group := int64(i+1), int64(1+i%groups)
	h := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	h ^= h >> 29
	pick := func(list []string) string {
		h = h*6364136223846793005 + 1442695040888963407
		return list[h>>33%uint64(len(list))]
	}
	brand, adj, noun, color := pick(synthBrands), pick(synthAdjectives), pick(synthNouns), pick(synthColors)
	g, n := strconv.FormatInt(group, 10), strconv.FormatInt(id, 10)
	price := int64(1_000_000 + (h>>20)%200*500_000) // 1.00 .. 100.50
	p := &catalogpb.Product{
		ProductId:      id,
		ProductGroupId: group,
		Title:          brand + " " + adj + " " + noun + " - " + color + ", M",
		Description:    adj + " " + noun + " by " + brand + ", in " + color + ". Machine washable; ships in two business days.",
		ImageUrl:       "https://img.example-shop.com/p/" + g + "/" + n + ".jpg",
		Width:          600,
		Height:         600,
		LandingUrl:     "https://www.example-shop.com/g/" + g + "/item/" + n + "?utm_source=rtbd",
		PriceMicros:    price,
		Currency:       "USD",
		Category:       "Apparel & Accessories > Clothing > " + noun + "s",
		Brand:          brand,
		InStock:        i%20 != 19,
		UpdatedAt:      1_764_547_200 + int64(i%86_400),
	}
	if i%5 == 4 {
		p.SalePriceMicros = price * 8 / 10
	}
	return p
}

var (
	synthBrands     = []string{"Northwind", "Acme Outfitters", "Blue Harbor", "Kitsune", "Maple & Oak", "Sora"}
	synthAdjectives = []string{"Organic Cotton", "Lightweight", "Classic", "Recycled", "Merino Wool", "Stretch"}
	synthNouns      = []string{"Crew T-Shirt", "Hoodie", "Chino", "Rain Jacket", "Polo", "Cardigan", "Sweater"}
	synthColors     = []string{"Navy", "Black", "Heather Grey", "Olive", "Sand", "Burgundy"}
)

// BuildSynthetic builds and publishes, in dir, the n products of
// SyntheticProduct in groups groups through the bulk (SST) path: group by
// group, ids ascending, one table per million products.
func BuildSynthetic(tb testing.TB, dir string, n, groups int) {
	tb.Helper()
	publish(tb, dir, func(b *catalog.Builder) { buildSynthetic(tb, b, n, groups) })
}

// buildSynthetic adds BuildSynthetic's products to b.
func buildSynthetic(tb testing.TB, b *catalog.Builder, n, groups int) {
	var paths []string
	var sst *catalog.SST
	var err error
	for g := 1; g <= groups; g++ {
		for i := g - 1; i < n; i += groups {
			if sst == nil {
				if sst, err = b.NewSST(); err != nil {
					tb.Fatal(err)
				}
			}
			p := SyntheticProduct(i, groups)
			if err := sst.Add(p); err != nil {
				tb.Fatal(err)
			}
			if sst.Len() == 1_000_000 {
				path, err := sst.Finish()
				if err != nil {
					tb.Fatal(err)
				}
				paths, sst = append(paths, path), nil
			}
		}
	}
	if sst != nil {
		path, err := sst.Finish()
		if err != nil {
			tb.Fatal(err)
		}
		paths = append(paths, path)
	}
	if err := b.IngestSSTs(paths); err != nil {
		tb.Fatal(err)
	}
}

// Workload makes product-master requests over a synthetic catalog: the
// stream of workload.Catalog, which rtbd bench sends too.
type Workload struct {
	N, Groups int
	// Zipf: product and group popularity Zipf-distributed (s=1.1), as real
	// traffic is; false: uniformly random.
	Zipf bool
	// IDs per request (the talk: 3 light, 15 medium, 30 heavy).
	IDs int
}

// Requests returns count requests, deterministic for a seed. It panics on
// a workload workload.Catalog rejects (a mistake in the calling test).
func (w Workload) Requests(count int, seed uint64) []*catalogpb.ProductMastersRequest {
	reqs, err := workload.Catalog{Products: w.N, Groups: w.Groups, IDs: w.IDs, Uniform: !w.Zipf}.Requests(count, seed)
	if err != nil {
		panic(err)
	}
	return reqs
}
