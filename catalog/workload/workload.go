// Package workload makes the ProductMastersRequests that load a product
// store, the same stream for the catalog's own benchmarks and tests and for
// `rtbd bench`: requests over the synthetic catalog of `rtbd gen` (product
// i has id i+1 and group 1 + i%groups), with Zipf (s = 1.1) or uniform
// popularity.
package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// ErrInvalid is wrapped by the errors of a bad Catalog.
var ErrInvalid = errors.New("invalid workload")

// Catalog describes a stream of requests over a synthetic catalog.
type Catalog struct {
	Products, Groups int  // of the catalog; Products >= Groups >= 1
	IDs              int  // product ids per request (the request's weight), 1..1000
	Uniform          bool // groups and products drawn uniformly instead of Zipf-distributed, as real traffic is
}

// Validate reports every problem of c, naming the field.
func (c Catalog) Validate() error {
	var p []string
	if c.Groups < 1 {
		p = append(p, fmt.Sprintf("groups: must be >= 1, got %d", c.Groups))
	}
	if c.Products < max(c.Groups, 2) {
		p = append(p, fmt.Sprintf("products: must be >= groups (%d) and >= 2, got %d", c.Groups, c.Products))
	}
	if c.IDs < 1 || c.IDs > 1000 {
		p = append(p, fmt.Sprintf("ids: must be 1..1000, got %d", c.IDs))
	}
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(p, "; "))
}

// Requests returns count requests, the same for the same seed. Each asks
// for IDs product ids of one group in product1 (quantity at most IDs), the
// popular products scattered over the group rather than neighbours on disk.
func (c Catalog) Requests(count int, seed uint64) ([]*catalogpb.ProductMastersRequest, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if count < 1 {
		return nil, fmt.Errorf("%w: count: must be >= 1, got %d", ErrInvalid, count)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	perGroup := c.Products / c.Groups
	group := func() int { return rng.IntN(c.Groups) }
	product := func() int { return rng.IntN(perGroup) } // within the group
	if !c.Uniform {
		zg := rand.NewZipf(rng, 1.1, 1, uint64(c.Groups-1))
		zp := rand.NewZipf(rng, 1.1, 1, uint64(perGroup-1))
		group = func() int { return int(zg.Uint64()) }
		// A popularity rank maps to a scattered product, so the popular ones are not neighbours on disk.
		product = func() int { return int((zp.Uint64()*2654435761 + 12345) % uint64(perGroup)) }
	}
	out := make([]*catalogpb.ProductMastersRequest, count)
	for i := range out {
		g := group()
		ids := make([]int64, c.IDs)
		for j := range ids {
			// Group g+1 holds product indexes g, g+Groups, ...; id = index+1.
			ids[j] = int64(g + product()*c.Groups + 1)
		}
		out[i] = &catalogpb.ProductMastersRequest{ProductGroupId: int64(g + 1),
			Product1QuantityAtMost: int32(c.IDs), Product1Ids: ids}
	}
	return out, nil
}
