package bidder

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// gppFixture is one string of testdata/gpp.json.
type gppFixture struct {
	Name, GPP, Source string
}

// gppFixtures reads testdata/gpp.json by name.
func gppFixtures(t testing.TB) map[string]gppFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Strings []gppFixture
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]gppFixture, len(file.Strings))
	for _, f := range file.Strings {
		if f.Source == "" {
			t.Fatalf("%s: no source", f.Name)
		}
		m[f.Name] = f
	}
	return m
}

// TestPrivacyGPP: each GPP string of testdata/gpp.json, with the sections
// gpp_sid lists, gets the decision its fields call for; only listed
// sections count, and the most restrictive signal wins.
func TestPrivacyGPP(t *testing.T) {
	const vendor = 32 // consented in tcf-consent
	fx := gppFixtures(t)
	one, zero := int8(1), int8(0)
	full := tcf2([]int{1, 2, 3, 4}, []int{vendor}, 100, 0, 0)
	cases := []struct {
		name, gpp string
		sid       []int8
		regs      openrtb2.Regs // GPP and GPPSID are set from the row
		consent   string        // user.consent
		want      string
	}{
		// EU TCF section (2).
		{"tcf consent", "tcf-consent", []int8{2}, openrtb2.Regs{}, "", privacyOK},
		{"tcf consent, gdpr=0 in regs", "tcf-consent", []int8{2}, openrtb2.Regs{GDPR: &zero}, "", privacyOK},
		{"tcf without consent", "tcf-no-consent", []int8{2}, openrtb2.Regs{}, "", privacyPurposes},
		{"tcf without consent beats user.consent", "tcf-no-consent", []int8{2}, openrtb2.Regs{GDPR: &one}, full, privacyPurposes},
		{"tcf consent, user.consent without: most restrictive", "tcf-consent", []int8{2}, openrtb2.Regs{GDPR: &one}, tcf2([]int{1}, []int{vendor}, 100, 0, 0), privacyPurposes},
		{"section 2 listed, not carried: user.consent", "usnat-clean", []int8{2, 7}, openrtb2.Regs{}, full, privacyOK},
		{"section 2 listed, not carried, no user.consent", "usnat-clean", []int8{2, 7}, openrtb2.Regs{}, "", privacyNoConsent},
		// Sections not listed in gpp_sid do not apply.
		{"tcf not listed", "tcf-usp", []int8{6}, openrtb2.Regs{}, "", privacyOK},
		{"tcf not listed, gdpr=1 from regs", "tcf-no-consent", []int8{7}, openrtb2.Regs{GDPR: &one}, full, privacyOK},
		{"empty gpp_sid", "tcf-no-consent", []int8{}, openrtb2.Regs{}, "", privacyOK},
		{"no gpp_sid", "tcf-no-consent", nil, openrtb2.Regs{}, "", privacyOK},
		{"usnat restricted, not listed", "usnat-restricted", []int8{6}, openrtb2.Regs{}, "", privacyOK},
		{"listed section not carried", "usnat-restricted", []int8{8}, openrtb2.Regs{}, "", privacyOK},
		{"bad section, not listed", "bad-uspca", []int8{7}, openrtb2.Regs{}, "", privacyOK},
		// US Privacy section (6).
		{"section 6 no opt-out", "tcf-usp", []int8{6}, openrtb2.Regs{}, "", privacyOK},
		{"section 6 opt-out", "tcf-usp-optout", []int8{6}, openrtb2.Regs{}, "", privacyUSOptOut},
		{"section 6 opt-out beats regs.us_privacy", "tcf-usp-optout", []int8{6}, openrtb2.Regs{USPrivacy: "1YNN"}, "", privacyUSOptOut},
		{"regs.us_privacy opt-out beats section 6", "tcf-usp", []int8{6}, openrtb2.Regs{USPrivacy: "1YYN"}, "", privacyUSOptOut},
		{"tcf and section 6 listed", "tcf-usp", []int8{2, 6}, openrtb2.Regs{}, "", privacyPurposes},
		// US national (7) and states (8-12).
		{"usnat no opt-out", "usnat-clean", []int8{7}, openrtb2.Regs{}, "", privacyOK},
		{"usnat sale opt-out", "usnat-sale-optout", []int8{7}, openrtb2.Regs{}, "", privacyGPPOptOut},
		{"usnat gpc", "usnat-gpc", []int8{7}, openrtb2.Regs{}, "", privacyGPC},
		{"usnat notice not given", "usnat-restricted", []int8{7}, openrtb2.Regs{}, "", privacyGPPOptOut},
		{"california sale notice not given", "us-all-states", []int8{8}, openrtb2.Regs{}, "", privacyGPPOptOut},
		{"virginia targeted opt-out", "us-all-states", []int8{9}, openrtb2.Regs{}, "", privacyGPPOptOut},
		{"utah", "us-all-states", []int8{11}, openrtb2.Regs{}, "", privacyGPPOptOut},
		{"clean usnat with gdpr consent", "usnat-clean", []int8{7}, openrtb2.Regs{GDPR: &one}, full, privacyOK},
		// Unread and malformed sections.
		{"canadian tcf listed", "tcfca-usp", []int8{5, 6}, openrtb2.Regs{}, "", privacyGPPSection},
		{"canadian tcf not listed", "tcfca-usp", []int8{6}, openrtb2.Regs{}, "", privacyOK},
		{"malformed header", "bad-header", []int8{2}, openrtb2.Regs{}, "", privacyBadGPP},
		{"malformed california", "bad-uspca", []int8{8}, openrtb2.Regs{}, "", privacyBadGPP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := fx[tc.gpp]
			if !ok {
				t.Fatalf("no fixture %q", tc.gpp)
			}
			regs := tc.regs
			regs.GPP, regs.GPPSID = f.GPP, tc.sid
			req := &openrtb2.BidRequest{Regs: &regs}
			if tc.consent != "" {
				req.User = &openrtb2.User{Consent: tc.consent}
			}
			if got := privacyCheck(req, vendor); got != tc.want {
				t.Errorf("%s with gpp_sid %v: %q, want %q", tc.gpp, tc.sid, got, tc.want)
			}
			// The 2.5 form (regs.ext) and the query form decide the same.
			if tc.regs.GDPR != nil || tc.regs.USPrivacy != "" || tc.sid == nil {
				return
			}
			sid := make([]string, len(tc.sid))
			for i, v := range tc.sid {
				sid[i] = strconv.Itoa(int(v))
			}
			ext, _ := json.Marshal(map[string]any{"gpp": f.GPP, "gpp_sid": tc.sid})
			req.Regs = &openrtb2.Regs{Ext: ext}
			if got := privacyCheck(req, vendor); got != tc.want {
				t.Errorf("regs.ext form: %q, want %q", got, tc.want)
			}
			q := privacySignals{gdpr: -1, consent: tc.consent, gpp: f.GPP, gppSID: strings.Join(sid, ",")}
			if got := privacyDecision(&q, vendor); got != tc.want {
				t.Errorf("query form gpp_sid=%s: %q, want %q", q.gppSID, got, tc.want)
			}
		})
	}
}

// TestPrivacyGPPBounds: strings that go-gpp would take long over, or
// that carry more than their header says, are a no, quickly.
func TestPrivacyGPPBounds(t *testing.T) {
	for _, tc := range []struct{ name, gpp, sid string }{
		{"too long", "DBABLA~" + strings.Repeat("A", maxGPPLen), "7"},
		{"long header", "DBAB" + strings.Repeat("A", 20) + "~BVVqAAAAASA.QA", "7"},
		{"more sections than ids", "DBABLA~BVVqAAAAASA.QA~1YNN", "7"},
		{"fewer sections than ids", "DBACNY~1YNN", "6"},
		{"no sections", "DBABLA", "7"},
		{"empty section", "DBABMA~", "2"},
		{"not a header", "CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA", "2"},
		{"bad us privacy", "DBACNY~CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA~1YN", "6"},
		{"header over maxGPPHeader", "DBABv____________~x", "7"},
	} {
		s := privacySignals{gdpr: -1, gpp: tc.gpp, gppSID: tc.sid}
		if got := privacyDecision(&s, 0); got != privacyBadGPP {
			t.Errorf("%s: %q, want %q", tc.name, got, privacyBadGPP)
		}
	}
}

// TestPrivacyGPPEndToEnd: a bid request whose US national section opts
// out gets nbr 505; without the opt-out, a bid.
func TestPrivacyGPPEndToEnd(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.NBRBody = true })
	fx := gppFixtures(t)
	base := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	for _, tc := range []struct {
		fixture string
		nbr     int
	}{
		{"usnat-sale-optout", 505},
		{"usnat-gpc", 505},
		{"usnat-clean", 0},
	} {
		body := withUser(t, base, userBulk, "regs", map[string]any{"gpp": fx[tc.fixture].GPP, "gpp_sid": []int{7}})
		r := f.bid(body)
		var nb struct {
			NBR int `json:"nbr"`
		}
		if err := json.Unmarshal(r.body, &nb); err != nil || r.status != 200 || nb.NBR != tc.nbr {
			t.Errorf("%s: status %d body %.200s, want nbr %d", tc.fixture, r.status, r.body, tc.nbr)
		}
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "privacy"); got != 2 {
		t.Errorf("nobids{privacy} = %v, want 2", got)
	}
}
