package privacy

import (
	"encoding/json"
	"testing"

	"github.com/prebid/go-gdpr/vendorconsent"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/privacy/privacytest"
	"github.com/rtbd/rtbd/rtb"
)

// TestTCF2Encoder: privacytest.TCF2 and go-gdpr read the same string.
func TestTCF2Encoder(t *testing.T) {
	s := privacytest.TCF2([]int{1, 3, 4}, []int{5, 42}, 50, 3, 42)
	vc, err := vendorconsent.ParseString(s)
	if err != nil {
		t.Fatal(err)
	}
	if vc.Version() != 2 || !vc.PurposeAllowed(1) || vc.PurposeAllowed(2) || !vc.PurposeAllowed(4) ||
		!vc.VendorConsent(42) || vc.VendorConsent(41) || vc.MaxVendorID() != 50 {
		t.Fatalf("encoder and go-gdpr disagree on %s", s)
	}
	if pr, ok := vc.(pubRestrictions); !ok || !pr.CheckPubRestriction(3, 0, 42) || pr.CheckPubRestriction(4, 0, 42) {
		t.Fatal("publisher restriction not read back")
	}
}

func TestPrivacy(t *testing.T) {
	const vendor = 42
	full := privacytest.TCF2([]int{1, 2, 3, 4, 7}, []int{vendor}, 100, 0, 0)
	noP4 := privacytest.TCF2([]int{1, 2, 3}, []int{vendor}, 100, 0, 0)
	noVendor := privacytest.TCF2([]int{1, 3, 4}, []int{7}, 100, 0, 0)
	restricted := privacytest.TCF2([]int{1, 3, 4}, []int{vendor}, 100, 4, vendor)
	one, zero := int8(1), int8(0)
	cases := []struct {
		name   string
		regs   *openrtb2.Regs
		user   *openrtb2.User
		device *openrtb2.Device
		vendor uint16
		want   Decision
	}{
		{"no regs", nil, nil, nil, vendor, Allow},
		{"coppa", &openrtb2.Regs{COPPA: 1}, nil, nil, vendor, COPPAChildDirected},
		{"gdpr=0", &openrtb2.Regs{GDPR: &zero}, nil, nil, vendor, Allow},
		{"gdpr unknown", &openrtb2.Regs{}, nil, nil, vendor, Allow},
		{"gdpr no consent", &openrtb2.Regs{GDPR: &one}, nil, nil, vendor, TCFNoConsent},
		{"gdpr garbage consent", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: "not-a-consent!"}, nil, vendor, TCFBadConsent},
		{"gdpr full consent", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: full}, nil, vendor, Allow},
		{"gdpr full consent, no vendor check", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: noVendor}, nil, 0, Allow},
		{"gdpr no purpose 4", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: noP4}, nil, vendor, TCFPurposes},
		{"gdpr other vendor", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: noVendor}, nil, vendor, TCFVendor},
		{"gdpr vendor beyond max", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: full}, nil, 500, TCFVendor},
		{"gdpr pub restriction", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: restricted}, nil, vendor, TCFPubRestricted},
		{"2.5 ext gdpr + ext consent", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":1}`)}, &openrtb2.User{Ext: json.RawMessage(`{"consent":"` + full + `"}`)}, nil, vendor, Allow},
		{"2.5 ext gdpr string, no consent", &openrtb2.Regs{Ext: json.RawMessage(`{"x":[1,{"gdpr":0}], "gdpr" : "1"}`)}, &openrtb2.User{}, nil, vendor, TCFNoConsent},
		{"2.5 ext gdpr 0", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":0}`)}, nil, nil, vendor, Allow},
		{"us privacy opt-out", &openrtb2.Regs{USPrivacy: "1YYN"}, nil, nil, vendor, USPOptOut},
		{"us privacy no opt-out", &openrtb2.Regs{USPrivacy: "1YNN"}, nil, nil, vendor, Allow},
		{"us privacy ext opt-out", &openrtb2.Regs{Ext: json.RawMessage(`{"us_privacy":"1-Y-"}`)}, nil, nil, vendor, USPOptOut},
		// A 2.5 ext member of the wrong type reads as absent, never as a
		// signal nor a rejection; the first of duplicate members counts.
		{"2.5 ext gdpr wrong type", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":true,"us_privacy":1}`)}, &openrtb2.User{Ext: json.RawMessage(`{"consent":5}`)}, nil, vendor, Allow},
		{"2.5 ext gdpr 1.0", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":1.0}`)}, nil, nil, vendor, Allow},
		{"2.5 ext gdpr, consent wrong type", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":1}`)}, &openrtb2.User{Ext: json.RawMessage(`{"consent":{"s":"` + full + `"}}`)}, nil, vendor, TCFNoConsent},
		{"2.5 ext us privacy, first wins", &openrtb2.Regs{Ext: json.RawMessage(`{"us_privacy":"1YNN","us_privacy":"1-Y-"}`)}, nil, nil, vendor, Allow},
		{"2.5 ext gpp wrong type", &openrtb2.Regs{Ext: json.RawMessage(`{"gpp":["x"],"gpp_sid":[7]}`)}, nil, nil, vendor, Allow},
		{"dnt", nil, nil, &openrtb2.Device{DNT: &one}, vendor, LMTLimited},
		{"lmt", nil, nil, &openrtb2.Device{Lmt: &one}, vendor, LMTLimited},
		{"dnt 0", nil, nil, &openrtb2.Device{DNT: &zero, Lmt: &zero}, vendor, Allow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &openrtb2.BidRequest{Regs: tc.regs, User: tc.user, Device: tc.device}
			if got := decide(t, req, tc.vendor); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// extsOf returns the ext members of req as the bid path has them: req
// (given an id and an imp) encoded and decoded by rtb.DecodeRequestExts.
func extsOf(t testing.TB, req *openrtb2.BidRequest) *rtb.Exts {
	t.Helper()
	r := *req
	r.ID, r.Imp = "r", []openrtb2.Imp{{ID: "1", Banner: &openrtb2.Banner{}}}
	body, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var back openrtb2.BidRequest
	exts := new(rtb.Exts)
	if err := (&rtb.Decoder{}).DecodeRequestExts(body, &back, exts); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return exts
}

// decide is the decision for req as the bid path reaches it.
func decide(t testing.TB, req *openrtb2.BidRequest, vendor uint16) Decision {
	s := FromRequest(req, extsOf(t, req))
	return s.Decide(vendor)
}
