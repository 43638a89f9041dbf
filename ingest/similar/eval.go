package similar

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rtbd/rtbd/catalog"
)

// Evaluation is the offline evaluation of similar lists: each user's last
// view is held out, the lists are computed from the other views, and the
// user's earlier views are turned into recommendations as the bid path
// does (the similar lists of the most recent viewed products merged by
// score, without the viewed ones: catalog.SimilarIDs), cut to K.
type Evaluation struct {
	K int
	// Users evaluated: with at least two distinct products viewed, the
	// held-out one a product the user had not viewed before.
	Users int64
	// HitRate: share of users whose held-out product is among their K
	// recommendations. Recall: held-out products found among the K over
	// held-out products; with one held out per user it equals HitRate,
	// and is reported beside it for comparison with other evaluations.
	HitRate, Recall float64
	// Baseline*: the same measures for the K most viewed products of the
	// user's group (in the training views), without the viewed ones.
	BaselineHitRate, BaselineRecall float64
	// Coverage: share of catalog products with a non-empty list.
	Coverage float64
	Stats    Stats
}

// Write prints e as a small report.
func (e Evaluation) Write(w io.Writer) {
	ratio := 0.0
	if e.BaselineHitRate > 0 {
		ratio = e.HitRate / e.BaselineHitRate
	}
	fmt.Fprintf(w, "users evaluated   %d (last view held out)\n", e.Users)
	fmt.Fprintf(w, "hit rate@%d       %.4f  (most popular in group: %.4f, %.2fx)\n", e.K, e.HitRate, e.BaselineHitRate, ratio)
	fmt.Fprintf(w, "recall@%d         %.4f  (most popular in group: %.4f)\n", e.K, e.Recall, e.BaselineRecall)
	fmt.Fprintf(w, "coverage          %.4f  (products with a non-empty list)\n", e.Coverage)
	fmt.Fprintf(w, "lists             %s\n", e.Stats)
}

// evalView is a view of the evaluation, kept in memory.
type evalView struct {
	user uint64
	t    int64
	g    int64
	id   int64
}

// Evaluator gathers the products and views of an evaluation. Views are
// held in memory (24 bytes each): it is an offline tool.
type Evaluator struct {
	opts     Options
	products []Product
	views    []evalView
}

// NewEvaluator returns an Evaluator computing lists with opts.
func NewEvaluator(opts Options) *Evaluator { return &Evaluator{opts: opts} }

// AddProduct adds a catalog product, in ascending (group, id) order.
func (e *Evaluator) AddProduct(p Product) { e.products = append(e.products, p) }

// AddView adds a view.
func (e *Evaluator) AddView(user string, group, id int64, at time.Time) {
	if user == "" {
		return
	}
	e.views = append(e.views, evalView{user: xxhash.Sum64String(user), t: at.UnixMicro(), g: group, id: id})
}

// Run evaluates at k.
func (e *Evaluator) Run(k int) (Evaluation, error) {
	ev := Evaluation{K: k}
	vs := e.views
	slices.SortFunc(vs, func(a, b evalView) int {
		if a.user != b.user {
			return cmp.Compare(a.user, b.user)
		}
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(a.id, b.id)
	})
	// Split: each user's last view is the test; the rest train.
	type test struct {
		g, id   int64
		history []int64 // distinct, most recent first
	}
	var tests []test
	c := New(e.opts)
	for _, p := range e.products {
		c.AddProduct(p)
	}
	popular := map[int64]map[int64]int64{}
	for i := 0; i < len(vs); {
		j := i + 1
		for j < len(vs) && vs[j].user == vs[i].user {
			j++
		}
		last := vs[j-1]
		var hist []int64
		for k := j - 2; k >= i; k-- {
			v := vs[k]
			c.AddView(fmt.Sprint(v.user), v.g, v.id, time.UnixMicro(v.t))
			if popular[v.g] == nil {
				popular[v.g] = map[int64]int64{}
			}
			popular[v.g][v.id]++
			if v.g == last.g && !slices.Contains(hist, v.id) {
				hist = append(hist, v.id)
			}
		}
		if len(hist) > 0 && !slices.Contains(hist, last.id) {
			tests = append(tests, test{g: last.g, id: last.id, history: hist})
		}
		i = j
	}
	lists := map[[2]int64][]catalog.Similar{}
	st, err := c.Compute(func(g, id int64, list []catalog.Similar) error {
		lists[[2]int64{g, id}] = slices.Clone(list)
		return nil
	})
	ev.Stats = st
	if err != nil {
		return ev, err
	}
	if st.Products > 0 {
		ev.Coverage = float64(st.Lists) / float64(st.Products)
	}
	// The baseline: each group's products by views, most first, ties by id.
	ranked := map[int64][]int64{}
	for g, m := range popular {
		ids := make([]int64, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b int64) int {
			if m[a] != m[b] {
				return cmp.Compare(m[b], m[a])
			}
			return cmp.Compare(a, b)
		})
		ranked[g] = ids
	}
	var hits, baseHits int64
	var ids []int64
	for _, t := range tests {
		ids = catalog.SimilarIDs(t.history, func(id int64) []catalog.Similar { return lists[[2]int64{t.g, id}] }, k, ids[:0])
		if slices.Contains(ids[:min(k, len(ids))], t.id) {
			hits++
		}
		n := 0
		for _, id := range ranked[t.g] {
			if n == k {
				break
			}
			if slices.Contains(t.history, id) {
				continue
			}
			if id == t.id {
				baseHits++
				break
			}
			n++
		}
	}
	ev.Users = int64(len(tests))
	if ev.Users > 0 {
		ev.HitRate = float64(hits) / float64(ev.Users)
		ev.BaselineHitRate = float64(baseHits) / float64(ev.Users)
		// One held-out product per user: recall at K equals the hit rate.
		ev.Recall, ev.BaselineRecall = ev.HitRate, ev.BaselineHitRate
	}
	return ev, nil
}
