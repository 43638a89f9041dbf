package bidder

import (
	"time"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
)

// fetched caches one product lookup within a request (several imps of one
// request often want the same group's products).
type fetched struct {
	group      int64
	q1, q2     int32
	start, end int // st.products[start:end]
	state      uint8
}

// States of a fetched lookup.
const (
	fetchDone     = iota // answered: st.products[start:end]
	fetchPending         // collected for the batch, not yet asked
	fetchFailed          // the batch failed: technical error
	fetchDeadline        // the batch missed the deadline
)

// fetch returns the products of c for the user in st.profile: one
// ProductMastersRequest (viewed ids, then recommended, quantities from the
// creative template), cached per request: found in st.fetched when plan's
// batch (or an earlier imp) asked it, else asked now. bidMade means
// products were found.
func (b *Bidder) fetch(st *reqState, c *campaign.Campaign) (_ []*catalogpb.Product, _ rtb.NoBidReason, d time.Duration) {
	g := c.ProductGroupID
	q1, q2 := c.Creative.Quantities()
	for k := range st.fetched {
		f := &st.fetched[k]
		if f.group == g && f.q1 == q1 && f.q2 == q2 {
			if f.state == fetchPending {
				d = b.answerPending(st, k)
			}
			switch f.state {
			case fetchDeadline:
				st.m.misses[missCatalog].Inc()
				return nil, rtb.NoBidDeadline, d
			case fetchFailed:
				return nil, rtb.NoBidTechnicalError, d
			}
			if f.end == f.start {
				return nil, rtb.NoBidNoProducts, d
			}
			return st.products[f.start:f.end], bidMade, d
		}
	}
	t := time.Now()
	if !t.Before(st.deadline) {
		st.m.misses[missCatalog].Inc()
		return nil, rtb.NoBidDeadline, 0
	}
	pm := st.pm
	pm.ProductGroupId = g
	pm.Product1QuantityAtMost, pm.Product1Ids = q1, st.profile.ViewedIn(g)
	pm.Product2QuantityAtMost, pm.Product2Ids = q2, st.profile.RecommendedIn(g)
	pm.SimilarToViewed = len(pm.Product2Ids) == 0 // no Recommended: products like the viewed ones
	resp, err := b.opts.Products.GetProductMasters(&st.dctx, pm)
	d = time.Since(t)
	st.m.stage[stageCatalog].Observe(d.Seconds())
	pm.Product1Ids, pm.Product2Ids = nil, nil
	if err != nil {
		kind := catalogErrKind(err)
		st.m.catErrs[kind].Inc()
		if kind == errDeadline || st.dctx.Err() != nil {
			st.m.misses[missCatalog].Inc()
			return nil, rtb.NoBidDeadline, d
		}
		return nil, rtb.NoBidTechnicalError, d
	}
	start := len(st.products)
	st.addProducts(resp)
	st.fetched = append(st.fetched, fetched{group: g, q1: q1, q2: q2, start: start, end: len(st.products)})
	if len(st.products) == start {
		return nil, rtb.NoBidNoProducts, d
	}
	return st.products[start:], bidMade, d
}

// addProducts appends the products of resp to st.products: the viewed
// ones, then the recommended ones not among them.
func (st *reqState) addProducts(resp *catalogpb.ProductMastersResponse) {
	start := len(st.products)
	for _, list := range [2][]*catalogpb.Product{resp.GetProduct1S(), resp.GetProduct2S()} {
		for _, p := range list {
			if p == nil || containsProduct(st.products[start:], p.ProductId) {
				continue // recommended may repeat a viewed product
			}
			st.products = append(st.products, p)
		}
	}
}

// want adds c's lookup to the batch plan collects in st.fetched (state
// fetchPending; its request st.pmBatch[index]), once per group and
// quantities.
func (st *reqState) want(c *campaign.Campaign) {
	g := c.ProductGroupID
	q1, q2 := c.Creative.Quantities()
	for _, f := range st.fetched {
		if f.group == g && f.q1 == q1 && f.q2 == q2 {
			return
		}
	}
	n := len(st.fetched)
	if n == len(st.pmBatch) {
		st.pmBatch = append(st.pmBatch, &catalogpb.ProductMastersRequest{})
	}
	pm := st.pmBatch[n]
	pm.ProductGroupId = g
	pm.Product1QuantityAtMost, pm.Product1Ids = q1, st.profile.ViewedIn(g)
	pm.Product2QuantityAtMost, pm.Product2Ids = q2, st.profile.RecommendedIn(g)
	pm.SimilarToViewed = len(pm.Product2Ids) == 0 // no Recommended: products like the viewed ones
	st.fetched = append(st.fetched, fetched{group: g, q1: q1, q2: q2, state: fetchPending})
}

// answerPending answers the pending lookup st.fetched[k] from b.cached's
// cache when it can, else asks every lookup still pending in one call
// (fetchBatch). It returns the time spent in the catalog.
func (b *Bidder) answerPending(st *reqState, k int) time.Duration {
	if t := time.Now(); b.cached != nil && t.Before(st.deadline) {
		if b.cached.GetProductMastersCached(st.pmBatch[k], &st.pmCached) {
			d := time.Since(t)
			st.m.stage[stageCatalog].Observe(d.Seconds())
			f := &st.fetched[k]
			f.start = len(st.products)
			st.addProducts(&st.pmCached)
			f.end, f.state = len(st.products), fetchDone
			resetResp(&st.pmCached)
			return d
		}
	}
	return b.fetchBatch(st)
}

// fetchBatch asks b.batch, in one call under the request's deadline, the
// lookups of st.fetched still pending (want collected them), and settles
// them: answered, failed (counted by error kind) or past the deadline (the
// miss is counted when a candidate needs it, as fetch counts one). It
// returns the call's time.
func (b *Bidder) fetchBatch(st *reqState) time.Duration {
	st.pending, st.pmAsk = st.pending[:0], st.pmAsk[:0]
	for k := range st.fetched {
		if st.fetched[k].state == fetchPending {
			st.pending = append(st.pending, k)
			st.pmAsk = append(st.pmAsk, st.pmBatch[k])
		}
	}
	n := len(st.pending)
	if n == 0 {
		return 0
	}
	reqs := st.pmAsk
	defer clear(st.pmAsk)
	t := time.Now()
	if !t.Before(st.deadline) {
		st.settle(fetchDeadline)
		return 0
	}
	for len(st.pmResps) < n {
		st.pmResps = append(st.pmResps, nil)
	}
	resps := st.pmResps[:n]
	err := b.batch.GetProductMastersBatch(&st.dctx, reqs, resps)
	d := time.Since(t)
	st.m.stage[stageCatalog].Observe(d.Seconds())
	defer resetResps(resps)
	if err != nil {
		kind := catalogErrKind(err)
		st.m.catErrs[kind].Inc()
		if kind == errDeadline || st.dctx.Err() != nil {
			st.settle(fetchDeadline)
		} else {
			st.settle(fetchFailed)
		}
		return d
	}
	for j, k := range st.pending {
		f := &st.fetched[k]
		f.start = len(st.products)
		st.addProducts(resps[j])
		f.end, f.state = len(st.products), fetchDone
	}
	return d
}

// resetResps empties the answers of a batch for the next one, keeping
// them and their lists' capacity (so that a batch the near cache answers
// allocates nothing) but no product of this one.
func resetResps(resps []*catalogpb.ProductMastersResponse) {
	for _, r := range resps {
		if r != nil {
			resetResp(r)
		}
	}
}

func resetResp(r *catalogpb.ProductMastersResponse) {
	clear(r.Product1S)
	clear(r.Product2S)
	r.Product1S, r.Product2S, r.Version = r.Product1S[:0], r.Product2S[:0], nil
}

// settle gives every pending lookup of st.fetched the state s.
func (st *reqState) settle(s uint8) {
	for _, k := range st.pending {
		st.fetched[k].state = s
	}
}

// httpsOnly returns the products of ps a secure creative may show: all but
// those whose image URL is plain http (a product without a usable image
// URL shows none, so it stays). It filters into st.secure, reused by the
// request's imps; ps itself is returned when it has nothing to drop.
func (st *reqState) httpsOnly(ps []*catalogpb.Product) []*catalogpb.Product {
	drop := false
	for _, p := range ps {
		if p != nil && creative.PlainHTTP(p.ImageUrl) {
			drop = true
			break
		}
	}
	if !drop {
		return ps
	}
	st.secure = st.secure[:0]
	for _, p := range ps {
		if p != nil && !creative.PlainHTTP(p.ImageUrl) {
			st.secure = append(st.secure, p)
		}
	}
	return st.secure
}

func containsProduct(ps []*catalogpb.Product, id int64) bool {
	for _, p := range ps {
		if p.ProductId == id {
			return true
		}
	}
	return false
}
