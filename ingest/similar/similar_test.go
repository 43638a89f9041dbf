package similar_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/ingest/similar"
	"github.com/rtbd/rtbd/ingest/viewgen"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

type lists map[int64][]catalog.Similar

func compute(t *testing.T, c *similar.Computer) (lists, similar.Stats) {
	t.Helper()
	out := lists{}
	st, err := c.Compute(func(g, id int64, l []catalog.Similar) error {
		out[id] = append([]catalog.Similar(nil), l...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

func ids(l []catalog.Similar) []int64 {
	var out []int64
	for _, s := range l {
		out = append(out, s.ID)
	}
	return out
}

// products: group 1 ids 1..6 (category a, brand x, prices 100..600; id 5
// out of stock), id 7 (category b), group 2 id 8.
func catalogOf() []similar.Product {
	var ps []similar.Product
	for id := int64(1); id <= 6; id++ {
		ps = append(ps, similar.Product{Group: 1, ID: id, PriceMicros: id * 100, Category: "a", Brand: "x", InStock: id != 5})
	}
	ps = append(ps, similar.Product{Group: 1, ID: 7, PriceMicros: 100, Category: "b", Brand: "x", InStock: true})
	ps = append(ps, similar.Product{Group: 2, ID: 8, PriceMicros: 100, Category: "a", Brand: "x", InStock: true})
	return ps
}

func TestCoViewsContentAndBadInput(t *testing.T) {
	c := similar.New(similar.Options{K: 3, MinSupport: 2, RobotViews: 100})
	for _, p := range catalogOf() {
		c.AddProduct(p)
	}
	view := func(u string, id int64, min int) {
		g := int64(1)
		if id == 8 {
			g = 2
		}
		c.AddView(u, g, id, t0.Add(time.Duration(min)*time.Minute))
	}
	// Users 1-3 view 1 and 2; users 1-2 also 3; user 4 views 1 and 5 (out
	// of stock) twice each; one user views 1 and 6 once (support 1).
	for i, u := range []string{"u1", "u2", "u3"} {
		view(u, 1, i)
		view(u, 2, i+1)
	}
	view("u1", 3, 9)
	view("u2", 3, 9)
	view("u4", 1, 1)
	view("u4", 5, 2)
	view("u5", 5, 2)
	view("u5", 1, 3)
	view("u6", 1, 1)
	view("u6", 6, 2)
	// Bad input: unknown product, product of another group, no user, a
	// duplicate, a robot with 200 views.
	c.AddView("u1", 1, 999, t0)
	c.AddView("u1", 1, 8, t0)
	c.AddView("", 1, 1, t0)
	view("u1", 1, 20)
	for i := 0; i < 200; i++ {
		view("robot", int64(1+i%4), i)
	}
	got, st := compute(t, c)

	if l := ids(got[1]); len(l) < 2 || l[0] != 2 || l[1] != 3 {
		t.Errorf("list of 1 = %v, want 2 (3 co-viewers) then 3 (2), then content", l)
	}
	for id, l := range got {
		for _, s := range l {
			if s.ID == 5 {
				t.Errorf("out-of-stock 5 in the list of %d: %v", id, l)
			}
			if s.ID == id {
				t.Errorf("%d in its own list", id)
			}
			if s.ID == 8 || id == 8 && s.ID != 8 && s.ID <= 7 {
				t.Errorf("list of %d crosses groups: %v", id, l)
			}
		}
	}
	// 4 has co-views with 1 and 2 (users 1-2: 3 viewed with 1 and 2) and
	// content; 7 has no co-view and no product of its category: none.
	if l, ok := got[7]; ok {
		t.Errorf("7 has a list %v; nothing shares its category", l)
	}
	// 6: one co-viewer with 1 (below support): content only, nearest
	// price first: 4 (400), then 3, 2 (5 is out of stock).
	if l := ids(got[6]); !reflect.DeepEqual(l, []int64{4, 3, 2}) {
		t.Errorf("content list of 6 = %v, want [4 3 2]", l)
	}
	if st.UnknownProduct != 2 || st.NoUser != 1 || st.Duplicate != 1 || st.RobotUsers != 1 || st.Robot != 200 {
		t.Errorf("stats %+v: want 2 unknown, 1 no user, 1 duplicate, 1 robot user of 200 views", st)
	}
	if st.CoViewed == 0 || st.ContentOnly == 0 {
		t.Errorf("stats %+v: want co-viewed and content-only lists", st)
	}
}

// TestDeterministic: the same views in another order, or held under a
// pair bound that forces sampling, give the same lists each time.
func TestDeterministic(t *testing.T) {
	vo := viewgen.Options{Feed: feedgen.Options{Products: 2000, Groups: 3}, Users: 3000, Seed: 7, Start: t0}
	type v struct {
		u     string
		g, id int64
		at    time.Time
	}
	var views []v
	if err := viewgen.Generate(vo, func(x *viewgen.View) error {
		views = append(views, v{x.User, x.Group, x.ID, x.Time})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	run := func(order []v, maxPairs int) lists {
		c := similar.New(similar.Options{MaxPairs: maxPairs, Workers: 3})
		for _, p := range sortedProducts(vo.Feed) {
			c.AddProduct(p)
		}
		for _, x := range order {
			c.AddView(x.u, x.g, x.id, x.at)
		}
		l, _ := compute(t, c)
		return l
	}
	a := run(views, 0)
	shuffled := append([]v(nil), views...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if b := run(shuffled, 0); !reflect.DeepEqual(a, b) {
		t.Error("lists differ with the views in another order")
	}
	s1 := run(views, len(views)/3)
	s2 := run(shuffled, len(views)/3)
	if !reflect.DeepEqual(s1, s2) {
		t.Error("sampled lists differ with the views in another order")
	}
	if reflect.DeepEqual(s1, a) {
		t.Error("a pair bound of a third of the views changed nothing: sampling did not happen")
	}
}

func sortedProducts(fo feedgen.Options) []similar.Product {
	groups := max(fo.Groups, 1)
	var out []similar.Product
	for g := 0; g < groups; g++ {
		for i := g; i < fo.Products; i += groups {
			p := feedgen.Product(i, fo)
			out = append(out, similar.Product{Group: p.ProductGroupId, ID: p.ProductId, PriceMicros: p.PriceMicros,
				Category: p.Category, Brand: p.Brand, InStock: p.InStock})
		}
	}
	return out
}

// TestPlantedClusters is the evaluation on views with clusters much finer
// than groups: hit rate at 10 at least 3x the most-popular-in-group
// baseline, and the recommendations for a user who viewed one product
// come at least 80% from that product's cluster.
func TestPlantedClusters(t *testing.T) {
	vo := viewgen.Options{Feed: feedgen.Options{Products: 20000, Groups: 4, Seed: 3}, Users: 40000, ClusterSize: 20, Noise: 0.2, Seed: 11, Start: t0}
	e := similar.NewEvaluator(similar.Options{})
	for _, p := range sortedProducts(vo.Feed) {
		e.AddProduct(p)
	}
	if err := viewgen.Generate(vo, func(x *viewgen.View) error {
		e.AddView(x.User, x.Group, x.ID, x.Time)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ev, err := e.Run(10)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("users %d, hit rate@10 %.4f, baseline %.4f, coverage %.3f", ev.Users, ev.HitRate, ev.BaselineHitRate, ev.Coverage)
	if ev.Users < 1000 {
		t.Fatalf("only %d users evaluated", ev.Users)
	}
	if ev.HitRate < 3*ev.BaselineHitRate || ev.HitRate == 0 {
		t.Errorf("hit rate@10 %.4f, want >= 3x the baseline %.4f", ev.HitRate, ev.BaselineHitRate)
	}

	// One viewed product: its recommendations' clusters.
	c := similar.New(similar.Options{})
	for _, p := range sortedProducts(vo.Feed) {
		c.AddProduct(p)
	}
	if err := viewgen.Generate(vo, func(x *viewgen.View) error {
		c.AddView(x.User, x.Group, x.ID, x.Time)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, _ := compute(t, c)
	var in, all int
	for id := vo.Feed.StartID + 1; id < int64(vo.Feed.Products); id += 37 {
		rec := catalog.SimilarIDs([]int64{id}, func(x int64) []catalog.Similar { return got[x] }, 10, nil)
		for _, r := range rec[:min(10, len(rec))] {
			all++
			if viewgen.ClusterOfID(r, vo) == viewgen.ClusterOfID(id, vo) {
				in++
			}
		}
	}
	share := float64(in) / float64(max(all, 1))
	t.Logf("recommendations of one viewed product: %d, %.3f from its cluster", all, share)
	if all == 0 || share < 0.8 {
		t.Errorf("%.3f of %d recommendations from the viewed product's cluster, want >= 0.8", share, all)
	}
}

func Example() {
	c := similar.New(similar.Options{K: 2, MinSupport: 1})
	c.AddProduct(similar.Product{Group: 1, ID: 1, InStock: true})
	c.AddProduct(similar.Product{Group: 1, ID: 2, InStock: true})
	c.AddView("alice", 1, 1, t0)
	c.AddView("alice", 1, 2, t0.Add(time.Minute))
	_, _ = c.Compute(func(g, id int64, l []catalog.Similar) error {
		fmt.Println(id, l)
		return nil
	})
	// Output:
	// 1 [{2 1000000}]
	// 2 [{1 1000000}]
}
