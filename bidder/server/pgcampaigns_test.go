package server

import (
	"path/filepath"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource/pgtest"
	"github.com/rtbd/rtbd/bidder/internal/biddertest"
	"github.com/rtbd/rtbd/configs"
)

var cidRE = regexp.MustCompile(`"cid":"([^"]+)"`)

// TestServerPostgresCampaigns: a bidder with campaigns.source postgres bids
// on the table's campaigns; under load, a changed row is used after a
// refresh and a disabled row stops its campaign, and no request fails.
func TestServerPostgresCampaigns(t *testing.T) {
	pg := pgtest.Start(t)
	set, specs := pg.LoadFile(t, filepath.Join("..", "testdata", "campaigns.yaml"))
	cfg := testConfig(t)
	cfg.Bidder.Campaigns = "/nonexistent/campaigns.yaml" // not read with source postgres
	cfg.Campaigns.Source, cfg.Campaigns.Postgres.DSN = configs.CampaignsPostgres, pg.DSN
	cfg.Campaigns.RefreshInterval = 50 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := startWithBulkUser(t, cfg)
	if n := s.Campaigns().Current().Len(); n != set.Len() {
		t.Fatalf("%d campaigns loaded, want %d", n, set.Len())
	}
	body := bannerRequest(t)
	url := "http://" + s.Addr() + bidder.PathBid
	bidCID := func() (int, string) {
		st, resp := httpDo(t, "POST", url, body)
		if m := cidRE.FindSubmatch(resp); m != nil {
			return st, string(m[1])
		}
		return st, ""
	}
	st, first := bidCID()
	if st != 200 || first == "" {
		t.Fatalf("first bid: %d, cid %q", st, first)
	}

	// Load: every request until the end must be a bid.
	var sent, failed atomic.Int64
	stop := biddertest.Load(t, 2, func() {
		st, cid := bidCID()
		sent.Add(1)
		if st != 200 || cid == "" {
			failed.Add(1)
		}
	})
	// A changed row is used.
	i := slices.IndexFunc(specs, func(s campaign.Spec) bool { return s.ID == first })
	changed := specs[i]
	changed.BidCPM = "1.75"
	doc, err := pgsource.Document(changed)
	if err != nil {
		t.Fatal(err)
	}
	pg.Exec(t, `UPDATE `+pgsource.Table+` SET spec = $2::jsonb, updated_at = now() WHERE id = $1`, first, string(doc))
	biddertest.WaitFor(t, 30*time.Second, "changed bid_cpm of "+first, func() bool {
		c, ok := s.Campaigns().Current().Get(first)
		return ok && c.BidCPMMicros == 1_750_000
	})
	// A disabled row stops its campaign: another one wins.
	pg.Exec(t, `UPDATE `+pgsource.Table+` SET enabled = false, updated_at = now() WHERE id = $1`, first)
	biddertest.WaitFor(t, 30*time.Second, first+" stopped", func() bool {
		_, ok := s.Campaigns().Current().Get(first)
		return !ok
	})
	stop()
	if st, cid := bidCID(); st != 200 || cid == first || cid == "" {
		t.Errorf("bid after disabling %s: %d, cid %q", first, st, cid)
	}
	if failed.Load() != 0 || sent.Load() == 0 {
		t.Fatalf("%d of %d requests under load were not bids", failed.Load(), sent.Load())
	}
	t.Logf("%d requests under load, all bids", sent.Load())
}
