package remote

import (
	"sync/atomic"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// listCache holds the similar lists of viewed products (near cache on
// only), from the similar_lists a node's GetProductMasters answer carries
// for a similar_to_viewed request it resolved. Direct-mapped by key hash:
// a hit reads one atomic pointer and allocates nothing. An entry is valid
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

func (c *listCache) slot(k ncKey) *atomic.Pointer[listEntry] {
	return &c.slots[(hashNCKey(k)>>20)&c.mask]
}

func (c *listCache) get(k ncKey, now int64, epoch uint32) ([]catalog.Similar, bool) {
	e := c.slot(k).Load()
	if e == nil || e.k != k || e.epoch != epoch || now >= e.expires {
		return nil, false
	}
	return e.list, true
}

func (c *listCache) put(k ncKey, list []catalog.Similar, epoch uint32, expires int64) {
	c.slot(k).Store(&listEntry{k: k, list: list, epoch: epoch, expires: expires})
}

// similarIDs resolves req's second list (onNode) from the cached lists
// as the node would (catalog.SimilarIDs), appending to dst; false if the
// list of one of the viewed products it reads is not cached.
func (c *nearCache) similarIDs(req *catalogpb.ProductMastersRequest, now int64, vs *verState, dst []int64) ([]int64, bool) {
	g := req.ProductGroupId
	viewed := req.Product1Ids[:min(len(req.Product1Ids), catalog.MaxSimilarViewed)]
	for _, v := range viewed {
		if v <= 0 {
			continue
		}
		if _, ok := c.lists.get(ncKey{g, v}, now, vs.epoch); !ok {
			return dst, false
		}
	}
	return catalog.SimilarIDs(viewed, func(id int64) []catalog.Similar {
		l, _ := c.lists.get(ncKey{g, id}, now, vs.epoch)
		return l
	}, catalog.SimilarLimit(req.Product2QuantityAtMost), dst), true
}

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
