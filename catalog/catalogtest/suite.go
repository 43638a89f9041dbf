package catalogtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Store is what the suite tests (declared here, where it is used).
type Store interface {
	GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// MaxIDs is the id limit the suite assumes the store was configured with.
const MaxIDs = 1000

type req = catalogpb.ProductMastersRequest

// Run runs every rule of GetProductMasters against s, which must serve the
// fixture (WriteFixture) with MaxIDs ids allowed, its similar lists included.
func Run(t *testing.T, s Store) { run(t, s, true) }

// RunProductsOnly is Run for a store that holds the fixture's products but
// no similar lists (the product stores the bench harness compares the
// catalog with): a request with similar_to_viewed must be answered as if
// the flag were not set, every other rule as Run checks it.
func RunProductsOnly(t *testing.T, s Store) { run(t, s, false) }

func run(t *testing.T, s Store, similar bool) {
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		return c
	}
	ids := func(r ...int64) []int64 { return r }
	seq := func(from, to int64) []int64 {
		var r []int64
		for i := from; i <= to; i++ {
			r = append(r, i)
		}
		return r
	}
	cases := []struct {
		name   string
		req    *req
		p1, p2 []int64
		err    error
	}{
		{"talk example", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 3, Product1Ids: ids(103, 999, 101),
			Product2QuantityAtMost: 4, Product2Ids: ids(106, 105, 998, 104)}, ids(103, 101), ids(106, 104), nil},
		{"order as asked", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 10, Product1Ids: ids(110, 102, 107)}, ids(110, 102, 107), nil, nil},
		{"stops at quantity", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 3, Product1Ids: seq(101, 110)}, ids(101, 102, 103), nil, nil},
		{"skipped ids do not count", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 2, Product1Ids: ids(105, 998, 999, 101, 102, 103)}, ids(101, 102), nil, nil},
		{"quantity zero", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 0, Product1Ids: ids(101), Product2QuantityAtMost: 1, Product2Ids: ids(102)}, nil, ids(102), nil},
		{"quantity negative", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: -5, Product1Ids: ids(101), Product2QuantityAtMost: -1, Product2Ids: ids(102)}, nil, nil, nil},
		{"duplicates once", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 10, Product1Ids: ids(101, 101, 102, 101, 102)}, ids(101, 102), nil, nil},
		{"duplicates once, long list", &req{ProductGroupId: BulkGroup, Product1QuantityAtMost: 100,
			Product1Ids: append(append(seq(1, 40), seq(1, 40)...), seq(41, 60)...)}, inStock(append(seq(1, 40), seq(41, 60)...)), nil, nil},
		{"same id in both lists", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 1, Product1Ids: ids(101), Product2QuantityAtMost: 1, Product2Ids: ids(101)}, ids(101), ids(101), nil},
		{"out of stock skipped", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 5, Product1Ids: ids(105)}, nil, nil, nil},
		{"other group skipped", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 5, Product1Ids: ids(999, 101)}, ids(101), nil, nil},
		{"missing skipped", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 5, Product1Ids: ids(998, 0, -3, 102)}, ids(102), nil, nil},
		{"unknown group is empty", &req{ProductGroupId: UnknownGroup, Product1QuantityAtMost: 5, Product1Ids: ids(101, 102), Product2QuantityAtMost: 5, Product2Ids: ids(1)}, nil, nil, nil},
		{"empty lists", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 5, Product2QuantityAtMost: 5}, nil, nil, nil},
		{"max ids allowed", &req{ProductGroupId: BulkGroup, Product1QuantityAtMost: 3, Product1Ids: seq(1, 600), Product2QuantityAtMost: 2, Product2Ids: seq(1, 400)}, ids(1, 2, 3), ids(1, 2), nil},
		{"too many ids", &req{ProductGroupId: BulkGroup, Product1QuantityAtMost: 3, Product1Ids: seq(1, 601), Product2QuantityAtMost: 2, Product2Ids: seq(1, 400)}, nil, nil, catalog.ErrInvalidArgument},
		{"too many ids in one list", &req{ProductGroupId: BulkGroup, Product1QuantityAtMost: 3, Product1Ids: seq(1, 5000)}, nil, nil, catalog.ErrInvalidArgument},
		{"similar to one viewed", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 1, Product1Ids: ids(101),
			Product2QuantityAtMost: 3, SimilarToViewed: true}, ids(101), ids(103, 104), nil},
		{"similar lists merged by score", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 2, Product1Ids: ids(101, 102),
			Product2QuantityAtMost: 10, SimilarToViewed: true}, ids(101, 102), ids(104, 103, 106), nil},
		{"similar stops at quantity", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 2, Product1Ids: ids(101, 102),
			Product2QuantityAtMost: 1, SimilarToViewed: true}, ids(101, 102), ids(104), nil},
		{"recommended ids come first", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 1, Product1Ids: ids(101),
			Product2QuantityAtMost: 3, Product2Ids: ids(107), SimilarToViewed: true}, ids(101), ids(107), nil},
		{"similar only when asked", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 1, Product1Ids: ids(101),
			Product2QuantityAtMost: 3}, ids(101), nil, nil},
		{"no similar list", &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 1, Product1Ids: ids(103),
			Product2QuantityAtMost: 3, SimilarToViewed: true}, ids(103), nil, nil},
		{"group zero", &req{ProductGroupId: 0, Product1QuantityAtMost: 3, Product1Ids: ids(1)}, nil, nil, catalog.ErrInvalidArgument},
		{"group negative", &req{ProductGroupId: -1122, Product1QuantityAtMost: 3, Product1Ids: ids(101)}, nil, nil, catalog.ErrInvalidArgument},
	}
	for _, tc := range cases {
		if !similar && tc.req.SimilarToViewed && len(tc.req.Product2Ids) == 0 {
			tc.p2 = nil // no similar list to resolve
		}
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.GetProductMasters(ctx(), tc.req)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			checkList(t, "product1s", tc.req.ProductGroupId, resp.GetProduct1S(), tc.p1)
			checkList(t, "product2s", tc.req.ProductGroupId, resp.GetProduct2S(), tc.p2)
		})
	}

	t.Run("every field round-trips", func(t *testing.T) {
		resp, err := s.GetProductMasters(ctx(), &req{ProductGroupId: FullGroup, Product1QuantityAtMost: 1, Product1Ids: ids(fullProductID)})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetProduct1S()) != 1 || !proto.Equal(resp.Product1S[0], FullProduct()) {
			t.Fatalf("got %v\nwant %v", resp.GetProduct1S(), FullProduct())
		}
	})

	t.Run("expired deadline", func(t *testing.T) {
		c, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
		defer cancel()
		_, err := s.GetProductMasters(c, &req{ProductGroupId: TalkGroup, Product1QuantityAtMost: 1, Product1Ids: ids(101)})
		if !errors.Is(err, catalog.ErrDeadline) {
			t.Fatalf("err = %v, want ErrDeadline", err)
		}
	})

	t.Run("random requests match the reference model", func(t *testing.T) {
		model := newModel(Products())
		var wg sync.WaitGroup
		errs := make(chan string, 16)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 42))
				for i := 0; i < 150; i++ {
					r := randomRequest(rng)
					resp, err := s.GetProductMasters(ctx(), r)
					w1, w2, werr := model.answer(r)
					if (err != nil) != (werr != nil) || (err != nil && !errors.Is(err, werr)) {
						errs <- "error mismatch: got " + errString(err) + " want " + errString(werr)
						return
					}
					if err != nil {
						continue
					}
					if !sameIDs(resp.GetProduct1S(), w1) || !sameIDs(resp.GetProduct2S(), w2) {
						errs <- "answer differs from the model for " + r.String()
						return
					}
				}
			}(uint64(w))
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func inStock(ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if id%10 != 0 {
			out = append(out, id)
		}
	}
	return out
}

func checkList(t *testing.T, name string, group int64, got []*catalogpb.Product, want []int64) {
	t.Helper()
	if !sameIDs(got, want) {
		g := make([]int64, len(got))
		for i, p := range got {
			g[i] = p.ProductId
		}
		t.Fatalf("%s = %v, want %v", name, g, want)
	}
	byID := map[int64]*catalogpb.Product{}
	for _, p := range Products() {
		if p.ProductGroupId == group {
			byID[p.ProductId] = p
		}
	}
	for _, p := range got {
		if !proto.Equal(p, byID[p.ProductId]) {
			t.Fatalf("%s: product %d = %v, want %v", name, p.ProductId, p, byID[p.ProductId])
		}
	}
}

func sameIDs(got []*catalogpb.Product, want []int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].ProductId != want[i] {
			return false
		}
	}
	return true
}

// model is the reference implementation of the rules, as plainly as they
// read in the package comment of catalog.
type model map[[2]int64]*catalogpb.Product

func newModel(ps []*catalogpb.Product) model {
	m := model{}
	for _, p := range ps {
		m[[2]int64{p.ProductGroupId, p.ProductId}] = p
	}
	return m
}

func (m model) answer(r *req) (p1, p2 []int64, err error) {
	if r.ProductGroupId <= 0 || len(r.Product1Ids)+len(r.Product2Ids) > MaxIDs {
		return nil, nil, catalog.ErrInvalidArgument
	}
	list := func(ids []int64, q int32) []int64 {
		var out []int64
		seen := map[int64]bool{}
		for _, id := range ids {
			if int32(len(out)) >= q {
				break
			}
			p := m[[2]int64{r.ProductGroupId, id}]
			if p == nil || !p.InStock || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, id)
		}
		return out
	}
	return list(r.Product1Ids, r.Product1QuantityAtMost), list(r.Product2Ids, r.Product2QuantityAtMost), nil
}

func randomRequest(rng *rand.Rand) *req {
	groups := []int64{TalkGroup, BulkGroup, OtherGroup, UnknownGroup, FullGroup, 0, -1}
	r := &req{ProductGroupId: groups[rng.IntN(len(groups))]}
	gen := func() []int64 {
		n := rng.IntN(40)
		if rng.IntN(50) == 0 {
			n = 900 + rng.IntN(200) // sometimes near or over the limit
		}
		out := make([]int64, n)
		for i := range out {
			switch rng.IntN(4) {
			case 0:
				out[i] = int64(talkFirst + rng.IntN(12))
			case 1:
				out[i] = int64(1 + rng.IntN(bulkProducts+10))
			case 2:
				out[i] = OtherGroupID
			default:
				out[i] = int64(rng.IntN(300) - 5)
			}
		}
		return out
	}
	r.Product1Ids, r.Product2Ids = gen(), gen()
	r.Product1QuantityAtMost = int32(rng.IntN(40) - 3)
	r.Product2QuantityAtMost = int32(rng.IntN(40) - 3)
	return r
}
