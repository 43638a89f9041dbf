package remote

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// batchScratch is one batch's working memory, pooled so that a batch the
// near cache answers whole allocates nothing.
type batchScratch struct {
	// Per id of every list of every request, in order: the product (nil:
	// absent) when known, else miss[i] >= 0 indexes keys.
	prod []*catalogpb.Product
	miss []int32
	// Distinct keys to ask the nodes for, and their answers.
	keys  []ncKey
	index map[ncKey]int32
	got   []*catalogpb.Product
	seen  map[int64]struct{}
}

func (c *Client) getScratch() *batchScratch {
	if sc, ok := c.scratch.Get().(*batchScratch); ok {
		return sc
	}
	return &batchScratch{index: map[ncKey]int32{}, seen: map[int64]struct{}{}}
}

func (c *Client) putScratch(sc *batchScratch) {
	if cap(sc.prod) > 1<<16 { // an unusually large batch: do not keep its memory
		return
	}
	clear(sc.prod) // drop the product pointers (the used part is all set)
	clear(sc.got)
	sc.prod, sc.miss, sc.keys, sc.got = sc.prod[:0], sc.miss[:0], sc.keys[:0], sc.got[:0]
	if len(sc.index) > 0 {
		clear(sc.index)
	}
	c.scratch.Put(sc)
}

// respBuf is a response with room for a short answer's product pointers,
// so that GetProductMasters' answer is one allocation.
type respBuf struct {
	r   catalogpb.ProductMastersResponse
	buf [16]*catalogpb.Product
}

// getProductMastersNear is GetProductMasters with the near cache on.
func (c *Client) getProductMastersNear(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	rb := new(respBuf)
	n1 := max(0, min(int(req.Product1QuantityAtMost), len(req.Product1Ids)))
	n2 := max(0, min(int(req.Product2QuantityAtMost), len(req.Product2Ids)))
	all := rb.buf[:0]
	if n1+n2 > len(rb.buf) {
		all = make([]*catalogpb.Product, 0, n1+n2)
	}
	rb.r.Product1S, rb.r.Product2S = all[:0:n1], all[n1:n1:n1+n2]
	reqs, resps := [1]*catalogpb.ProductMastersRequest{req}, [1]*catalogpb.ProductMastersResponse{&rb.r}
	if err := c.batch(ctx, reqs[:], resps[:]); err != nil {
		return nil, err
	}
	if len(rb.r.Product1S) == 0 {
		rb.r.Product1S = nil
	}
	if len(rb.r.Product2S) == 0 {
		rb.r.Product2S = nil
	}
	return &rb.r, nil
}

// GetProductMastersCached answers req into resp from the near cache
// alone, with GetProductMasters' rules, and reports whether it could: it
// asks no node. The answer depends only on each list's ids up to the one
// that completes its quantity, so only those must be cached (a product or
// an absence, still valid); any of them missing, a request that breaks the
// rules, a list of more than 32 products, the near cache off, or nodes
// that lack GetProducts, and it reports false with resp unspecified: the
// caller asks GetProductMasters or GetProductMastersBatch, which count the
// lookup. resp's lists are reset and their capacity reused, so a caller
// that keeps resp allocates nothing; its products are shared with the
// near cache and must not be modified.
func (c *Client) GetProductMastersCached(req *catalogpb.ProductMastersRequest, resp *catalogpb.ProductMastersResponse) bool {
	nc := c.near
	if nc == nil || resp == nil || c.closed.Load() || c.legacy() || catalog.ValidateRequest(req, c.maxIDs) != nil {
		return false
	}
	now, vs := nc.now(), nc.ver.Load()
	ids2 := req.Product2Ids
	if onNode(req) { // the second list from the cached similar lists
		var buf [64]int64
		var ok bool
		if ids2, ok = nc.similarIDs(req, now, vs, buf[:0]); !ok {
			return false
		}
	}
	var hits, absent int64
	var ok bool
	resp.Product1S, ok = nc.cachedList(resp.Product1S[:0], req.ProductGroupId, req.Product1Ids, req.Product1QuantityAtMost, now, vs, &hits, &absent)
	if !ok {
		return false
	}
	resp.Product2S, ok = nc.cachedList(resp.Product2S[:0], req.ProductGroupId, ids2, req.Product2QuantityAtMost, now, vs, &hits, &absent)
	if !ok {
		return false
	}
	resp.Version = vs.v
	nc.count(hits, absent, 0)
	return true
}

// cachedList appends to dst the products of group g for ids under
// GetProductMasters' rules (in order, skipping absent and out-of-stock
// products, each id at most once, at most atMost), from the cache alone;
// false if an id it needs is not cached or the list is longer than 32.
func (c *nearCache) cachedList(dst []*catalogpb.Product, g int64, ids []int64, atMost int32, now int64, vs *verState, hits, absent *int64) ([]*catalogpb.Product, bool) {
	if atMost <= 0 || len(ids) == 0 {
		return dst, true
	}
	n := min(int(atMost), len(ids))
	if n > 32 {
		return dst, false
	}
	for _, id := range ids {
		if len(dst) == n {
			break
		}
		if id <= 0 {
			continue // no such product
		}
		p, ok := c.get(ncKey{g, id}, now, vs)
		if !ok {
			return dst, false
		}
		*hits++
		if p == nil {
			*absent++
			continue
		}
		if p.InStock && !containsID(dst, p.ProductId) {
			dst = append(dst, p)
		}
	}
	return dst, true
}

// GetProductMastersBatch answers every request of reqs in resps (resps[i]
// for reqs[i]; the lengths must be equal) with the rules of
// GetProductMasters, and at most one GetProducts call for all the ids the
// near cache lacks across the batch (with the near cache off, for all ids).
// Ids beyond MaxIDs are asked in several calls of at most MaxIDs ids each,
// one after the other; a batch's ids are not limited in all, only each
// request's.
//
// A non-nil resps[i] is filled in place (its lists reset, their capacity
// reused, so a caller that keeps its responses from batch to batch and
// whose products are cached allocates nothing); a nil one is set to a new
// response. The products in them are shared with the near cache and must
// not be modified. Version is the client's view of the index version
// (shared too).
//
// A request that breaks the rules (nil, product_group_id <= 0, more than
// MaxIDs ids) fails the whole batch with catalog.ErrInvalidArgument naming
// its index, before any call. Other errors are GetProductMasters'; on error
// resps' contents are unspecified.
func (c *Client) GetProductMastersBatch(ctx context.Context, reqs []*catalogpb.ProductMastersRequest, resps []*catalogpb.ProductMastersResponse) error {
	if c.closed.Load() {
		return catalog.ErrClosed
	}
	if len(reqs) != len(resps) {
		return fmt.Errorf("%w: remote: %d requests, %d responses", catalog.ErrInvalidArgument, len(reqs), len(resps))
	}
	for i, r := range resps {
		if r == nil {
			resps[i] = new(catalogpb.ProductMastersResponse)
		}
	}
	if c.legacy() {
		return c.batchRPC(ctx, reqs, resps)
	}
	return c.batch(ctx, reqs, resps)
}

// legacyRetry is how long the client uses GetProductMasters after nodes
// answered GetProducts with UNIMPLEMENTED, before it tries again.
const legacyRetry = 30 * time.Second

// legacy says whether requests go through GetProductMasters because the
// nodes lack GetProducts (a fleet whose nodes are older than its bidders).
func (c *Client) legacy() bool {
	u := c.legacyUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// batchRPC answers a batch with one GetProductMasters call per request,
// the calls made at the same time.
func (c *Client) batchRPC(ctx context.Context, reqs []*catalogpb.ProductMastersRequest, resps []*catalogpb.ProductMastersResponse) error {
	for i, r := range reqs {
		if r == nil {
			return fmt.Errorf("%w: remote: reqs[%d]: nil request", catalog.ErrInvalidArgument, i)
		}
	}
	one := func(req *catalogpb.ProductMastersRequest, into *catalogpb.ProductMastersResponse) error {
		resp, err := c.getProductMastersRPC(ctx, req)
		if err != nil {
			return err
		}
		if onNode(req) {
			c.keepLists(resp)
		}
		into.Product1S, into.Product2S, into.Version = resp.Product1S, resp.Product2S, resp.Version
		return nil
	}
	if len(reqs) == 1 {
		return one(reqs[0], resps[0])
	}
	// The goroutines get the elements, not the slices: the callers' arrays
	// (a single request's live on its stack) stay where they are.
	errs := make(chan error, len(reqs))
	for i := range reqs {
		req, into := reqs[i], resps[i]
		go func() { errs <- one(req, into) }()
	}
	var first error
	for range reqs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// onNode reports whether req is answered by a node's GetProductMasters
// rather than from raw records: its second list comes from the similar
// lists of its viewed products, which the node resolves in the same call.
func onNode(req *catalogpb.ProductMastersRequest) bool {
	return req.SimilarToViewed && len(req.Product2Ids) == 0 && req.Product2QuantityAtMost > 0 && len(req.Product1Ids) > 0
}

// batch is GetProductMastersBatch once resps are all non-nil. Requests
// the node resolves (onNode) are asked with GetProductMasters, one call
// each, at the same time as the GetProducts call of the others: no call
// waits for another's answer.
func (c *Client) batch(ctx context.Context, reqs []*catalogpb.ProductMastersRequest, resps []*catalogpb.ProductMastersResponse) error {
	nodeReqs := 0
	for i, r := range reqs {
		if err := catalog.ValidateRequest(r, c.maxIDs); err != nil {
			if len(reqs) == 1 {
				return fmt.Errorf("remote: %w", err)
			}
			return fmt.Errorf("remote: reqs[%d]: %w", i, err)
		}
		if onNode(r) {
			nodeReqs++
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: remote: %w", catalog.ErrDeadline, err)
	}
	if nodeReqs > 0 {
		if resolved := c.resolveLocally(reqs); &resolved[0] != &reqs[0] {
			reqs, nodeReqs = resolved, 0
			for _, r := range reqs {
				if onNode(r) {
					nodeReqs++
				}
			}
		}
	}
	if nodeReqs == 0 {
		return c.batchRecords(ctx, reqs, resps)
	}
	if nodeReqs == len(reqs) {
		return c.batchRPC(ctx, reqs, resps)
	}
	var rest, resolved []*catalogpb.ProductMastersRequest
	var restResps, resolvedResps []*catalogpb.ProductMastersResponse
	for i, r := range reqs {
		if onNode(r) {
			resolved, resolvedResps = append(resolved, r), append(resolvedResps, resps[i])
		} else {
			rest, restResps = append(rest, r), append(restResps, resps[i])
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.batchRPC(ctx, resolved, resolvedResps) }()
	err := c.batchRecords(ctx, rest, restResps)
	if rerr := <-done; err == nil {
		err = rerr
	}
	return err
}

// batchRecords answers reqs (valid, none onNode) from the near cache and
// one GetProducts call for what it lacks.
func (c *Client) batchRecords(ctx context.Context, reqs []*catalogpb.ProductMastersRequest, resps []*catalogpb.ProductMastersResponse) error {
	sc := c.getScratch()
	defer c.putScratch(sc)

	nc := c.near
	var now int64
	var vs *verState
	if nc != nil {
		now = nc.now()
		vs = nc.ver.Load()
	}
	var hits, absent, misses int64
	for _, r := range reqs {
		g := r.ProductGroupId
		for _, ids := range [2][]int64{r.Product1Ids, r.Product2Ids} {
			for _, id := range ids {
				if id <= 0 { // no such product; nodes refuse to be asked
					sc.prod, sc.miss = append(sc.prod, nil), append(sc.miss, -1)
					continue
				}
				k := ncKey{g, id}
				if nc != nil {
					if p, ok := nc.get(k, now, vs); ok {
						hits++
						if p == nil {
							absent++
						}
						sc.prod, sc.miss = append(sc.prod, p), append(sc.miss, -1)
						continue
					}
					misses++
				}
				j, ok := sc.index[k]
				if !ok {
					j = int32(len(sc.keys))
					sc.index[k] = j
					sc.keys = append(sc.keys, k)
				}
				sc.prod, sc.miss = append(sc.prod, nil), append(sc.miss, j)
			}
		}
	}
	if nc != nil {
		nc.count(hits, absent, misses)
	}
	if len(sc.keys) > 0 {
		if err := c.fetch(ctx, sc); err != nil {
			if status.Code(err) == codes.Unimplemented {
				c.legacyUntil.Store(time.Now().Add(legacyRetry).UnixNano())
				c.log.Warn("catalog nodes do not serve GetProducts: near cache bypassed, GetProductMasters used", zap.Duration("retry_in", legacyRetry))
				return c.batchRPC(ctx, reqs, resps)
			}
			return err
		}
		if nc != nil {
			vs = nc.ver.Load()
		}
	}

	// Answer each request from the products found, with the shared rules.
	at := 0
	for i, r := range reqs {
		resp := resps[i]
		n1, n2 := len(r.Product1Ids), len(r.Product2Ids)
		resp.Product1S = sc.list(resp.Product1S[:0], at, at+n1, r.Product1QuantityAtMost)
		resp.Product2S = sc.list(resp.Product2S[:0], at+n1, at+n1+n2, r.Product2QuantityAtMost)
		at += n1 + n2
		if vs != nil {
			resp.Version = vs.v
		} else {
			resp.Version = nil
		}
	}
	return nil
}

// list applies GetProductMasters' rules to the ids at [from, to) of the
// scratch: in order, skipping absent and out-of-stock products, each id at
// most once, at most atMost.
func (sc *batchScratch) list(dst []*catalogpb.Product, from, to int, atMost int32) []*catalogpb.Product {
	if atMost <= 0 || from == to {
		return dst
	}
	n := min(int(atMost), to-from)
	long := n > 32
	if long && len(sc.seen) > 0 {
		clear(sc.seen)
	}
	for i := from; i < to && len(dst) < n; i++ {
		p := sc.prod[i]
		if j := sc.miss[i]; j >= 0 {
			p = sc.got[j]
		}
		if p == nil || !p.InStock {
			continue
		}
		if long {
			if _, dup := sc.seen[p.ProductId]; dup {
				continue
			}
			sc.seen[p.ProductId] = struct{}{}
		} else if containsID(dst, p.ProductId) {
			continue
		}
		dst = append(dst, p)
	}
	return dst
}

func containsID(ps []*catalogpb.Product, id int64) bool {
	for _, p := range ps {
		if p.ProductId == id {
			return true
		}
	}
	return false
}

// fetch asks the nodes for sc.keys (GetProducts, at most maxIDs ids per
// call) and sets sc.got, inserting the answers into the near cache when
// they come from its index content.
func (c *Client) fetch(ctx context.Context, sc *batchScratch) error {
	if c.hub.zeroNodes() {
		c.m.callMethod(methodGetProducts, codes.Unavailable, 0)
		return fmt.Errorf("%w: remote: no catalog nodes", catalog.ErrUnavailable)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.callTimeout)
		defer cancel()
	}
	sc.got = append(sc.got[:0], make([]*catalogpb.Product, len(sc.keys))...)
	for from := 0; from < len(sc.keys); from += c.maxIDs {
		if err := c.fetchChunk(ctx, sc, from, min(from+c.maxIDs, len(sc.keys))); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) fetchChunk(ctx context.Context, sc *batchScratch, from, to int) error {
	keys := sc.keys[from:to]
	// Group the keys by product group, in order of first appearance;
	// order[k] is the index in keys of the k-th id asked.
	req := &catalogpb.ProductsRequest{}
	order := make([]int32, 0, len(keys))
	for {
		var pk *catalogpb.ProductKeys
		for i, k := range keys {
			if pk == nil {
				if isAsked(req, k.g) {
					continue
				}
				pk = &catalogpb.ProductKeys{ProductGroupId: k.g}
				req.Groups = append(req.Groups, pk)
			}
			if k.g == pk.ProductGroupId {
				pk.ProductIds = append(pk.ProductIds, k.id)
				order = append(order, int32(from+i))
			}
		}
		if pk == nil {
			break
		}
	}
	resp := new(catalogpb.ProductsResponse)
	if err := c.getProducts(ctx, req, resp); err != nil {
		return c.mapError(ctx, err)
	}
	recs := resp.GetRecords()
	if len(recs) != len(order) {
		return fmt.Errorf("%w: remote: GetProducts answered %d records for %d ids", catalog.ErrUnavailable, len(recs), len(order))
	}
	nc := c.near
	var now int64
	insert := false
	if nc != nil {
		now = nc.now()
		insert = c.observe(resp.GetVersion(), now)
	}
	hash := resp.GetVersion().GetContentHash()
	for pos, rec := range recs {
		j := order[pos]
		k := sc.keys[j]
		if rec.GetProductGroupId() != k.g || rec.GetProductId() != k.id {
			return fmt.Errorf("%w: remote: GetProducts record %d is product %d/%d, asked %d/%d",
				catalog.ErrUnavailable, pos, rec.GetProductGroupId(), rec.GetProductId(), k.g, k.id)
		}
		var p *catalogpb.Product
		if v := rec.GetValue(); len(v) > 0 {
			p = new(catalogpb.Product)
			if err := catalog.DecodeValue(k.g, k.id, v, p); err != nil {
				return fmt.Errorf("%w: remote: %w", catalog.ErrUnavailable, err)
			}
		}
		sc.got[j] = p
		if insert {
			nc.put(k, p, len(rec.GetValue()), hash, now)
		}
	}
	return nil
}

func isAsked(req *catalogpb.ProductsRequest, g int64) bool {
	for _, pk := range req.Groups {
		if pk.ProductGroupId == g {
			return true
		}
	}
	return false
}

// Deadline retry of GetProducts: an attempt that runs out of its own time
// while the caller's deadline still allows is retried on another node (the
// ClientConn's round-robin picks the next one). The first attempts get
// half the remaining time each, the last all of it; an attempt gets no
// deadline of its own below minAttemptTimeout.
const (
	getProductsAttempts = 3
	minAttemptTimeout   = 2 * time.Millisecond
)

// getProducts makes one GetProducts call with deadline retries; ctx has a
// deadline.
func (c *Client) getProducts(ctx context.Context, req *catalogpb.ProductsRequest, resp *catalogpb.ProductsResponse) error {
	cc := c.conns[int(c.next.Add(1))%len(c.conns)]
	for attempt := 1; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(nil)
		if dl, ok := ctx.Deadline(); ok && attempt < getProductsAttempts {
			if half := time.Until(dl) / 2; half >= minAttemptTimeout {
				actx, cancel = context.WithTimeout(ctx, half)
			}
		}
		err := c.invokeOn(actx, cc, methodGetProducts, catalogpb.Catalog_GetProducts_FullMethodName, req, resp)
		if cancel != nil {
			cancel()
		}
		if err == nil || actx == ctx || ctx.Err() != nil || status.Code(err) != codes.DeadlineExceeded {
			return err
		}
		c.m.deadlineRetry()
		resp.Reset()
	}
}

// invoke calls method on the next ClientConn, counted.
func (c *Client) invoke(ctx context.Context, method int, name string, req, resp any) error {
	return c.invokeOn(ctx, c.conns[int(c.next.Add(1))%len(c.conns)], method, name, req, resp)
}

func (c *Client) invokeOn(ctx context.Context, cc *grpc.ClientConn, method int, name string, req, resp any) error {
	var start time.Time
	if c.m != nil {
		start = time.Now()
	}
	err := cc.Invoke(ctx, name, req, resp)
	if c.m != nil {
		c.m.callMethod(method, status.Code(err), time.Since(start).Seconds())
	}
	return err
}

// NearCacheStats returns the near cache's counters (zero when it is off).
func (c *Client) NearCacheStats() NearCacheStats { return c.near.stats() }

// NearCacheMaxEntries is the most entries the near cache can hold (0 when
// it is off): an upper bound on the distinct products it hands out at once.
func (c *Client) NearCacheMaxEntries() int {
	if c.near == nil {
		return 0
	}
	return c.near.maxEntries()
}
