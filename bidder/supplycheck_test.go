package bidder

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/rtb"
)

// supplyDir is the labelled supply fixture of package supply.
const supplyDir = "supply/testdata/supply"

// oneCampaign is a Set of one banner and native campaign over group 1,
// with extra YAML lines (indented 4) added to it.
func oneCampaign(t testing.TB, extra ...string) *campaign.Set {
	t.Helper()
	y := `campaigns:
  - id: c
    advertiser: Example Shop
    adomain: [shop.example.com]
    product_group_id: 1
    status: active
    bid_cpm: 1.5
    creative: {template: medium, sizes: ["300x250"], native: true}
`
	for _, e := range extra {
		y += "    " + e + "\n"
	}
	set, err := campaign.Parse([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func openSupply(t testing.TB) *supply.Store {
	t.Helper()
	s, err := supply.Open(supply.Options{Dir: supplyDir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSupplyFixtureAuction runs the labelled cases of the supply fixture
// through the decoder and the auction (the debug endpoint's run): a
// campaign with the case's supply setting bids exactly when the case says
// the path is allowed, and otherwise the no-bid reason and the campaign's
// explanation name the failure.
func TestSupplyFixtureAuction(t *testing.T) {
	data := readFile(t, supplyDir+"/cases.json")
	var cases []struct {
		Name           string          `json:"name"`
		Policy         map[string]any  `json:"policy"`
		ExchangeDomain string          `json:"exchange_domain"`
		Request        json.RawMessage `json:"request"`
		Want           struct {
			Verdict string `json:"verdict"`
			Node    int    `json:"node"`
			Refuse  string `json:"refuse"`
		} `json:"want"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	store := openSupply(t)
	fixtures := map[string]*fixture{}
	src := &swapCampaigns{}
	reasons := map[string]supply.Reason{}
	for r := supply.OK; r < supply.NumReasons; r++ {
		reasons[r.String()] = r
	}
	for _, c := range cases {
		f := fixtures[c.ExchangeDomain]
		if f == nil {
			f = newFixture(t, func(o *Options) {
				o.Campaigns, o.Supply = src, store
				o.Exchanges = []exchange.Exchange{{Name: exchange.Default, Domain: c.ExchangeDomain}}
			})
			fixtures[c.ExchangeDomain] = f
		}
		t.Run(c.Name, func(t *testing.T) {
			var extra []string
			if len(c.Policy) > 0 {
				p, _ := json.Marshal(c.Policy) // JSON is YAML
				extra = append(extra, "supply: "+string(p))
			}
			src.p.Store(oneCampaign(t, extra...))
			ex := f.b.Explain(withUser(t, c.Request, userBulk))
			if ex.Supply == "" {
				t.Error("no supply verdict in the explanation")
			}
			if c.Want.Verdict == "ok" && ex.Supply != "authorized" || c.Want.Verdict != "ok" && ex.Supply == "authorized" {
				t.Errorf("supply verdict %q, want %s", ex.Supply, c.Want.Verdict)
			}
			if c.Want.Refuse == "ok" {
				if ex.Decision != "bid" {
					t.Errorf("no bid: %s %s %v", ex.Reason, ex.Supply, ex.Imps)
				}
				return
			}
			want := supplyNBR(reasons[c.Want.Refuse])
			if ex.Decision != "no-bid" || ex.NBR != int(want) {
				t.Errorf("%s nbr %d, want no-bid nbr %d (%s)", ex.Decision, ex.NBR, want, want)
			}
			if len(ex.Imps) != 1 || len(ex.Imps[0].Campaigns) != 1 || !strings.HasPrefix(ex.Imps[0].Campaigns[0].Reason, "supply: ") {
				t.Errorf("campaign explanation: %+v", ex.Imps)
			}
		})
	}
}

// TestSupplyRefusalCounted: a real bid request refused by a campaign's
// supply setting answers its nbr and counts the reason.
func TestSupplyRefusalCounted(t *testing.T) {
	src := &swapCampaigns{}
	src.p.Store(oneCampaign(t, "supply: {authorized_only: true}"))
	f := newFixture(t, func(o *Options) { o.Campaigns, o.Supply, o.NBRBody = src, openSupply(t), true })
	body := withUser(t, []byte(`{"id":"r1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"site":{"domain":"publisher.com"},
		"source":{"schain":{"complete":1,"ver":"1.0","nodes":[{"asi":"exchange-a.com","sid":"pub999","hp":1}]}}}`), userBulk)
	r := f.bid(body)
	var resp struct{ NBR int }
	if err := json.Unmarshal(r.body, &resp); err != nil || resp.NBR != int(rtb.NoBidAdsTxtViolation) {
		t.Fatalf("status %d %s, want nbr 12", r.status, r.body)
	}
	if n := f.counter("rtbd_bidder_supply_refusals_total", "reason", "not_in_ads_txt"); n != 1 {
		t.Errorf("refusals counted %v, want 1", n)
	}
	if n := f.counter("rtbd_bidder_nobids_total", "nbr", "ads_txt_violation"); n != 1 {
		t.Errorf("no-bids counted %v, want 1", n)
	}
}

// pbsAccepts is Prebid Server's check of a bid's ext.dsa (its
// dsa/validate.go): required and missing, behalf or paid over 100 bytes,
// neither side rendering, both rendering.
func pbsAccepts(required, pubrender int, ext json.RawMessage) bool {
	var bid struct {
		DSA *struct {
			Behalf, Paid string
			AdRender     *int `json:"adrender"`
		} `json:"dsa"`
	}
	if len(ext) > 0 && json.Unmarshal(ext, &bid) != nil {
		return false
	}
	if (required == 2 || required == 3) && bid.DSA == nil {
		return false
	}
	if bid.DSA == nil {
		return true
	}
	if len(bid.DSA.Behalf) > 100 || len(bid.DSA.Paid) > 100 {
		return false
	}
	if a := bid.DSA.AdRender; a != nil && (pubrender == 0 && *a != 1 || pubrender == 2 && *a == 1) {
		return false
	}
	return true
}

// TestDSAAuction: bids on EU traffic (regs.ext.dsa) carry ext.dsa and,
// where the publisher cannot show the notice, render it in the creative;
// campaigns that cannot answer get nbr 510 with a counted reason. Every
// bid made passes Prebid Server's validation.
func TestDSAAuction(t *testing.T) {
	src := &swapCampaigns{}
	f := newFixture(t, func(o *Options) { o.Campaigns, o.NBRBody, o.DSADomain = src, true, "dsp.example" })
	withDSA := oneCampaign(t, "dsa: {behalf: Shop Example Ltd, paid: Agency1 GmbH}")
	without := oneCampaign(t)
	const banner = `{"id":"1","banner":{"w":300,"h":250}}`
	const nativeNoSponsor = `{"id":"1","native":{"request":"{\"ver\":\"1.2\",\"assets\":[{\"id\":1,\"required\":1,\"title\":{\"len\":90}}]}"}}`
	const nativeSponsor = `{"id":"1","native":{"request":"{\"ver\":\"1.2\",\"assets\":[{\"id\":1,\"required\":1,\"title\":{\"len\":90}},{\"id\":2,\"required\":1,\"data\":{\"type\":1}}]}"}}`
	for _, c := range []struct {
		name                           string
		set                            *campaign.Set
		imp                            string
		required, pubrender, datatopub int // required -1: no regs.ext.dsa
		nbr                            rtb.NoBidReason
		ext                            string // the bid's ext, "" none
		label                          bool   // the adm carries the notice
		counted                        string // dsa refusal reason counted
	}{
		{"required, publisher cannot render: the banner renders it", withDSA, banner, 2, 0, 2, 0,
			`{"dsa":{"behalf":"Shop Example Ltd","paid":"Agency1 GmbH","transparency":[{"domain":"dsp.example","dsaparams":[1]}],"adrender":1}}`, true, ""},
		{"online platform, publisher will render", withDSA, banner, 3, 2, 1, 0,
			`{"dsa":{"behalf":"Shop Example Ltd","paid":"Agency1 GmbH","transparency":[{"domain":"dsp.example","dsaparams":[1]}],"adrender":0}}`, false, ""},
		{"datatopub 0: no transparency", withDSA, banner, 2, 1, 0, 0,
			`{"dsa":{"behalf":"Shop Example Ltd","paid":"Agency1 GmbH","adrender":1}}`, true, ""},
		{"required and the campaign has no dsa", without, banner, 2, 0, 2, rtb.NoBidDSA, "", false, "no_campaign_dsa"},
		{"not required, no dsa: a plain bid", without, banner, 0, 0, 2, 0, "", false, ""},
		{"no regs.ext.dsa: a plain bid", withDSA, banner, -1, 0, 0, 0, "", false, ""},
		{"native without a sponsored asset, publisher cannot render", withDSA, nativeNoSponsor, 2, 0, 2, rtb.NoBidDSA, "", false, "cannot_render"},
		{"native without a sponsored asset, publisher could render", withDSA, nativeNoSponsor, 2, 1, 2, 0,
			`{"dsa":{"behalf":"Shop Example Ltd","paid":"Agency1 GmbH","transparency":[{"domain":"dsp.example","dsaparams":[1]}],"adrender":0}}`, false, ""},
		{"native with a sponsored asset renders it", withDSA, nativeSponsor, 2, 0, 2, 0,
			`{"dsa":{"behalf":"Shop Example Ltd","paid":"Agency1 GmbH","transparency":[{"domain":"dsp.example","dsaparams":[1]}],"adrender":1}}`, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src.p.Store(c.set)
			regs := ""
			if c.required >= 0 {
				regs = fmt.Sprintf(`,"regs":{"ext":{"dsa":{"dsarequired":%d,"pubrender":%d,"datatopub":%d}}}`, c.required, c.pubrender, c.datatopub)
			}
			body := withUser(t, []byte(`{"id":"r","imp":[`+c.imp+`],"site":{"domain":"publisher.com"}`+regs+`}`), userBulk)
			before := 0.0
			if c.counted != "" {
				before = f.counter("rtbd_bidder_dsa_refusals_total", "reason", c.counted)
			}
			r := f.bid(body)
			var resp struct {
				NBR     int
				SeatBid []struct {
					Bid []struct {
						AdM string          `json:"adm"`
						Ext json.RawMessage `json:"ext"`
					}
				}
			}
			if err := json.Unmarshal(r.body, &resp); err != nil {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			if c.nbr != 0 {
				if resp.NBR != int(c.nbr) || len(resp.SeatBid) != 0 {
					t.Fatalf("%s, want nbr %d", r.body, c.nbr)
				}
				if n := f.counter("rtbd_bidder_dsa_refusals_total", "reason", c.counted); n != before+1 {
					t.Errorf("%s counted %v, want %v", c.counted, n, before+1)
				}
				return
			}
			if len(resp.SeatBid) != 1 || len(resp.SeatBid[0].Bid) != 1 {
				t.Fatalf("no bid: %s", r.body)
			}
			bid := resp.SeatBid[0].Bid[0]
			if string(bid.Ext) != c.ext {
				t.Errorf("ext %s\nwant %s", bid.Ext, c.ext)
			}
			if got := strings.Contains(bid.AdM, "On behalf of Shop Example Ltd, paid by Agency1 GmbH"); got != c.label {
				t.Errorf("notice in the adm: %v, want %v: %.400s", got, c.label, bid.AdM)
			}
			if c.required >= 0 && !pbsAccepts(c.required, c.pubrender, bid.Ext) {
				t.Errorf("Prebid Server would drop the bid: %s", bid.Ext)
			}
		})
	}
}

// BenchmarkBidSupplyDSA is one bid through the handler with a campaign
// that checks the supply path and writes ext.dsa, beside its baseline:
// the same request and campaign without those settings.
func BenchmarkBidSupplyDSA(b *testing.B) {
	src := &swapCampaigns{}
	f := newFixture(b, func(o *Options) { o.Campaigns, o.Supply, o.DSADomain = src, openSupply(b), "dsp.example" })
	body := withUser(b, []byte(`{"id":"r1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"site":{"domain":"www.publisher.com"},
		"source":{"schain":{"complete":1,"ver":"1.0","nodes":[{"asi":"exchange-a.com","sid":"pub1","hp":1},{"asi":"reseller-b.com","sid":"r1","hp":1}]}},
		"regs":{"ext":{"dsa":{"dsarequired":1,"pubrender":0,"datatopub":2}}}}`), userBulk)
	h := f.b.Handler()
	for _, c := range []struct {
		name string
		set  *campaign.Set
	}{
		{"baseline", oneCampaign(b)},
		{"supply+dsa", oneCampaign(b, "dsa: {behalf: Shop Example Ltd, paid: Agency1 GmbH}", "supply: {authorized_only: true}")},
	} {
		b.Run(c.name, func(b *testing.B) {
			src.p.Store(c.set)
			rc := bidCtx(body)
			b.ReportAllocs()
			for b.Loop() {
				rc.Response.Reset()
				h(rc)
			}
			if rc.Response.StatusCode() != 200 {
				b.Fatalf("status %d", rc.Response.StatusCode())
			}
		})
	}
}
