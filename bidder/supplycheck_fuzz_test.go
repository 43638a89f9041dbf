package bidder

import (
	"encoding/json"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/rtb"
)

// FuzzSupplyDSA drives bid requests through the handler to a campaign
// with a supply setting and a dsa setting, over the supply fixture: any
// source.schain, source.ext.schain, site, app and regs.ext.dsa must get a
// bid or a no-bid (never a panic nor a 5xx), and every bid on a request
// with regs.ext.dsa must pass Prebid Server's DSA checks. Seeds: the
// supply fixture's labelled requests and DSA variants.
func FuzzSupplyDSA(f *testing.F) {
	src := &swapCampaigns{}
	src.p.Store(oneCampaign(f, "dsa: {behalf: Shop Example Ltd, paid: Agency1 GmbH}", "supply: {max_hops: 4, authorized_only: true}"))
	fx := newFixture(f, func(o *Options) {
		o.Campaigns, o.Supply, o.NBRBody, o.DSADomain = src, openSupply(f), true, "dsp.example"
	})
	var cases []struct {
		Request json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(readFile(f, supplyDir+"/cases.json"), &cases); err != nil {
		f.Fatal(err)
	}
	for i, c := range cases {
		body := withUser(f, c.Request, userBulk)
		f.Add(body)
		f.Add(editJSON(f, body, func(m map[string]any) {
			m["regs"] = map[string]any{"ext": map[string]any{"dsa": map[string]any{"dsarequired": i % 4, "pubrender": i % 3, "datatopub": 2}}}
		}))
	}
	h := fx.b.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod("POST")
		rc.Request.SetRequestURI(PathBid)
		rc.Request.SetBody(body)
		h(&rc)
		if s := rc.Response.StatusCode(); s >= 500 {
			t.Fatalf("status %d", s)
		}
		var resp struct {
			SeatBid []struct {
				Bid []struct {
					Ext json.RawMessage `json:"ext"`
				} `json:"bid"`
			} `json:"seatbid"`
		}
		if rc.Response.StatusCode() != 200 || json.Unmarshal(rc.Response.Body(), &resp) != nil {
			return
		}
		// regs.ext.dsa as the bidder read it (its decoder's rules: exact
		// keys, the first duplicate wins).
		var req openrtb2.BidRequest
		var exts rtb.Exts
		if fx.b.dec.DecodeRequestExts(body, &req, &exts) != nil || !exts.DSA.Present {
			return
		}
		d := &exts.DSA
		for _, sb := range resp.SeatBid {
			for _, b := range sb.Bid {
				if !pbsAccepts(d.Required, d.PubRender, b.Ext) {
					t.Fatalf("regs.ext.dsa %+v: Prebid Server would drop the bid with ext %s", *d, b.Ext)
				}
			}
		}
	})
}
