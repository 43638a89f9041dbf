package bidder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rtbd/rtbd/bidder/campaign"
)

func campaignsYAML(id string, bidCPM string) string {
	return fmt.Sprintf(`campaigns:
  - id: %s
    advertiser: Reload Shop
    adomain: [shop.example.com]
    cat: [IAB22]
    product_group_id: 1
    status: active
    bid_cpm: %s
    creative: {template: medium, sizes: ["300x250"]}
`, id, bidCPM)
}

// writeAtomic replaces path as editors and config management do: write a
// temporary file, rename it over the old one.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestCampaignReloadUnderLoad: requests run continuously while the
// campaigns file is rewritten, valid then invalid. No request fails; the
// new campaign is used soon after the valid rewrite; the invalid file is
// rejected with its key named in the log, and the last valid campaigns
// stay in use.
func TestCampaignReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "campaigns.yaml")
	writeAtomic(t, path, campaignsYAML("gen-1", "1.5"))
	core, logs := observer.New(zap.InfoLevel)
	w, err := campaign.NewWatcher(path, zap.New(core), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f := newFixture(t, func(o *Options) { o.Campaigns = w })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 1000)

	var (
		failed   atomic.Int64
		total    atomic.Int64
		mu       sync.Mutex
		seen     = map[string]int{}
		firstGen = map[string]time.Time{}
		firstErr atomic.Value
	)
	stop := load(t, 4, func() {
		r := f.bid(body)
		total.Add(1)
		var resp openrtb2.BidResponse
		if r.status != 200 || json.Unmarshal(r.body, &resp) != nil || len(resp.SeatBid) != 1 {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d body %.200s", r.status, r.body))
			return
		}
		cid := resp.SeatBid[0].Bid[0].CID
		mu.Lock()
		seen[cid]++
		if _, ok := firstGen[cid]; !ok {
			firstGen[cid] = time.Now()
		}
		mu.Unlock()
	})
	seenCID := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[id] > 0
	}
	waitFor(t, 10*time.Second, "gen-1 bids", func() bool { return seenCID("gen-1") })

	// Valid rewrite: gen-2 replaces gen-1.
	rewritten := time.Now()
	writeAtomic(t, path, campaignsYAML("gen-2", "2.5"))
	waitFor(t, 10*time.Second, "gen-2 bids", func() bool { return seenCID("gen-2") })
	mu.Lock()
	lag := firstGen["gen-2"].Sub(rewritten)
	mu.Unlock()
	// Logged, not asserted (no timing asserts on this shared machine); the
	// issue's target is within 1s, the wait above is bounded at 10s.
	t.Logf("the new campaigns were used %s after the file was rewritten", lag)

	// Invalid rewrite: rejected, named by key, gen-2 stays.
	_, failedBefore := w.Reloads()
	writeAtomic(t, path, campaignsYAML("gen-3", "-1"))
	waitFor(t, 10*time.Second, "the invalid file to be rejected", func() bool { _, fl := w.Reloads(); return fl > failedBefore })
	time.Sleep(100 * time.Millisecond) // keep the load on after the rejection
	stop()

	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed during the reloads; first: %v", n, total.Load(), firstErr.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["gen-3"] != 0 {
		t.Errorf("the invalid campaigns were used %d times", seen["gen-3"])
	}
	if w.Current().Len() != 1 || w.Current().All()[0].ID != "gen-2" {
		t.Errorf("current campaigns after the invalid file: %v", w.Current().All())
	}
	named := false
	for _, e := range logs.FilterMessageSnippet("invalid campaigns file").All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()["keys"]), "campaigns[0].bid_cpm") {
			named = true
		}
	}
	if !named {
		t.Errorf("no log line names campaigns[0].bid_cpm; logs: %v", logs.All())
	}
	t.Logf("%d requests during the reloads, %d failed; bids by campaign %v", total.Load(), failed.Load(), seen)
}
