package bidder

import (
	"time"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
)

// query is the product lookup of campaign c for the user in st.profile:
// the viewed ids of its group, then the recommended ones, quantities from
// its creative template. It points into st.q, valid until the next query.
func (st *reqState) query(c *campaign.Campaign) *catalog.Query {
	g := c.ProductGroupID
	q1, q2 := c.Creative.Quantities()
	st.q = catalog.Query{Group: g, Viewed: st.profile.ViewedIn(g), Recommended: st.profile.RecommendedIn(g), ViewedMax: q1, RecommendedMax: q2}
	return &st.q
}

// fetch returns the products of c for the user (b.products: looked up once
// per request, prefetched by plan when the store batches), bidMade when
// there are some, and the time spent in the catalog.
func (b *Bidder) fetch(st *reqState, c *campaign.Campaign) ([]*catalogpb.Product, rtb.NoBidReason, time.Duration) {
	ps, status, d := b.products.Get(&st.dctx, &st.lookups, st.query(c), st.deadline)
	switch status {
	case catalog.FetchDeadline:
		st.m.misses[missCatalog].Inc()
		return nil, rtb.NoBidDeadline, d
	case catalog.FetchFailed:
		return nil, rtb.NoBidTechnicalError, d
	case catalog.FetchNone:
		return nil, rtb.NoBidNoProducts, d
	}
	return ps, bidMade, d
}

// observeCatalog counts one product store call (catalog.Lookups.Observe).
func (st *reqState) observeCatalog(d time.Duration, err error) {
	st.m.stage[stageCatalog].Observe(d.Seconds())
	if err != nil {
		st.m.catErrs[catalogErrKind(err)].Inc()
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
