//go:build !race

package bidder

import (
	"strings"
	"testing"
)

// TestSupplyDSAAllocations: the supply-path verdict (a two-node chain
// against the fixture's ads.txt and sellers.json) and the DSA decision,
// notice and ext.dsa cost no allocation: the same request bids with as
// many allocations as with a campaign that has neither setting.
func TestSupplyDSAAllocations(t *testing.T) {
	src := &swapCampaigns{}
	f := newFixture(t, func(o *Options) { o.Campaigns, o.Supply, o.DSADomain = src, openSupply(t), "dsp.example" })
	body := withUser(t, []byte(`{"id":"r1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"site":{"domain":"www.publisher.com"},
		"source":{"schain":{"complete":1,"ver":"1.0","nodes":[{"asi":"exchange-a.com","sid":"pub1","hp":1},{"asi":"reseller-b.com","sid":"r1","hp":1}]}},
		"regs":{"ext":{"dsa":{"dsarequired":1,"pubrender":0,"datatopub":2}}}}`), userBulk)
	h := f.b.Handler()
	src.p.Store(oneCampaign(t))
	rc := bidCtx(body)
	plain := bidAllocs(t, h, rc, "no settings")
	if strings.Contains(string(rc.Response.Body()), `"dsa"`) {
		t.Fatalf("a campaign without dsa wrote ext.dsa: %.300s", rc.Response.Body())
	}
	src.p.Store(oneCampaign(t, "dsa: {behalf: Shop Example Ltd, paid: Agency1 GmbH}", "supply: {complete_only: true, max_hops: 3, authorized_only: true}"))
	rc = bidCtx(body)
	checked := bidAllocs(t, h, rc, "supply and dsa")
	if !strings.Contains(string(rc.Response.Body()), `"ext":{"dsa":{"behalf":"Shop Example Ltd"`) {
		t.Fatalf("no ext.dsa: %.300s", rc.Response.Body())
	}
	t.Logf("allocations per bid: %.0f without the settings, %.0f with supply and dsa", plain, checked)
	if checked > plain {
		t.Errorf("%.0f allocations with supply and dsa, want <= %.0f (without)", checked, plain)
	}
}
