package rtb

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// TestAppendBidExtDSA: the ext is valid JSON whatever the strings hold,
// decodes back to them, and goes through AppendResponse as a bid's ext.
func TestAppendBidExtDSA(t *testing.T) {
	for _, d := range []BidDSA{
		{Behalf: "Shop", Paid: "Agency", AdRender: 1},
		{Behalf: "a\"b\\c\n<&>\u2028", Paid: "\xff", Domain: "dsp.example", Param: 2},
		{},
	} {
		ext := AppendBidExtDSA(nil, &d)
		var got struct {
			DSA struct {
				Behalf, Paid string
				Transparency []struct {
					Domain    string
					DSAParams []int `json:"dsaparams"`
				}
				AdRender *int `json:"adrender"`
			} `json:"dsa"`
		}
		if err := json.Unmarshal(ext, &got); err != nil {
			t.Fatalf("%q: %v", ext, err)
		}
		wantPaid := d.Paid
		if wantPaid == "\xff" {
			wantPaid = "\ufffd"
		}
		if got.DSA.Behalf != d.Behalf || got.DSA.Paid != wantPaid || got.DSA.AdRender == nil || *got.DSA.AdRender != d.AdRender {
			t.Errorf("%s decodes to %+v", ext, got.DSA)
		}
		if (d.Domain != "") != (len(got.DSA.Transparency) == 1) || d.Domain != "" && (got.DSA.Transparency[0].Domain != d.Domain || got.DSA.Transparency[0].DSAParams[0] != d.Param) {
			t.Errorf("%s: transparency %+v", ext, got.DSA.Transparency)
		}
		resp := openrtb2.BidResponse{ID: "r", SeatBid: []openrtb2.SeatBid{{Bid: []openrtb2.Bid{{ID: "b", ImpID: "1", Price: 1, Ext: ext}}}}}
		out, err := AppendResponse(nil, &resp)
		if err != nil || !json.Valid(out) || !bytes.Contains(out, append([]byte(`"ext":`), ext...)) {
			t.Errorf("response %s: %v", out, err)
		}
	}
}
