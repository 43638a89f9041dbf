package demo

import (
	"context"
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/splitmix"
)

// demoSegments are the segments demo users draw from.
var demoSegments = [...]string{
	"fashion", "sports", "home-garden", "electronics", "beauty",
	"high-value", "cart-abandoner", "loyal", "new-visitor", "deal-seeker",
}

// Segments returns the segments demo users are given (a fresh slice).
func Segments() []string { return append([]string(nil), demoSegments[:]...) }

// UserID is the id of demo user i (1-based): "demo-user-<i>".
func UserID(i int) string { return "demo-user-" + strconv.Itoa(i) }

// Stock lists the in-stock product ids of each group of a feed, in id
// order; only in-stock products are served by the catalog, so demo users
// only ever see those.
type Stock struct {
	groups   [][]int64 // index group-1
	nonEmpty []int64   // groups with at least one product in stock
}

// NewStock reads the in-stock products of the feed o describes (o.Products,
// o.Groups, o.Seed after defaults) from feedgen.Product, without writing the
// feed. It is O(Products).
func NewStock(o Options) *Stock {
	o = o.withDefaults()
	fo := o.feedOptions()
	s := &Stock{groups: make([][]int64, o.Groups)}
	for i := 0; i < o.Products; i++ {
		p := feedgen.Product(i, fo)
		if p.InStock && p.ProductGroupId >= 1 && int(p.ProductGroupId) <= o.Groups {
			g := &s.groups[p.ProductGroupId-1]
			*g = append(*g, p.ProductId)
		}
	}
	for g, ids := range s.groups {
		if len(ids) > 0 {
			s.nonEmpty = append(s.nonEmpty, int64(g+1))
		}
	}
	return s
}

// InGroup returns the in-stock product ids of group (nil if none). The
// slice is the Stock's: do not modify it.
func (s *Stock) InGroup(group int64) []int64 {
	if group < 1 || int(group) > len(s.groups) {
		return nil
	}
	return s.groups[group-1]
}

// UserProfile fills p (reset first) with demo user i's profile (1-based) for
// the feed of o, whose in-stock products stock lists: 1-3 groups with stock,
// 5-40 viewed products (each group at least one), 10-30 recommended
// products of the same groups that the user did not view (fewer when a group
// runs out of stock), 1-3 segments. The same (i, o.Seed, stock) give the
// same profile. It returns false, leaving p empty, when no group has stock.
func UserProfile(i int, o Options, stock *Stock, p *user.Profile) bool {
	o = o.withDefaults()
	p.Reset()
	if len(stock.nonEmpty) == 0 {
		return false
	}
	r := splitmix.Rand{S: splitmix.Mix(uint64(o.Seed)^0x243f6a8885a308d3) ^ splitmix.Mix(uint64(i))}
	nGroups := 1 + r.IntN(min(3, len(stock.nonEmpty)))
	groups := make([]int64, 0, 3)
	for len(groups) < nGroups {
		g := stock.nonEmpty[r.IntN(len(stock.nonEmpty))]
		if !contains(groups, g) {
			groups = append(groups, g)
		}
	}
	nViewed := 5 + r.IntN(36)
	nRec := 10 + r.IntN(21)
	for _, g := range groups {
		p.Viewed = append(p.Viewed, user.GroupIDs{Group: g})
		p.Recommended = append(p.Recommended, user.GroupIDs{Group: g})
	}
	// Each group gets one view first, then the rest go to random groups.
	for k := 0; k < nViewed; k++ {
		gi := k
		if k >= nGroups {
			gi = r.IntN(nGroups)
		}
		if id, ok := pick(&r, stock.InGroup(groups[gi]), p.Viewed[gi].IDs, nil); ok {
			p.Viewed[gi].IDs = append(p.Viewed[gi].IDs, id)
		}
	}
	for k := 0; k < nRec; k++ {
		gi := r.IntN(nGroups)
		if id, ok := pick(&r, stock.InGroup(groups[gi]), p.Viewed[gi].IDs, p.Recommended[gi].IDs); ok {
			p.Recommended[gi].IDs = append(p.Recommended[gi].IDs, id)
		}
	}
	kept := p.Recommended[:0]
	for _, g := range p.Recommended {
		if len(g.IDs) > 0 {
			kept = append(kept, g)
		}
	}
	p.Recommended = kept
	nSeg := 1 + r.IntN(3)
	for len(p.Segments) < nSeg {
		s := demoSegments[r.IntN(len(demoSegments))]
		if !p.HasSegment(s) {
			p.Segments = append(p.Segments, s)
		}
	}
	return true
}

// pick draws an id of ids that is in neither a nor b: a random start, then
// the next free one.
func pick(r *splitmix.Rand, ids, a, b []int64) (int64, bool) {
	if len(ids) == 0 {
		return 0, false
	}
	start := r.IntN(len(ids))
	for k := 0; k < len(ids); k++ {
		id := ids[(start+k)%len(ids)]
		if !contains(a, id) && !contains(b, id) {
			return id, true
		}
	}
	return 0, false
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// WriteUsers writes the profiles of demo users 1..o.Users, for the feed of
// o (o.Products, o.Groups, o.Seed; o.Dir is not used), into the user store
// in dir (created if needed; replacing these users' profiles if it has
// them). The store must not be open in another process (a running bidder).
// It returns the number of users written.
func WriteUsers(ctx context.Context, dir string, o Options, log *zap.Logger) (n int, err error) {
	o, stock, err := demoStock(o)
	if err != nil {
		return 0, err
	}
	s, err := pebblestore.Open(dir, pebblestore.Options{Logger: log})
	if err != nil {
		return 0, fmt.Errorf("demo: users: %w", err)
	}
	defer func() {
		if cerr := s.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("demo: users: %w", cerr)
		}
	}()
	return bulkPutUsers(ctx, s, o, stock)
}

// demoStock checks o and returns it with defaults, and its Stock.
func demoStock(o Options) (Options, *Stock, error) {
	if err := o.validate(false); err != nil {
		return o, nil, err
	}
	o = o.withDefaults()
	stock := NewStock(o)
	if len(stock.nonEmpty) == 0 {
		return o, nil, fmt.Errorf("%w: the feed of %d products has none in stock", ErrBadOptions, o.Products)
	}
	return o, stock, nil
}

// bulkPutUsers writes the demo users through s's bulk writer.
func bulkPutUsers(ctx context.Context, s *pebblestore.Store, o Options, stock *Stock) (int, error) {
	bw, err := s.NewBulkWriter()
	if err != nil {
		return 0, fmt.Errorf("demo: users: %w", err)
	}
	var p user.Profile
	for i := 1; i <= o.Users; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				_ = bw.Close()
				return 0, err
			}
		}
		UserProfile(i, o, stock, &p)
		if err := bw.Put(UserID(i), &p); err != nil {
			_ = bw.Close()
			return 0, fmt.Errorf("demo: users: %w", err)
		}
	}
	if err := bw.Close(); err != nil {
		return 0, fmt.Errorf("demo: users: %w", err)
	}
	return o.Users, nil
}
