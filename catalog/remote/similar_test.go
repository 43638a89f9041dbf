package remote

import (
	"slices"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// sharingKeys returns n keys of group g whose lists share one pair of
// slots of c.
func sharingKeys(c *listCache, g int64, n int) []ncKey {
	pairOf := func(k ncKey) uint64 { return (hashNCKey(k) >> 20) & c.mask &^ 1 }
	first := ncKey{g, 1}
	keys := []ncKey{first}
	for id := int64(2); len(keys) < n; id++ {
		if k := (ncKey{g, id}); pairOf(k) == pairOf(first) {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestListCacheTwoWay: two lists hashing to the same slots are both kept
// (one evicting the other would send every request needing both to a
// node); a third replaces the one that expires first.
func TestListCacheTwoWay(t *testing.T) {
	c := newListCache(0)
	k := sharingKeys(c, 5, 3)
	l := func(id int64) []catalog.Similar { return []catalog.Similar{{ID: id, Score: 1}} }
	c.put(k[0], l(100), 1, 1000)
	c.put(k[1], l(200), 1, 2000)
	for i, want := range []int64{100, 200} {
		if got, ok := c.get(k[i], 10, 1); !ok || got[0].ID != want {
			t.Fatalf("key %d of two sharing a pair: %v %v", i, got, ok)
		}
	}
	c.put(k[2], l(300), 1, 3000)
	_, ok0 := c.get(k[0], 10, 1)
	_, ok1 := c.get(k[1], 10, 1)
	_, ok2 := c.get(k[2], 10, 1)
	if ok0 || !ok1 || !ok2 {
		t.Errorf("after a third key: %v %v %v, want the first (expiring first) evicted", ok0, ok1, ok2)
	}
	c.put(k[1], l(201), 1, 2500) // a key already there is replaced in place
	if got, ok := c.get(k[1], 10, 1); !ok || got[0].ID != 201 {
		t.Errorf("replaced list: %v %v", got, ok)
	}
	if _, ok := c.get(k[2], 10, 1); !ok {
		t.Error("replacing one key's list evicted the other key of the pair")
	}
	if _, ok := c.get(k[1], 10, 2); ok {
		t.Error("a list answered for another epoch")
	}
}

// TestNearCacheSimilarMemo: the near cache's merged answers are the merge
// of its cached lists for any quantity, and are not served once one of
// the lists behind them has expired or the epoch has moved on.
func TestNearCacheSimilarMemo(t *testing.T) {
	nc := newNearCache(1<<20, time.Second, time.Minute, nil)
	lists := map[int64][]catalog.Similar{
		1: {{ID: 10, Score: 900}, {ID: 11, Score: 800}, {ID: 12, Score: 100}},
		2: {{ID: 11, Score: 700}, {ID: 13, Score: 600}, {ID: 1, Score: 500}},
	}
	nc.lists.put(ncKey{4, 1}, lists[1], 1, 1000)
	nc.lists.put(ncKey{4, 2}, lists[2], 1, 500)
	vs := &verState{epoch: 1}
	viewed := []int64{1, 2}
	for _, q := range []int32{1, 30, 2, 1} {
		req := &catalogpb.ProductMastersRequest{ProductGroupId: 4, Product1Ids: viewed, Product2QuantityAtMost: q, SimilarToViewed: true}
		got, ok := nc.similarIDs(req, 10, vs, nil)
		want := catalog.SimilarIDs(viewed, func(id int64) []catalog.Similar { return lists[id] }, catalog.SimilarLimit(q), nil)
		if !ok || !slices.Equal(got, want) {
			t.Fatalf("quantity %d: %v %v, want %v", q, got, ok, want)
		}
	}
	req := &catalogpb.ProductMastersRequest{ProductGroupId: 4, Product1Ids: viewed, Product2QuantityAtMost: 3, SimilarToViewed: true}
	if _, ok := nc.similarIDs(req, 600, vs, nil); ok {
		t.Error("answered after the list of product 2 expired")
	}
	if _, ok := nc.similarIDs(req, 10, &verState{epoch: 2}, nil); ok {
		t.Error("answered in a new epoch without its lists")
	}
}
