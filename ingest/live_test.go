package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/node"
	"github.com/rtbd/rtbd/catalog/remote"
)

// TestLiveSwitchUnderLoad: a catalog node (asked over gRPC)
// and a local index serve continuous lookups from several goroutines while
// a full ingest replaces the catalog with one whose titles end in " v2".
// No lookup fails or comes back incomplete, and once both have switched
// every answer carries " v2".
func TestLiveSwitchUnderLoad(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	n := scaled(20_000)
	o1, o2 := testFeedOpts(n, ""), testFeedOpts(n, " v2")
	mustIngest(t, testOptions(dir), writeFeed(t, src, "v1.csv", o1))
	f2 := writeFeed(t, src, "v2.csv", o2)

	const watch = 20 * time.Millisecond
	cfg := catalogtest.NodeConfig(t, dir)
	cfg.Catalog.WatchInterval = watch
	nd, err := node.Start(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Shutdown(context.Background())
	client, err := remote.New(remote.Options{Target: "static:///" + nd.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	local, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: watch})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()

	// Wait (bounded) for the client's first connection.
	ask := func(s store, g int, ids []int64) (*catalogpb.ProductMastersResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return s.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: int64(g + 1),
			Product1Ids: ids, Product1QuantityAtMost: int32(len(ids))})
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := ask(client, 0, []int64{1}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("catalog node not reachable: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	var (
		switched atomic.Bool // set once both stores serve the new version
		lookups  atomic.Int64
		failures atomic.Int64
		firstErr atomic.Value
		newSeen  [2]atomic.Int64 // per store: " v2" answers after switched
	)
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stores := []store{local, client}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			si := w % 2
			for {
				select {
				case <-stop:
					return
				default:
				}
				g := rng.IntN(7)
				ids := make([]int64, 10)
				for k := range ids {
					ids[k] = int64(g + 7*rng.IntN(n/7) + 1)
				}
				after := switched.Load()
				resp, err := ask(stores[si], g, ids)
				lookups.Add(1)
				if err != nil {
					fail(fmt.Errorf("store %d: %w", si, err))
					continue
				}
				if got := len(resp.Product1S); got != len(uniq(ids)) {
					fail(fmt.Errorf("store %d: %d products for %d distinct ids", si, got, len(uniq(ids))))
					continue
				}
				for _, p := range resp.Product1S {
					v2 := strings.HasSuffix(p.Title, " v2")
					if after && !v2 {
						fail(fmt.Errorf("store %d: product %d from the old catalog after the switch", si, p.ProductId))
					}
					if after && v2 {
						newSeen[si].Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // lookups running before the ingest
	o := testOptions(dir)
	sum := mustIngest(t, o, f2)
	deadline := time.Now().Add(10 * time.Second) // many watch intervals
	for local.Version() != sum.Version || nd.Local().Version() != sum.Version {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("not switched within 10s: local %s, node %s, want %s", local.Version(), nd.Local().Version(), sum.Version)
		}
		time.Sleep(watch)
	}
	switched.Store(true)
	for deadline := time.Now().Add(10 * time.Second); newSeen[0].Load() < 100 || newSeen[1].Load() < 100; {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d of %d lookups failed; first: %v", f, lookups.Load(), firstErr.Load())
	}
	if newSeen[0].Load() < 100 || newSeen[1].Load() < 100 {
		t.Fatalf("after the switch: %d local and %d remote v2 products seen, want >= 100 each", newSeen[0].Load(), newSeen[1].Load())
	}
	t.Logf("%d lookups, none failed; switched to %s", lookups.Load(), sum.Version)
	checkDir(t, dir, feedExpect(o2))
}

func uniq(ids []int64) map[int64]bool {
	m := map[int64]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}
