package remote

import (
	"math"
	"sync/atomic"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// listCache holds the similar lists of viewed products (near cache on
// only), from the similar_lists a node's GetProductMasters answer carries
// for a similar_to_viewed request it resolved. Two-way set associative by
// key hash (a key may live in either slot of its pair, so two hot keys
// that hash alike do not evict each other on every request, each miss a
// call to a node): a hit reads at most two atomic pointers and allocates
// nothing; a put replaces an empty, stale or the sooner-expiring slot. An entry is valid
// in the epoch it was stored in (a full snapshot or a rollback starts a
// new one; a delta keeps the lists, and products it deletes are skipped
// when the ids are resolved) and until NearCacheMaxAge.
type listCache struct {
	slots []atomic.Pointer[listEntry]
	mask  uint64
}

type listEntry struct {
	k       ncKey
	list    []catalog.Similar // nil: the product has no list
	epoch   uint32
	expires int64
}

// listBytes is about what one cached list of 20 entries costs.
const listBytes = 512

func newListCache(maxBytes int64) *listCache {
	want := min(max(maxBytes/4/listBytes, 1024), 1<<20)
	n := 1
	for int64(n) < want {
		n <<= 1
	}
	return &listCache{slots: make([]atomic.Pointer[listEntry], n), mask: uint64(n - 1)}
}

// pair returns the two slots key k may live in (neighbours: one cache
// line).
func (c *listCache) pair(k ncKey) (*atomic.Pointer[listEntry], *atomic.Pointer[listEntry]) {
	i := (hashNCKey(k) >> 20) & c.mask
	return &c.slots[i], &c.slots[i^1]
}

func (c *listCache) get(k ncKey, now int64, epoch uint32) ([]catalog.Similar, bool) {
	e, ok := c.entry(k, now, epoch)
	if !ok {
		return nil, false
	}
	return e.list, true
}

// entry returns k's entry when it is cached for epoch and not expired.
func (c *listCache) entry(k ncKey, now int64, epoch uint32) (*listEntry, bool) {
	a, b := c.pair(k)
	e := a.Load()
	if e == nil || e.k != k {
		e = b.Load()
	}
	if e == nil || e.k != k || e.epoch != epoch || now >= e.expires {
		return nil, false
	}
	return e, true
}

func (c *listCache) put(k ncKey, list []catalog.Similar, epoch uint32, expires int64) {
	a, b := c.pair(k)
	ea, eb := a.Load(), b.Load()
	dst := a
	switch {
	case ea == nil || ea.k == k:
	case eb == nil || eb.k == k:
		dst = b
	case ea.epoch != epoch:
	case eb.epoch != epoch || eb.expires < ea.expires:
		dst = b
	}
	dst.Store(&listEntry{k: k, list: list, epoch: epoch, expires: expires})
}

// similarIDs resolves req's second list (onNode) from the cached lists
// as the node would (catalog.SimilarIDs), appending to dst; false if the
// list of one of the viewed products it reads is not cached.
//
// The merged answer is kept in c.memo (for the epoch, until the first of
// its lists expires), so the next request of the same user and group
// (another creative template's, or the user's next bid request) copies it
// instead of merging again.
func (c *nearCache) similarIDs(req *catalogpb.ProductMastersRequest, now int64, vs *verState, dst []int64) ([]int64, bool) {
	g := req.ProductGroupId
	limit := catalog.SimilarLimit(req.Product2QuantityAtMost)
	if ids, ok := c.memo.Get(g, req.Product1Ids, limit, vs.epoch, now, dst); ok {
		return ids, true
	}
	viewed := req.Product1Ids[:min(len(req.Product1Ids), catalog.MaxSimilarViewed)]
	expires := int64(math.MaxInt64)
	for _, v := range viewed {
		if v <= 0 {
			continue
		}
		e, ok := c.lists.entry(ncKey{g, v}, now, vs.epoch)
		if !ok {
			return dst, false
		}
		expires = min(expires, e.expires)
	}
	want := max(limit, catalog.MemoIDs)
	start := len(dst)
	dst = catalog.SimilarIDs(viewed, func(id int64) []catalog.Similar {
		l, _ := c.lists.get(ncKey{g, id}, now, vs.epoch)
		return l
	}, want, dst)
	c.memo.Put(g, req.Product1Ids, dst[start:], len(dst)-start < want, vs.epoch, expires)
	if len(dst)-start > limit {
		dst = dst[:start+limit]
	}
	return dst, true
}

// memoEntryBytes is about what one merged answer in the memo costs.
const memoEntryBytes = 1024

// keepLists stores the similar lists of a node's answer to a
// similar_to_viewed request, and its products, when the answer is of the
// cache's content.
func (c *Client) keepLists(resp *catalogpb.ProductMastersResponse) {
	nc := c.near
	if nc == nil || len(resp.GetSimilarLists()) == 0 {
		return
	}
	now := nc.now()
	if !c.observe(resp.GetVersion(), now) {
		return
	}
	vs := nc.ver.Load()
	if vs.v.GetContentHash() != resp.GetVersion().GetContentHash() {
		return
	}
	// The products of the answer, as GetProducts would have given them.
	for _, ps := range [2][]*catalogpb.Product{resp.Product1S, resp.Product2S} {
		for _, p := range ps {
			nc.put(ncKey{p.ProductGroupId, p.ProductId}, p, len(catalog.AppendValue(nil, p)), vs.v.GetContentHash(), now)
		}
	}
	for _, sl := range resp.SimilarLists {
		list, err := catalog.DecodeSimilar(sl.GetList(), nil)
		if err != nil {
			continue // a list the node could not have stored: not cached
		}
		nc.lists.put(ncKey{sl.GetProductGroupId(), sl.GetProductId()}, list, vs.epoch, now+nc.maxAge)
	}
}

// resolveLocally returns reqs with each onNode request whose lists are
// all cached replaced by an equivalent request naming the resolved ids
// (the products then come from the near cache or the batch's GetProducts
// call); reqs itself when there is none.
func (c *Client) resolveLocally(reqs []*catalogpb.ProductMastersRequest) []*catalogpb.ProductMastersRequest {
	nc := c.near
	if nc == nil {
		return reqs
	}
	now, vs := nc.now(), nc.ver.Load()
	out := reqs
	for i, r := range reqs {
		if !onNode(r) {
			continue
		}
		ids, ok := nc.similarIDs(r, now, vs, nil)
		if !ok {
			continue
		}
		if &out[0] == &reqs[0] {
			out = append([]*catalogpb.ProductMastersRequest(nil), reqs...)
		}
		out[i] = &catalogpb.ProductMastersRequest{ProductGroupId: r.ProductGroupId,
			Product1QuantityAtMost: r.Product1QuantityAtMost, Product1Ids: r.Product1Ids,
			Product2QuantityAtMost: r.Product2QuantityAtMost, Product2Ids: ids}
	}
	return out
}
