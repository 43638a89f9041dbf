package workload

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// TestStreamIsStable: the same spec and seed give the same requests, in
// this build and in every later one (recorded figures of the catalog's
// benchmarks and of rtbd bench are comparable only over the same stream),
// and every id is a product of the request's group in the synthetic
// catalog.
func TestStreamIsStable(t *testing.T) {
	for _, tc := range []struct {
		c    Catalog
		want string
	}{
		{Catalog{Products: 100_000, Groups: 10, IDs: 15}, "62d4489f7978b99a"},
		{Catalog{Products: 2000, Groups: 4, IDs: 3, Uniform: true}, "855a6c191daae76e"},
		{Catalog{Products: 500, Groups: 1, IDs: 30}, "636db2c81b207a70"},
	} {
		reqs, err := tc.c.Requests(500, 9)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, r := range reqs {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(b)
			for _, id := range r.Product1Ids {
				if g := 1 + (id-1)%int64(tc.c.Groups); id < 1 || id > int64(tc.c.Products) || g != r.ProductGroupId {
					t.Fatalf("%+v: id %d of group %d is not in the synthetic catalog's group %d", tc.c, id, g, r.ProductGroupId)
				}
			}
			if len(r.Product1Ids) != tc.c.IDs || r.Product1QuantityAtMost != int32(tc.c.IDs) {
				t.Fatalf("%+v: a request with %d ids, at most %d", tc.c, len(r.Product1Ids), r.Product1QuantityAtMost)
			}
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)[:8]); got != tc.want {
			t.Errorf("%+v: the stream's digest is %s, want %s: the stream changed", tc.c, got, tc.want)
		}
	}
}

// TestZipfIsSkewed: with Zipf popularity the most requested product takes
// a far larger share of the ids than with uniform popularity.
func TestZipfIsSkewed(t *testing.T) {
	top := func(c Catalog) float64 {
		reqs, err := c.Requests(2000, 1)
		if err != nil {
			t.Fatal(err)
		}
		n, seen := 0, map[int64]int{}
		for _, r := range reqs {
			for _, id := range r.Product1Ids {
				seen[id]++
				n++
			}
		}
		best := 0
		for _, k := range seen {
			best = max(best, k)
		}
		return float64(best) / float64(n)
	}
	c := Catalog{Products: 10_000, Groups: 4, IDs: 15}
	zipf, uniform := top(c), top(Catalog{Products: c.Products, Groups: c.Groups, IDs: c.IDs, Uniform: true})
	if zipf < 10*uniform {
		t.Errorf("top product's share: zipf %.4f, uniform %.4f; want zipf at least 10x", zipf, uniform)
	}
}

func TestInvalid(t *testing.T) {
	_, err := Catalog{Products: 10, Groups: 20, IDs: 0}.Requests(1, 1)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "products") || !strings.Contains(err.Error(), "ids") {
		t.Errorf("bad workload: %v", err)
	}
	if _, err := (Catalog{Products: 10, Groups: 2, IDs: 3}).Requests(0, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("count 0: %v", err)
	}
}
