package catalog_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// TestMergeMemo: a memo answers only the key it stored (group and the
// whole viewed list), within its epoch and expiry, with a prefix of the
// merged ids when it holds enough of them; a pair of slots keeps the two
// latest keys.
func TestMergeMemo(t *testing.T) {
	m := catalog.NewMergeMemo(1) // one pair of slots: every key shares it
	a, b, c := []int64{1, 2}, []int64{1, 3}, []int64{2, 1}
	m.Put(7, a, []int64{10, 11, 12}, true, 1, 0)
	for _, tc := range []struct {
		name   string
		g      int64
		viewed []int64
		limit  int
		epoch  uint32
		now    int64
		want   []int64
		hit    bool
	}{
		{"prefix", 7, a, 2, 1, 0, []int64{10, 11}, true},
		{"all", 7, a, 0, 1, 0, []int64{10, 11, 12}, true},
		{"more than merged", 7, a, 10, 1, 0, []int64{10, 11, 12}, true},
		{"other viewed list", 7, b, 2, 1, 0, nil, false},
		{"same ids, other order", 7, c, 2, 1, 0, nil, false},
		{"other group", 8, a, 2, 1, 0, nil, false},
		{"other epoch", 7, a, 2, 2, 0, nil, false},
	} {
		got, hit := m.Get(tc.g, tc.viewed, tc.limit, tc.epoch, tc.now, nil)
		if hit != tc.hit || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, hit, tc.want, tc.hit)
		}
	}
	// A cut list answers only limits it covers.
	m.Put(7, b, []int64{20, 21}, false, 1, 100)
	if got, hit := m.Get(7, b, 2, 1, 99, nil); !hit || !slices.Equal(got, []int64{20, 21}) {
		t.Errorf("cut list, limit it covers: %v %v", got, hit)
	}
	if _, hit := m.Get(7, b, 3, 1, 99, nil); hit {
		t.Error("cut list answered a limit beyond it")
	}
	if _, hit := m.Get(7, b, 2, 1, 100, nil); hit {
		t.Error("an expired entry answered")
	}
	// The pair holds a and b; c evicts the older, a.
	if _, hit := m.Get(7, a, 1, 1, 0, nil); !hit {
		t.Error("the first of two keys of a pair was evicted by the second")
	}
	m.Put(7, c, []int64{30}, true, 1, 0)
	_, hitA := m.Get(7, a, 1, 1, 0, nil)
	_, hitB := m.Get(7, b, 1, 1, 99, nil)
	_, hitC := m.Get(7, c, 1, 1, 0, nil)
	if hitA || !hitB || !hitC {
		t.Errorf("after a third key: a %v b %v c %v, want the two latest (b, c)", hitA, hitB, hitC)
	}
	var nilMemo *catalog.MergeMemo
	nilMemo.Put(1, a, a, true, 0, 0)
	if _, hit := nilMemo.Get(1, a, 1, 0, 0, nil); hit {
		t.Error("a nil memo answered")
	}
}

// TestSimilarMemoMatchesMerge: the local store's answers to
// similar_to_viewed with its caches (a memo and a list cache so small that
// keys evict each other all the time) are the answers without any cache,
// for viewed lists asked again and again with other quantities, in the
// bidder's form (GetProductMasters) and a node's (AppendProductMasters,
// similar lists included).
func TestSimilarMemoMatchesMerge(t *testing.T) {
	const group, products = 3, 300
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	lock, err := catalog.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.NewBuilder(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= products; id++ {
		if err := b.Put(&catalogpb.Product{ProductId: id, ProductGroupId: group, Title: "p", ImageUrl: "https://i.example/p.jpg",
			LandingUrl: "https://shop.example/p", PriceMicros: 1_000_000, Currency: "USD", InStock: id%17 != 0}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := b.NewSimilarWriter()
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= products; id++ {
		if id%29 == 0 {
			continue // no list
		}
		var l []catalog.Similar
		for k := range 20 {
			l = append(l, catalog.Similar{ID: 1 + r.Int64N(products), Score: uint32(1000 - 10*k + r.IntN(5))})
		}
		l = slices.CompactFunc(l, func(a, b catalog.Similar) bool { return a.ID == b.ID })
		if err := w.Add(group, id, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	name, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(dir, name); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	open := func(hot int) *catalog.Local {
		l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1, HotCacheEntries: hot})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	cached, plain := open(32), open(-1) // memo of 2 slots, list cache of 8; no caches at all
	users := make([][]int64, 40)
	for i := range users {
		for range 1 + r.IntN(15) {
			users[i] = append(users[i], 1+r.Int64N(products))
		}
		users[i] = slices.Compact(users[i])
	}
	ctx := context.Background()
	for n := range 600 {
		req := &catalogpb.ProductMastersRequest{ProductGroupId: group, Product1Ids: users[r.IntN(len(users))],
			Product1QuantityAtMost: int32(r.IntN(3)), Product2QuantityAtMost: int32(1 + r.IntN(30)), SimilarToViewed: true}
		got, err := cached.GetProductMasters(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.GetProductMasters(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := productIDs(got.Product2S), productIDs(want.Product2S); !slices.Equal(g, w) {
			t.Fatalf("request %d (viewed %v, %d products): %v with the caches, %v without", n, req.Product1Ids, req.Product2QuantityAtMost, g, w)
		}
		gw, _, err := cached.AppendProductMasters(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		ww, _, err := plain.AppendProductMasters(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gw, ww) {
			t.Fatalf("request %d: a node's answer differs with the caches", n)
		}
	}
}

func productIDs(ps []*catalogpb.Product) []int64 {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ProductId
	}
	return ids
}
