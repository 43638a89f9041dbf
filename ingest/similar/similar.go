// Package similar computes, per product, the products most like it within
// its group, from product views (co-views) with a content fallback: the
// similar lists the ingest job stores in the index version it publishes
// (`rtbd ingest -views DIR`), which the bid path turns into the
// recommended products of a user who has no Recommended list of their own.
//
// # Co-views
//
// Views are (user, group, product, time). Each user's views in the window
// are reduced to their distinct products, the most recent first, and cut
// to MaxViewsPerUser before any pair is formed (a user who viewed 5,000
// products says little about any two of them, and would cost 25 million
// pairs). A user with more than RobotViews views in the window is not a
// shopper (a crawler, a shared id) and is skipped entirely. Each product
// keeps at most MaxUsersPerProduct of its viewers: those with the smallest
// user hash, the same users for every product (a consistent sample, so
// that co-views survive the cut).
//
// The similarity of A and B (same group, B in stock) is the cosine of
// their viewer sets: co(A,B) / sqrt(n(A) * n(B)), where co is the number of
// users who viewed both and n the viewers kept per product, so popular
// products do not dominate every list. Pairs seen by fewer than MinSupport
// users are dropped (one shared viewer is noise). A product's list is the
// K best, ties broken by the smaller id, so the lists depend on the views
// and the catalog alone: nodes that ingest the same feed and views agree
// on them and on the version's content hash.
//
// # Content fallback
//
// A product with fewer than K co-viewed products (a new product, a
// product nobody viewed yet) gets the rest of its list from the catalog:
// in-stock products of the same group with the same category path and
// brand, nearest in price first (by |ln(price ratio)|, ties by id), then,
// still short, of the same category path and any brand. Their scores are
// below every co-view score, so co-viewed products come first when lists
// are merged at bid time.
//
// # Memory
//
// Memory is bounded by the options, not by the number of views: the
// (user, product) pairs held are at most MaxPairs (16 bytes each); beyond
// it, users are sampled by hash (the sample halves until it fits, the same
// users whatever the order the views come in), and the count of users
// sampled out is reported. Per product: about 50 bytes and the
// category/brand strings once each; per worker, 4 bytes per product.
package similar

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rtbd/rtbd/catalog"
)

// Options bound the computation. Zero values take the defaults noted.
type Options struct {
	// K is the length of each list. Default 20, at most catalog.MaxSimilar.
	K int
	// MinSupport is the fewest users who viewed both products for a
	// co-view pair to count. Default 2.
	MinSupport int
	// MaxViewsPerUser is how many distinct products (the most recent) of
	// each user form pairs. Default 50.
	MaxViewsPerUser int
	// MaxUsersPerProduct is how many viewers each product keeps. Default
	// 1000.
	MaxUsersPerProduct int
	// RobotViews: a user with more views than this in the window is
	// skipped. Default 10,000.
	RobotViews int
	// MaxPairs bounds the (user, product) views held in memory (16 bytes
	// each); beyond it users are sampled. Default 20,000,000 (320 MB).
	MaxPairs int
	// Workers computing lists. Default GOMAXPROCS.
	Workers int
}

// Defaults of Options.
const (
	DefaultK                  = 20
	DefaultMinSupport         = 2
	DefaultMaxViewsPerUser    = 50
	DefaultMaxUsersPerProduct = 1000
	DefaultRobotViews         = 10_000
	DefaultMaxPairs           = 20_000_000
)

func (o *Options) withDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.K, DefaultK)
	o.K = min(o.K, catalog.MaxSimilar)
	def(&o.MinSupport, DefaultMinSupport)
	def(&o.MaxViewsPerUser, DefaultMaxViewsPerUser)
	def(&o.MaxUsersPerProduct, DefaultMaxUsersPerProduct)
	def(&o.RobotViews, DefaultRobotViews)
	def(&o.MaxPairs, DefaultMaxPairs)
	def(&o.Workers, runtime.GOMAXPROCS(0))
}

// Product is what the computation needs of a catalog product.
type Product struct {
	Group, ID   int64
	PriceMicros int64
	Category    string
	Brand       string
	InStock     bool
}

// Stats counts what a computation read, skipped and produced.
type Stats struct {
	Products int64
	// Views read; the ones kept formed the lists. The others: of a product
	// the catalog does not hold in that group (UnknownProduct), without a
	// user id (NoUser), a product the user had viewed already in the
	// window (Duplicate), beyond the user's MaxViewsPerUser distinct
	// products (Capped), of a user over RobotViews (Robot, RobotUsers
	// users), of a user left out of the sample (SampledOut).
	Views, UnknownProduct, NoUser, Duplicate, Capped, Robot, SampledOut int64
	RobotUsers                                                          int64
	// Users whose views were used; SampleShare the share of users kept (1:
	// all).
	Users       int64
	SampleShare float64
	// Lists: products with a list; CoViewed those whose list holds a
	// co-viewed product, ContentOnly those with content-similar products
	// only. Entries in all lists.
	Lists, CoViewed, ContentOnly, Entries int64
}

// view is one (user, product) view held in memory.
type view struct {
	user uint64
	t    uint32 // unix seconds
	prod uint32 // product index
}

// Computer gathers products and views, then computes the lists. Not safe
// for concurrent use.
type Computer struct {
	opts Options

	// Products, in ascending (group, id) order: structure of arrays.
	group, id, price []int64
	cat, brand       []uint32
	inStock          []bool
	strs             map[string]uint32

	views []view
	// sampling: users whose hash is above limit are left out.
	limit uint64
	stats Stats
	order bool // products were added out of order
}

// New returns a Computer with opts.
func New(opts Options) *Computer {
	opts.withDefaults()
	return &Computer{opts: opts, strs: map[string]uint32{"": 0}, limit: math.MaxUint64}
}

// ErrOrder: AddProduct was called out of (group, id) order.
var ErrOrder = errors.New("similar: products not in ascending (group, id) order")

// AddProduct adds a catalog product; products must come in ascending
// (group, id) order (the index's key order), each once.
func (c *Computer) AddProduct(p Product) {
	if n := len(c.id); n > 0 && cmpKey(c.group[n-1], c.id[n-1], p.Group, p.ID) >= 0 {
		c.order = true
		return
	}
	c.group = append(c.group, p.Group)
	c.id = append(c.id, p.ID)
	c.price = append(c.price, p.PriceMicros)
	c.cat = append(c.cat, c.intern(p.Category))
	c.brand = append(c.brand, c.intern(p.Brand))
	c.inStock = append(c.inStock, p.InStock)
	c.stats.Products++
}

func (c *Computer) intern(s string) uint32 {
	if v, ok := c.strs[s]; ok {
		return v
	}
	v := uint32(len(c.strs))
	c.strs[s] = v
	return v
}

func cmpKey(g1, id1, g2, id2 int64) int {
	if g1 != g2 {
		return cmp.Compare(g1, g2)
	}
	return cmp.Compare(id1, id2)
}

// find returns the index of product (g, id), or -1.
func (c *Computer) find(g, id int64) int {
	lo, hi := 0, len(c.id)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cmpKey(c.group[m], c.id[m], g, id) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(c.id) && c.group[lo] == g && c.id[lo] == id {
		return lo
	}
	return -1
}

// AddView adds one view. Add every product first.
func (c *Computer) AddView(user string, group, id int64, at time.Time) {
	c.stats.Views++
	if user == "" {
		c.stats.NoUser++
		return
	}
	p := c.find(group, id)
	if p < 0 {
		c.stats.UnknownProduct++
		return
	}
	h := xxhash.Sum64String(user)
	if h > c.limit {
		c.stats.SampledOut++
		return
	}
	ts := at.Unix()
	c.views = append(c.views, view{user: h, t: uint32(max(0, min(ts, math.MaxUint32))), prod: uint32(p)})
	for len(c.views) > c.opts.MaxPairs {
		c.limit >>= 1
		kept := c.views[:0]
		for _, v := range c.views {
			if v.user <= c.limit {
				kept = append(kept, v)
			} else {
				c.stats.SampledOut++
			}
		}
		c.views = kept
	}
}

// Compute computes every product's list and calls emit with each non-empty
// one, in ascending (group, id) order (list is reused after emit returns).
// An error from emit stops it.
func (c *Computer) Compute(emit func(group, id int64, list []catalog.Similar) error) (Stats, error) {
	if c.order {
		return c.stats, ErrOrder
	}
	n := len(c.id)
	if n == 0 {
		return c.stats, nil
	}
	c.stats.SampleShare = 1
	if c.limit != math.MaxUint64 {
		c.stats.SampleShare = float64(c.limit) / float64(math.MaxUint64)
	}
	uoff, uprods := c.userLists()
	poff, pusers := c.productLists(uoff, uprods)
	byBrand, byCat, posBrand, posCat := c.contentOrders()

	w := &work{c: c, uoff: uoff, uprods: uprods, poff: poff, pusers: pusers,
		byBrand: byBrand, byCat: byCat, posBrand: posBrand, posCat: posCat}
	const chunk = 4096
	workers := max(1, c.opts.Workers)
	scr := make([]*scratch, workers)
	for i := range scr {
		scr[i] = &scratch{cnt: make([]uint32, n)}
	}
	results := make([][]catalog.Similar, chunk)
	kinds := make([]uint8, chunk)
	for start := 0; start < n; start += chunk {
		end := min(n, start+chunk)
		var wg sync.WaitGroup
		per := (end - start + workers - 1) / workers
		for wi := 0; wi < workers; wi++ {
			lo, hi := start+wi*per, min(end, start+(wi+1)*per)
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func(s *scratch, lo, hi int) {
				defer wg.Done()
				for a := lo; a < hi; a++ {
					results[a-start], kinds[a-start] = w.list(s, a, results[a-start][:0])
				}
			}(scr[wi], lo, hi)
		}
		wg.Wait()
		for a := start; a < end; a++ {
			list := results[a-start]
			if len(list) == 0 {
				continue
			}
			c.stats.Lists++
			c.stats.Entries += int64(len(list))
			if kinds[a-start] == kindCoViewed {
				c.stats.CoViewed++
			} else {
				c.stats.ContentOnly++
			}
			if err := emit(c.group[a], c.id[a], list); err != nil {
				return c.stats, err
			}
		}
	}
	return c.stats, nil
}

// userLists sorts the views by user and builds each kept user's distinct
// products, most recent first, cut to MaxViewsPerUser (CSR: user u's
// products are uprods[uoff[u]:uoff[u+1]]). Users are in ascending hash
// order. The views are released.
func (c *Computer) userLists() (uoff, uprods []uint32) {
	vs := c.views
	c.views = nil
	slices.SortFunc(vs, func(a, b view) int {
		if a.user != b.user {
			return cmp.Compare(a.user, b.user)
		}
		if a.t != b.t {
			return cmp.Compare(b.t, a.t) // most recent first
		}
		return cmp.Compare(a.prod, b.prod)
	})
	stamp := make([]uint32, len(c.id)) // user number + 1 that last had the product
	uoff = append(uoff, 0)
	uprods = make([]uint32, 0, len(vs)/2+16)
	var users uint32
	for i := 0; i < len(vs); {
		j := i + 1
		for j < len(vs) && vs[j].user == vs[i].user {
			j++
		}
		if j-i > c.opts.RobotViews {
			c.stats.Robot += int64(j - i)
			c.stats.RobotUsers++
			i = j
			continue
		}
		users++
		kept := 0
		for _, v := range vs[i:j] {
			if stamp[v.prod] == users {
				c.stats.Duplicate++
				continue
			}
			stamp[v.prod] = users
			if kept == c.opts.MaxViewsPerUser {
				c.stats.Capped++
				continue
			}
			uprods = append(uprods, v.prod)
			kept++
		}
		uoff = append(uoff, uint32(len(uprods)))
		i = j
	}
	c.stats.Users = int64(users)
	return uoff, slices.Clip(uprods)
}

// productLists builds each product's viewers (CSR over user numbers), at
// most MaxUsersPerProduct, the first ones in hash order.
func (c *Computer) productLists(uoff, uprods []uint32) (poff, pusers []uint32) {
	n := len(c.id)
	limit := uint32(c.opts.MaxUsersPerProduct)
	cnt := make([]uint32, n+1)
	for _, p := range uprods {
		if cnt[p+1] < limit {
			cnt[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	poff = cnt
	pusers = make([]uint32, poff[n])
	fill := make([]uint32, n)
	for u := 0; u+1 < len(uoff); u++ {
		for _, p := range uprods[uoff[u]:uoff[u+1]] {
			if fill[p] < poff[p+1]-poff[p] {
				pusers[poff[p]+fill[p]] = uint32(u)
				fill[p]++
			}
		}
	}
	return poff, pusers
}

// contentOrders returns the product indexes sorted by (group, category,
// brand, price, id) and by (group, category, price, id), and each
// product's position in both.
func (c *Computer) contentOrders() (byBrand, byCat, posBrand, posCat []uint32) {
	n := len(c.id)
	byBrand, byCat = make([]uint32, n), make([]uint32, n)
	for i := range byBrand {
		byBrand[i], byCat[i] = uint32(i), uint32(i)
	}
	base := func(a, b uint32) int {
		if r := cmp.Compare(c.group[a], c.group[b]); r != 0 {
			return r
		}
		return cmp.Compare(c.cat[a], c.cat[b])
	}
	tail := func(a, b uint32) int {
		if r := cmp.Compare(c.price[a], c.price[b]); r != 0 {
			return r
		}
		return cmp.Compare(c.id[a], c.id[b])
	}
	slices.SortFunc(byBrand, func(a, b uint32) int {
		if r := base(a, b); r != 0 {
			return r
		}
		if r := cmp.Compare(c.brand[a], c.brand[b]); r != 0 {
			return r
		}
		return tail(a, b)
	})
	slices.SortFunc(byCat, func(a, b uint32) int {
		if r := base(a, b); r != 0 {
			return r
		}
		return tail(a, b)
	})
	posBrand, posCat = make([]uint32, n), make([]uint32, n)
	for i := range byBrand {
		posBrand[byBrand[i]], posCat[byCat[i]] = uint32(i), uint32(i)
	}
	return byBrand, byCat, posBrand, posCat
}

// work is what the workers share (read only).
type work struct {
	c                *Computer
	uoff, uprods     []uint32
	poff, pusers     []uint32
	byBrand, byCat   []uint32
	posBrand, posCat []uint32
}

// scratch is one worker's memory.
type scratch struct {
	cnt     []uint32 // co-view counts by product, zero between products
	touched []uint32
	cands   []cand
}

type cand struct {
	p     uint32
	score uint32
}

const (
	kindNone uint8 = iota
	kindCoViewed
	kindContent
)

// Content scores sit below the lowest co-view score: a co-view score is
// at least MinSupport/MaxUsersPerProduct, in millionths at least
// 1e6*2/1000 = 2000 with the defaults; content scores are at most
// contentTop.
const (
	contentTop      = 1000
	contentCategory = 2 // category-only matches score this much lower
)

// list computes product a's list into dst.
func (w *work) list(s *scratch, a int, dst []catalog.Similar) ([]catalog.Similar, uint8) {
	c := w.c
	K := c.opts.K
	g := c.group[a]
	s.touched = s.touched[:0]
	na := w.poff[a+1] - w.poff[a]
	for _, u := range w.pusers[w.poff[a]:w.poff[a+1]] {
		for _, b := range w.uprods[w.uoff[u]:w.uoff[u+1]] {
			if int(b) == a || c.group[b] != g {
				continue
			}
			if s.cnt[b] == 0 {
				s.touched = append(s.touched, b)
			}
			s.cnt[b]++
		}
	}
	s.cands = s.cands[:0]
	for _, b := range s.touched {
		co := s.cnt[b]
		s.cnt[b] = 0
		if co < uint32(c.opts.MinSupport) || !c.inStock[b] {
			continue
		}
		nb := w.poff[b+1] - w.poff[b]
		sc := float64(co) / math.Sqrt(float64(na)*float64(nb))
		s.cands = append(s.cands, cand{p: b, score: uint32(math.Round(min(sc, 1) * 1e6))})
	}
	slices.SortFunc(s.cands, func(x, y cand) int {
		if x.score != y.score {
			return cmp.Compare(y.score, x.score)
		}
		return cmp.Compare(c.id[x.p], c.id[y.p])
	})
	kind := kindNone
	for _, cd := range s.cands[:min(K, len(s.cands))] {
		dst = append(dst, catalog.Similar{ID: c.id[cd.p], Score: cd.score})
		kind = kindCoViewed
	}
	if len(dst) < K {
		before := len(dst)
		dst = w.content(a, dst, w.byBrand, w.posBrand, true, K)
		dst = w.content(a, dst, w.byCat, w.posCat, false, K)
		if kind == kindNone && len(dst) > before {
			kind = kindContent
		}
	}
	return dst, kind
}

// content appends to dst, up to K entries in all, the in-stock products
// next to a in order (same group and category, and brand if brand), the
// nearest in price first, ties by id, skipping those already in dst.
func (w *work) content(a int, dst []catalog.Similar, order, pos []uint32, brand bool, K int) []catalog.Similar {
	c := w.c
	same := func(b uint32) bool {
		return c.group[b] == c.group[a] && c.cat[b] == c.cat[a] && (!brand || c.brand[b] == c.brand[a])
	}
	has := func(id int64) bool {
		for _, s := range dst {
			if s.ID == id {
				return true
			}
		}
		return false
	}
	dist := func(b uint32) float64 {
		pa, pb := float64(max(c.price[a], 1)), float64(max(c.price[b], 1))
		return math.Abs(math.Log(pb / pa))
	}
	l, r := int(pos[a])-1, int(pos[a])+1
	steps := 0
	for len(dst) < K && steps < 8*K {
		lok := l >= 0 && same(order[l])
		rok := r < len(order) && same(order[r])
		if !lok && !rok {
			break
		}
		var b uint32
		switch {
		case lok && rok:
			bl, br := order[l], order[r]
			dl, dr := dist(bl), dist(br)
			if dl < dr || dl == dr && c.id[bl] < c.id[br] {
				b, l = bl, l-1
			} else {
				b, r = br, r+1
			}
		case lok:
			b, l = order[l], l-1
		default:
			b, r = order[r], r+1
		}
		steps++
		if !c.inStock[b] || has(c.id[b]) {
			continue
		}
		sc := float64(contentTop) / (1 + dist(b))
		if !brand {
			sc /= contentCategory
		}
		dst = append(dst, catalog.Similar{ID: c.id[b], Score: uint32(max(1, math.Round(sc)))})
	}
	return dst
}

// String is a one-line summary of s.
func (s Stats) String() string {
	return fmt.Sprintf("%d lists (%d co-viewed, %d content only) for %d products from %d views of %d users; skipped: %d unknown product, %d no user, %d duplicate, %d over the per-user cap, %d of %d robot users, %d sampled out",
		s.Lists, s.CoViewed, s.ContentOnly, s.Products, s.Views, s.Users,
		s.UnknownProduct, s.NoUser, s.Duplicate, s.Capped, s.Robot, s.RobotUsers, s.SampledOut)
}
