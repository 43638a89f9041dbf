package bench

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// TalkWeights are the talk's three request weights: 3 products per request
// (light), 15 (medium, the normal case) and 30 (heavy, rare).
var TalkWeights = []int{3, 15, 30}

// CatalogWorkload describes a stream of ProductMastersRequests over the
// synthetic catalog of `rtbd gen -products Products -groups Groups -seed 1`
// (product i has id i+1 and group 1 + i%Groups).
type CatalogWorkload struct {
	Products, Groups int  // of the catalog; Products >= Groups >= 1
	IDs              int  // product ids per request: the request weight, >= 1
	Uniform          bool // draw groups and products uniformly instead of Zipf-distributed (s = 1.1), as real traffic is
}

// Validate reports every problem of w.
func (w CatalogWorkload) Validate() error {
	var p problems
	p.check(w.Groups >= 1, "groups: must be >= 1, got %d", w.Groups)
	p.check(w.Products >= max(w.Groups, 2), "products: must be >= groups (%d) and >= 2, got %d", w.Groups, w.Products)
	p.check(w.IDs >= 1 && w.IDs <= 1000, "ids: must be 1..1000, got %d", w.IDs)
	return p.err()
}

// Requests returns count requests, the same for the same seed. Each asks
// for IDs product ids of one group in product1 (quantity at most IDs), the
// popular products scattered over the group rather than neighbours on disk.
// It draws the same stream as catalogtest.Workload{N, Groups, Zipf, IDs}
// (the catalog's own benchmarks), so figures can be set side by side.
func (w CatalogWorkload) Requests(count int, seed uint64) ([]*catalogpb.ProductMastersRequest, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if count < 1 {
		return nil, fmt.Errorf("%w: count: must be >= 1, got %d", ErrInvalid, count)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	perGroup := w.Products / w.Groups
	group := func() int { return rng.IntN(w.Groups) }
	product := func() int { return rng.IntN(perGroup) } // within the group
	if !w.Uniform {
		zg := rand.NewZipf(rng, 1.1, 1, uint64(max(w.Groups-1, 0)))
		zp := rand.NewZipf(rng, 1.1, 1, uint64(max(perGroup-1, 0)))
		group = func() int { return int(zg.Uint64()) }
		// A popularity rank maps to a scattered product, so the popular ones are not neighbours on disk.
		product = func() int { return int((zp.Uint64()*2654435761 + 12345) % uint64(perGroup)) }
	}
	out := make([]*catalogpb.ProductMastersRequest, count)
	for i := range out {
		g := group()
		ids := make([]int64, w.IDs)
		for j := range ids {
			// Group g+1 holds product indexes g, g+Groups, ...; id = index+1.
			ids[j] = int64(g + product()*w.Groups + 1)
		}
		out[i] = &catalogpb.ProductMastersRequest{ProductGroupId: int64(g + 1),
			Product1QuantityAtMost: int32(w.IDs), Product1Ids: ids}
	}
	return out, nil
}

// requestStream hands out a fixed list of requests in order, cycling; safe
// for concurrent use. Every target of a scenario gets its own stream over
// the same list, so each sees the same requests in the same order.
type requestStream struct {
	reqs []*catalogpb.ProductMastersRequest
	next atomic.Uint64
}

func (s *requestStream) take() *catalogpb.ProductMastersRequest {
	i := s.next.Add(1) - 1
	return s.reqs[i%uint64(len(s.reqs))]
}
