package catalogtest

import (
	"math/rand/v2"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/feedgen"
)

// SyntheticOptions are the feed options BuildSynthetic uses for n products
// in groups groups (the same as `rtbd gen -products n -groups groups -seed 1`).
func SyntheticOptions(n, groups int) feedgen.Options {
	return feedgen.Options{Products: n, Groups: groups, Seed: 1}
}

// BuildSynthetic builds and publishes, in dir, the catalog of `rtbd gen
// -products n -groups groups -seed 1` through the bulk (SST) path: group by
// group, ids ascending, one table per million products.
func BuildSynthetic(tb testing.TB, dir string, n, groups int) {
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
	opts := SyntheticOptions(n, groups)
	var paths []string
	var sst *catalog.SST
	for g := 1; g <= groups; g++ {
		for i := g - 1; i < n; i += groups {
			if sst == nil {
				if sst, err = b.NewSST(); err != nil {
					tb.Fatal(err)
				}
			}
			p := feedgen.Product(i, opts)
			if err := sst.Add(&p); err != nil {
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
	name, err := b.Finish()
	if err != nil {
		tb.Fatal(err)
	}
	if err := catalog.Publish(dir, name); err != nil {
		tb.Fatal(err)
	}
}

// Workload makes product-master requests over a synthetic catalog.
type Workload struct {
	N, Groups int
	// Zipf: product popularity (and group popularity) Zipf-distributed
	// (s=1.1), as real traffic is; false: uniformly random.
	Zipf bool
	// IDs per request (the talk: 3 light, 15 medium, 30 heavy).
	IDs int
}

// Requests returns count requests, deterministic for a seed. Each asks for
// IDs product ids of one group in product1 (quantity IDs).
func (w Workload) Requests(count int, seed uint64) []*catalogpb.ProductMastersRequest {
	rng := rand.New(rand.NewPCG(seed, 7))
	perGroup := w.N / w.Groups
	var zg, zp *rand.Zipf
	if w.Zipf {
		zg = rand.NewZipf(rng, 1.1, 1, uint64(w.Groups-1))
		zp = rand.NewZipf(rng, 1.1, 1, uint64(perGroup-1))
	}
	// Popularity rank r within a group maps to a scattered product, so the
	// hot products are not neighbours on disk.
	scatter := func(r int) int { return int((uint64(r)*2654435761 + 12345) % uint64(perGroup)) }
	out := make([]*catalogpb.ProductMastersRequest, count)
	for i := range out {
		var g int
		if w.Zipf {
			g = int(zg.Uint64())
		} else {
			g = rng.IntN(w.Groups)
		}
		ids := make([]int64, w.IDs)
		for j := range ids {
			var r int
			if w.Zipf {
				r = scatter(int(zp.Uint64()))
			} else {
				r = rng.IntN(perGroup)
			}
			// feedgen: group g+1 holds product indexes g, g+Groups, ...; ids = index+1.
			ids[j] = int64(g + r*w.Groups + 1)
		}
		out[i] = &catalogpb.ProductMastersRequest{ProductGroupId: int64(g + 1),
			Product1QuantityAtMost: int32(w.IDs), Product1Ids: ids}
	}
	return out
}
