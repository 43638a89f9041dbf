package bidder

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/prebid/go-gdpr/vendorconsent"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/rtb"
)

// bitWriter writes big-endian bit fields (the TCF encoding).
type bitWriter struct {
	b []byte
	n int
}

func (w *bitWriter) put(v uint64, bits int) {
	for i := bits - 1; i >= 0; i-- {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		if v>>uint(i)&1 == 1 {
			w.b[w.n/8] |= 0x80 >> uint(w.n%8)
		}
		w.n++
	}
}

// tcf2 encodes a TCF v2 core string with the given purpose consents,
// vendor consents (bit field up to maxVendor) and, optionally, a publisher
// restriction of type 0 on purpose restrictPurpose for vendor
// restrictVendor. Test helper: go-gdpr has a parser, no encoder.
func tcf2(purposes []int, vendors []int, maxVendor int, restrictPurpose, restrictVendor int) string {
	w := &bitWriter{}
	w.put(2, 6)            // version
	w.put(17000000000, 36) // created (deciseconds)
	w.put(17000000000, 36) // last updated
	w.put(7, 12)           // cmp id
	w.put(1, 12)           // cmp version
	w.put(1, 6)            // consent screen
	w.put(('E'-'A')<<6|('N'-'A'), 12)
	w.put(100, 12) // vendor list version
	w.put(2, 6)    // policy version
	w.put(1, 1)    // service specific
	w.put(0, 1)    // non-standard texts
	w.put(0, 12)   // special features
	var pc uint64
	for _, p := range purposes {
		pc |= 1 << uint(24-p)
	}
	w.put(pc, 24) // purpose consents
	w.put(0, 24)  // purpose LI
	w.put(0, 1)   // purpose one treatment
	w.put(('D'-'A')<<6|('E'-'A'), 12)
	// vendor consents: bit field
	w.put(uint64(maxVendor), 16)
	w.put(0, 1)
	for v := 1; v <= maxVendor; v++ {
		bit := uint64(0)
		for _, x := range vendors {
			if x == v {
				bit = 1
			}
		}
		w.put(bit, 1)
	}
	// vendor legitimate interests: none
	w.put(uint64(maxVendor), 16)
	w.put(0, 1)
	w.put(0, maxVendor)
	if restrictPurpose == 0 {
		w.put(0, 12)
	} else {
		w.put(1, 12)                      // one restriction
		w.put(uint64(restrictPurpose), 6) // purpose
		w.put(0, 2)                       // type 0: not allowed
		w.put(1, 12)                      // one entry
		w.put(0, 1)                       // single id
		w.put(uint64(restrictVendor), 16) // vendor
	}
	return base64.RawURLEncoding.EncodeToString(w.b)
}

func TestTCF2Encoder(t *testing.T) {
	s := tcf2([]int{1, 3, 4}, []int{5, 42}, 50, 3, 42)
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
	full := tcf2([]int{1, 2, 3, 4, 7}, []int{vendor}, 100, 0, 0)
	noP4 := tcf2([]int{1, 2, 3}, []int{vendor}, 100, 0, 0)
	noVendor := tcf2([]int{1, 3, 4}, []int{7}, 100, 0, 0)
	restricted := tcf2([]int{1, 3, 4}, []int{vendor}, 100, 4, vendor)
	one, zero := int8(1), int8(0)
	cases := []struct {
		name   string
		regs   *openrtb2.Regs
		user   *openrtb2.User
		device *openrtb2.Device
		vendor uint16
		want   string
	}{
		{"no regs", nil, nil, nil, vendor, privacyOK},
		{"coppa", &openrtb2.Regs{COPPA: 1}, nil, nil, vendor, privacyCOPPA},
		{"gdpr=0", &openrtb2.Regs{GDPR: &zero}, nil, nil, vendor, privacyOK},
		{"gdpr unknown", &openrtb2.Regs{}, nil, nil, vendor, privacyOK},
		{"gdpr no consent", &openrtb2.Regs{GDPR: &one}, nil, nil, vendor, privacyNoConsent},
		{"gdpr garbage consent", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: "not-a-consent!"}, nil, vendor, privacyBadConsent},
		{"gdpr full consent", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: full}, nil, vendor, privacyOK},
		{"gdpr full consent, no vendor check", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: noVendor}, nil, 0, privacyOK},
		{"gdpr no purpose 4", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: noP4}, nil, vendor, privacyPurposes},
		{"gdpr other vendor", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: noVendor}, nil, vendor, privacyVendor},
		{"gdpr vendor beyond max", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: full}, nil, 500, privacyVendor},
		{"gdpr pub restriction", &openrtb2.Regs{GDPR: &one}, &openrtb2.User{Consent: restricted}, nil, vendor, privacyPubRestricted},
		{"2.5 ext gdpr + ext consent", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":1}`)}, &openrtb2.User{Ext: json.RawMessage(`{"consent":"` + full + `"}`)}, nil, vendor, privacyOK},
		{"2.5 ext gdpr string, no consent", &openrtb2.Regs{Ext: json.RawMessage(`{"x":[1,{"gdpr":0}], "gdpr" : "1"}`)}, &openrtb2.User{}, nil, vendor, privacyNoConsent},
		{"2.5 ext gdpr 0", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":0}`)}, nil, nil, vendor, privacyOK},
		{"us privacy opt-out", &openrtb2.Regs{USPrivacy: "1YYN"}, nil, nil, vendor, privacyUSOptOut},
		{"us privacy no opt-out", &openrtb2.Regs{USPrivacy: "1YNN"}, nil, nil, vendor, privacyOK},
		{"us privacy ext opt-out", &openrtb2.Regs{Ext: json.RawMessage(`{"us_privacy":"1-Y-"}`)}, nil, nil, vendor, privacyUSOptOut},
		// A 2.5 ext member of the wrong type reads as absent, never as a
		// signal nor a rejection; the first of duplicate members counts.
		{"2.5 ext gdpr wrong type", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":true,"us_privacy":1}`)}, &openrtb2.User{Ext: json.RawMessage(`{"consent":5}`)}, nil, vendor, privacyOK},
		{"2.5 ext gdpr 1.0", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":1.0}`)}, nil, nil, vendor, privacyOK},
		{"2.5 ext gdpr, consent wrong type", &openrtb2.Regs{Ext: json.RawMessage(`{"gdpr":1}`)}, &openrtb2.User{Ext: json.RawMessage(`{"consent":{"s":"` + full + `"}}`)}, nil, vendor, privacyNoConsent},
		{"2.5 ext us privacy, first wins", &openrtb2.Regs{Ext: json.RawMessage(`{"us_privacy":"1YNN","us_privacy":"1-Y-"}`)}, nil, nil, vendor, privacyOK},
		{"2.5 ext gpp wrong type", &openrtb2.Regs{Ext: json.RawMessage(`{"gpp":["x"],"gpp_sid":[7]}`)}, nil, nil, vendor, privacyOK},
		{"dnt", nil, nil, &openrtb2.Device{DNT: &one}, vendor, privacyDNT},
		{"lmt", nil, nil, &openrtb2.Device{Lmt: &one}, vendor, privacyDNT},
		{"dnt 0", nil, nil, &openrtb2.Device{DNT: &zero, Lmt: &zero}, vendor, privacyOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &openrtb2.BidRequest{Regs: tc.regs, User: tc.user, Device: tc.device}
			if got := privacyCheck(req, extsOf(t, req), tc.vendor); got != tc.want {
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
