package catalog

import (
	"context"
	"errors"
	"time"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// ProductGetter answers one product lookup: the local index (*Local) and
// the remote client (*remote.Client) both are one. The products returned
// are shared and must not be modified; it must return soon after ctx's
// deadline.
type ProductGetter interface {
	GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// BatchGetter is a ProductGetter that answers several lookups in one round
// trip (the remote client).
type BatchGetter interface {
	// GetProductMastersBatch answers every request of reqs, resps[i] for
	// reqs[i] (len(resps) == len(reqs)). A non-nil resps[i] (kept by the
	// caller from an earlier batch) is filled in place or replaced by one
	// the store does not keep; the caller may then empty its lists for the
	// next batch. The products in them are shared and must not be modified.
	GetProductMastersBatch(ctx context.Context, reqs []*catalogpb.ProductMastersRequest, resps []*catalogpb.ProductMastersResponse) error
}

// IntoGetter is a ProductGetter that answers into the caller's response,
// reusing its lists (the local index, *Local): the fetcher keeps one per
// request state, so a lookup allocates nothing.
type IntoGetter interface {
	GetProductMastersInto(ctx context.Context, req *catalogpb.ProductMastersRequest, resp *catalogpb.ProductMastersResponse) error
}

// CachedGetter is a BatchGetter with a near cache in front of its round
// trips (the remote client with its near cache on).
type CachedGetter interface {
	BatchGetter
	// GetProductMastersCached answers req into resp (its lists reset and
	// reused) from the cache alone, or reports false, having asked no node.
	GetProductMastersCached(req *catalogpb.ProductMastersRequest, resp *catalogpb.ProductMastersResponse) bool
}

// Fetcher is the bid path's product fetcher. It hides how a store is
// asked; a request declares the lookups it may need (Want), settles them
// (Prefetch) and reads each when it needs it (Get), whatever the store:
//
//   - a plain ProductGetter (the local index) is asked lookup by lookup, at
//     Get; Want and Prefetch do nothing;
//   - a BatchGetter (the remote client) is asked every wanted lookup in one
//     call, at Prefetch; a Get of a lookup not wanted asks it alone;
//   - a CachedGetter (the remote client with its near cache) answers each
//     Get of a wanted lookup from its cache, and the first one the cache
//     lacks asks every wanted lookup not answered yet in one call: a bid
//     whose products are cached asks only for the lookups it reads, and a
//     request still makes at most one call.
//
// A Fetcher is safe for concurrent use; a Lookups is one request's.
type Fetcher struct {
	store  ProductGetter
	into   IntoGetter   // store, when it is one
	batch  BatchGetter  // store, when it is one
	cached CachedGetter // store, when it is one
}

// NewFetcher returns the fetcher of store.
func NewFetcher(store ProductGetter) *Fetcher {
	f := &Fetcher{store: store}
	f.into, _ = store.(IntoGetter)
	f.batch, _ = store.(BatchGetter)
	f.cached, _ = store.(CachedGetter)
	return f
}

// Batched reports whether the store answers lookups in batches: only then
// is Want worth calling.
func (f *Fetcher) Batched() bool { return f.batch != nil }

// Query is one product lookup: a group's products the user viewed and was
// recommended (the ids, most relevant first) and how many of each a
// creative shows. Recommended empty asks for products like the viewed
// ones instead.
type Query struct {
	Group                     int64
	Viewed, Recommended       []int64
	ViewedMax, RecommendedMax int32
}

func (q *Query) fill(pm *catalogpb.ProductMastersRequest) {
	pm.ProductGroupId = q.Group
	pm.Product1QuantityAtMost, pm.Product1Ids = q.ViewedMax, q.Viewed
	pm.Product2QuantityAtMost, pm.Product2Ids = q.RecommendedMax, q.Recommended
	pm.SimilarToViewed = len(q.Recommended) == 0
}

// FetchStatus is the outcome of a Get.
type FetchStatus uint8

const (
	// FetchOK: products found.
	FetchOK FetchStatus = iota
	// FetchNone: the lookup found no product.
	FetchNone
	// FetchDeadline: the request's deadline passed before the answer.
	FetchDeadline
	// FetchFailed: the store failed (the error went to Lookups.Observe).
	FetchFailed
)

// Lookups is one request's lookups and their products, kept from request
// to request (Reset) so that fetching allocates nothing once grown. Not
// safe for concurrent use.
type Lookups struct {
	// Observe, when set, is told of every store call: how long it took and
	// its error (nil: answered). A call the deadline prevented is not made.
	Observe func(d time.Duration, err error)

	looked   []looked
	products []*catalogpb.Product
	pm       catalogpb.ProductMastersRequest  // the plain store's request
	answer   catalogpb.ProductMastersResponse // and its answer, with an IntoGetter
	// batch and resps are the requests and answers of the one batch call:
	// reused, never shrunk; pending and ask are the lookups it asks.
	batch   []*catalogpb.ProductMastersRequest
	resps   []*catalogpb.ProductMastersResponse
	pending []int
	ask     []*catalogpb.ProductMastersRequest
	cached  catalogpb.ProductMastersResponse
}

// looked is one lookup of a request: several imps of one request often
// want the same group's products.
type looked struct {
	group      int64
	q1, q2     int32
	start, end int // products[start:end]
	state      uint8
}

// States of a lookup.
const (
	lookDone     = iota // answered: products[start:end]
	lookPending         // wanted for the batch, not yet asked
	lookFailed          // the batch failed
	lookDeadline        // the batch missed the deadline
)

// maxKeptProducts bounds the product list a Lookups keeps across requests.
const maxKeptProducts = 256

// Reset forgets the last request's lookups and products.
func (l *Lookups) Reset() {
	l.looked = l.looked[:0]
	for _, pm := range l.batch {
		pm.Product1Ids, pm.Product2Ids = nil, nil // views of the last request's profile
	}
	clear(l.products)
	l.products = l.products[:0]
	if cap(l.products) > maxKeptProducts {
		l.products = nil
	}
	l.pm.Product1Ids, l.pm.Product2Ids = nil, nil
}

func (l *Lookups) find(q *Query) int {
	for k := range l.looked {
		if lk := &l.looked[k]; lk.group == q.Group && lk.q1 == q.ViewedMax && lk.q2 == q.RecommendedMax {
			return k
		}
	}
	return -1
}

func (l *Lookups) observe(d time.Duration, err error) {
	if l.Observe != nil {
		l.Observe(d, err)
	}
}

// Want adds q to the lookups the request may need, once per group and
// quantities. With a plain store it does nothing (see Batched). q's id
// lists are kept until Reset.
func (f *Fetcher) Want(l *Lookups, q *Query) {
	if f.batch == nil || l.find(q) >= 0 {
		return
	}
	n := len(l.looked)
	if n == len(l.batch) {
		l.batch = append(l.batch, &catalogpb.ProductMastersRequest{})
	}
	q.fill(l.batch[n])
	l.looked = append(l.looked, looked{group: q.Group, q1: q.ViewedMax, q2: q.RecommendedMax, state: lookPending})
}

// Prefetch asks a BatchGetter that has no near cache every wanted lookup
// in one call under ctx, unless deadline has passed. It returns the call's
// time (0 when no call was made).
func (f *Fetcher) Prefetch(ctx context.Context, l *Lookups, deadline time.Time) time.Duration {
	if f.batch == nil || f.cached != nil {
		return 0
	}
	return f.fetchBatch(ctx, l, deadline)
}

// Get returns the products of q (the viewed ones, then the recommended
// ones not among them) and the time spent asking the store: from the
// request's earlier answer, the near cache, the batch, or the store
// itself, as the store allows. The products are valid until Reset.
func (f *Fetcher) Get(ctx context.Context, l *Lookups, q *Query, deadline time.Time) (_ []*catalogpb.Product, _ FetchStatus, d time.Duration) {
	if k := l.find(q); k >= 0 {
		if l.looked[k].state == lookPending {
			d = f.answerPending(ctx, l, k, deadline)
		}
		lk := &l.looked[k]
		switch {
		case lk.state == lookDeadline:
			return nil, FetchDeadline, d
		case lk.state == lookFailed:
			return nil, FetchFailed, d
		case lk.end == lk.start:
			return nil, FetchNone, d
		}
		return l.products[lk.start:lk.end], FetchOK, d
	}
	t := time.Now()
	if !t.Before(deadline) {
		return nil, FetchDeadline, 0
	}
	q.fill(&l.pm)
	var resp *catalogpb.ProductMastersResponse
	var err error
	if f.into != nil {
		resp, err = &l.answer, f.into.GetProductMastersInto(ctx, &l.pm, &l.answer)
	} else {
		resp, err = f.store.GetProductMasters(ctx, &l.pm)
	}
	d = time.Since(t)
	l.pm.Product1Ids, l.pm.Product2Ids = nil, nil
	l.observe(d, err)
	if err != nil {
		if errors.Is(err, ErrDeadline) || ctx.Err() != nil {
			return nil, FetchDeadline, d
		}
		return nil, FetchFailed, d // not kept: a later imp asks again
	}
	start := len(l.products)
	l.addProducts(resp)
	resetResp(&l.answer) // the products are in l.products now
	l.looked = append(l.looked, looked{group: q.Group, q1: q.ViewedMax, q2: q.RecommendedMax, start: start, end: len(l.products)})
	if len(l.products) == start {
		return nil, FetchNone, d
	}
	return l.products[start:], FetchOK, d
}

// addProducts appends the products of resp to l.products: the viewed
// ones, then the recommended ones not among them.
func (l *Lookups) addProducts(resp *catalogpb.ProductMastersResponse) {
	start := len(l.products)
	for _, list := range [2][]*catalogpb.Product{resp.GetProduct1S(), resp.GetProduct2S()} {
		for _, p := range list {
			if p == nil || containsProduct(l.products[start:], p.ProductId) {
				continue // recommended may repeat a viewed product
			}
			l.products = append(l.products, p)
		}
	}
}

func containsProduct(ps []*catalogpb.Product, id int64) bool {
	for _, p := range ps {
		if p.ProductId == id {
			return true
		}
	}
	return false
}

// answerPending answers the pending lookup k from the near cache when it
// can, else asks every lookup still pending in one call. It returns the
// time spent in the store.
func (f *Fetcher) answerPending(ctx context.Context, l *Lookups, k int, deadline time.Time) time.Duration {
	if t := time.Now(); f.cached != nil && t.Before(deadline) {
		if f.cached.GetProductMastersCached(l.batch[k], &l.cached) {
			d := time.Since(t)
			l.observe(d, nil)
			lk := &l.looked[k]
			lk.start = len(l.products)
			l.addProducts(&l.cached)
			lk.end, lk.state = len(l.products), lookDone
			resetResp(&l.cached)
			return d
		}
	}
	return f.fetchBatch(ctx, l, deadline)
}

// fetchBatch asks the batch store, in one call under ctx, the lookups still
// pending, and settles them: answered, failed or past the deadline. It
// returns the call's time.
func (f *Fetcher) fetchBatch(ctx context.Context, l *Lookups, deadline time.Time) time.Duration {
	l.pending, l.ask = l.pending[:0], l.ask[:0]
	for k := range l.looked {
		if l.looked[k].state == lookPending {
			l.pending = append(l.pending, k)
			l.ask = append(l.ask, l.batch[k])
		}
	}
	n := len(l.pending)
	if n == 0 {
		return 0
	}
	defer clear(l.ask)
	t := time.Now()
	if !t.Before(deadline) {
		l.settle(lookDeadline)
		return 0
	}
	for len(l.resps) < n {
		l.resps = append(l.resps, nil)
	}
	resps := l.resps[:n]
	err := f.batch.GetProductMastersBatch(ctx, l.ask, resps)
	d := time.Since(t)
	l.observe(d, err)
	defer resetResps(resps)
	if err != nil {
		if errors.Is(err, ErrDeadline) || ctx.Err() != nil {
			l.settle(lookDeadline)
		} else {
			l.settle(lookFailed)
		}
		return d
	}
	for j, k := range l.pending {
		lk := &l.looked[k]
		lk.start = len(l.products)
		l.addProducts(resps[j])
		lk.end, lk.state = len(l.products), lookDone
	}
	return d
}

// settle gives every pending lookup the state s.
func (l *Lookups) settle(s uint8) {
	for _, k := range l.pending {
		l.looked[k].state = s
	}
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
