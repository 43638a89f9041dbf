package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// Timing of TestCatalogVersionsReachBidders: the node's watch interval,
// the bidders' near cache grace and max age. The documented bound for a new
// index version to reach a remote bidder is the node's watch interval plus
// the client's version check interval plus, for a full snapshot or a
// rollback, near_cache_grace.
const (
	versionsWatch  = 200 * time.Millisecond
	versionsGrace  = 2 * time.Second
	versionsMaxAge = time.Minute
	versionsPoll   = time.Second // remote.DefaultVersionInterval
)

// versionProducts are the test user's products (group 1) of ids, each
// titled with its id and rev.
func versionProducts(rev string, ids []int64) []*catalogpb.Product {
	var ps []*catalogpb.Product
	for _, id := range ids {
		ps = append(ps, &catalogpb.Product{ProductId: id, ProductGroupId: catalogtest.BulkGroup, Title: versionTitle(id, rev),
			ImageUrl: fmt.Sprintf("https://img.example/%d.jpg", id), Width: 300, Height: 300,
			LandingUrl: fmt.Sprintf("https://shop.example.com/p/%d", id), PriceMicros: 19_990_000, Currency: "USD", InStock: true})
	}
	return ps
}

// publishDelta publishes, over the live version of data, a delta that
// upserts ps and deletes the ids in deletes (as `rtbd ingest -delta` does).
func publishDelta(t *testing.T, data string, ps []*catalogpb.Product, deletes []int64) {
	t.Helper()
	lock, err := catalog.LockDir(data)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	base, err := catalog.ReadPointer(data, catalog.CurrentFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.NewDeltaBuilder(data, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := b.Put(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range deletes {
		if err := b.Delete(catalogtest.BulkGroup, id); err != nil {
			t.Fatal(err)
		}
	}
	name, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.Publish(data, name); err != nil {
		t.Fatal(err)
	}
}

func versionTitle(id int64, rev string) string { return fmt.Sprintf("product-%04d-rev-%s", id, rev) }

var versionTitleRE = regexp.MustCompile(`product-(\d{4})-rev-([a-z0-9]+)`)

// shown maps the product ids an adm shows to the rev of their title.
func shown(adm string) map[int64]string {
	m := map[int64]string{}
	for _, s := range versionTitleRE.FindAllStringSubmatch(adm, -1) {
		id, _ := strconv.ParseInt(s[1], 10, 64)
		m[id] = s[2]
	}
	return m
}

// TestCatalogVersionsReachBidders: two bidders on a remote catalog node,
// each with its near cache, under a steady bid load, while the node's index
// goes through a full ingest, a delta and a rollback. After each publish
// every bidder shows the new products within the documented bound, and
// once a bidder has shown a product's new state it never shows an older
// one again (no retired product served past the bound, no flapping).
func TestCatalogVersionsReachBidders(t *testing.T) {
	data := t.TempDir()
	all := make([]int64, 0, 29)
	for id := int64(1); id <= 29; id++ {
		all = append(all, id)
	}
	catalogtest.WriteCatalog(t, data, versionProducts("a", all))

	dir := t.TempDir()
	node := spawn(t, "catalog-node", asCatalogNode, dir, []string{filepath.Join(dir, "addr"),
		"log.level=warn", "log.format=json",
		"catalog.data=" + data,
		"catalog.watch_interval=" + versionsWatch.String(),
		"catalog.grpc_listen=127.0.0.1:0",
		"admin.listen=127.0.0.1:0",
		"catalog.graceful_timeout=1s",
	})
	camps := campaignsYAML(t, "")
	var bidders []*proc
	for i := range 2 {
		bidders = append(bidders, startBidder(t, fmt.Sprintf("b%d", i+1), bidderConfig{
			dataDir: filepath.Join(t.TempDir(), "b"), campaigns: camps,
			sets: []string{
				"catalog.target=static:///" + node.addr,
				"catalog.near_cache_bytes=1048576",
				"catalog.near_cache_grace=" + versionsGrace.String(),
				"catalog.near_cache_max_age=" + versionsMaxAge.String(),
				"user.store=pebble",
			},
		}))
	}

	// target is what product id must show at step s: the full ingest
	// retitles every product (a -> b), the delta retitles product 1 (c)
	// and deletes product 2 (""), the rollback goes back to step 1's index.
	target := func(s int32, id int64) string {
		switch {
		case s == 0:
			return "a"
		case s == 2 && id == 1:
			return "c"
		case s == 2 && id == 2:
			return ""
		}
		return "b"
	}
	// The load: each bidder bids continuously. Within a step, once a
	// bidder has shown a product's new state it must never show an older
	// one again: no flapping, nothing retired served again.
	type state struct {
		mu      sync.Mutex
		step    int32
		reached map[int64]bool // products shown at target(step) in this step
		fresh   []map[int64]string
		bids    int
	}
	var step atomic.Int32
	states := make([]*state, len(bidders))
	var failures atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, b := range bidders {
		st := &state{reached: map[int64]bool{}}
		states[i] = st
		wg.Go(func() {
			c := newClient()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				a := bid(c, b.addr, bidRequest(fmt.Sprintf("%s-v-%d", b.name, n), "www.news.example"))
				if a.err != nil || !a.bid {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				got := shown(a.adm)
				cur := step.Load()
				st.mu.Lock()
				if st.step != cur {
					st.step, st.reached = cur, map[int64]bool{}
				}
				st.bids++
				for id, rev := range got {
					if rev == target(cur, id) {
						st.reached[id] = true
					} else if st.reached[id] && failures.Add(1) <= 5 {
						t.Errorf("%s, step %d: product %d at rev %s after its rev %q was shown", b.name, cur, id, rev, target(cur, id))
					}
				}
				if _, ok := got[2]; ok && cur == 2 && st.reached[1] && failures.Add(1) <= 5 {
					t.Errorf("%s: deleted product 2 shown after the delta's product 1 was", b.name)
				}
				st.fresh = append(st.fresh, got)
				st.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	// await waits until every bidder's answers show only the products of
	// step s, each at its target rev: 5 times the documented bound at most.
	bound := versionsWatch + versionsPoll + versionsGrace
	await := func(what string, s int32) {
		t.Helper()
		start := time.Now()
		for i, st := range states {
			ok := false
			for !ok && time.Since(start) < 5*bound {
				st.mu.Lock()
				st.fresh = st.fresh[:0]
				st.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				st.mu.Lock()
				ok = len(st.fresh) > 0
				for _, got := range st.fresh {
					for id, rev := range got {
						if rev != target(s, id) {
							ok = false
						}
					}
				}
				st.mu.Unlock()
			}
			took := time.Since(start)
			if !ok {
				t.Fatalf("%s: bidder %s does not show step %d's products after %s (bound %s)", what, bidders[i].name, s, took, bound)
			}
			t.Logf("%s: bidder %s shows the new products after %s (bound %s)", what, bidders[i].name, took.Round(time.Millisecond), bound)
		}
	}
	await("start", 0)

	step.Store(1)
	catalogtest.WriteCatalog(t, data, versionProducts("b", all))
	await("full ingest", 1)

	step.Store(2)
	publishDelta(t, data, versionProducts("c", []int64{1}), []int64{2})
	await("delta", 2)

	step.Store(3)
	lock, err := catalog.LockDir(data)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = catalog.Rollback(data)
	lock.Close()
	if err != nil {
		t.Fatal(err)
	}
	await("rollback", 3)
	for i, st := range states {
		st.mu.Lock()
		t.Logf("bidder %s: %d bids under the load", bidders[i].name, st.bids)
		st.mu.Unlock()
	}
}
