package privacy

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	gpp "github.com/prebid/go-gpp"
	"github.com/prebid/go-gpp/util"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/privacy/privacytest"
)

// goGPPSectionIDs is go-gpp's reading of a header's section ids, or nil
// when it does not parse or lists ids gppSectionIDs refuses by design
// (more than maxGPPSections, an id from 6765 on: a Fibonacci integer of
// over 20 bits).
func goGPPSectionIDs(header string) []int {
	if len(header) < 2 || header[0] != 'D' {
		return nil
	}
	bs, err := util.NewBitStreamFromBase64(header)
	if err != nil {
		return nil
	}
	bs.SetPosition(6)
	if _, err := bs.ReadByte6(); err != nil {
		return nil
	}
	r, err := bs.ReadFibonacciRange()
	if err != nil {
		return nil
	}
	var ids []int
	for _, e := range r.Range {
		if e.EndID < e.StartID || e.EndID >= 6765 || int(e.EndID-e.StartID)+len(ids) >= maxGPPSections {
			return nil
		}
		for id := int(e.StartID); id <= int(e.EndID); id++ {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestGPPSectionIDs: the header reader gives go-gpp's section ids for
// every fixture whose header parses (gpp.Parse, safe on these).
func TestGPPSectionIDs(t *testing.T) {
	for _, f := range privacytest.GPPFixtures(t) {
		header, _, _ := strings.Cut(f.GPP, "~")
		var ids [maxGPPSections]int
		n, ok := gppSectionIDs(header, &ids)
		c, errs := gpp.Parse(f.GPP)
		if !ok {
			if len(c.SectionTypes) != 0 {
				t.Errorf("%s: header refused, go-gpp reads %v", f.Name, c.SectionTypes)
			}
			continue
		}
		if len(errs) != 0 && len(c.SectionTypes) == 0 {
			t.Errorf("%s: go-gpp refuses the header (%v), read as %v", f.Name, errs, ids[:n])
			continue
		}
		if fmt.Sprint(ids[:n]) != fmt.Sprint(c.SectionTypes) {
			t.Errorf("%s: ids %v, go-gpp %v", f.Name, ids[:n], c.SectionTypes)
		}
	}
}

// TestPrivacyGPP: each GPP string of testdata/gpp.json, with the sections
// gpp_sid lists, gets the decision its fields call for; only listed
// sections count, and the most restrictive signal wins.
func TestPrivacyGPP(t *testing.T) {
	const vendor = 32 // consented in tcf-consent
	fx := privacytest.GPPFixtures(t)
	one, zero := int8(1), int8(0)
	full := privacytest.TCF2([]int{1, 2, 3, 4}, []int{vendor}, 100, 0, 0)
	cases := []struct {
		name, gpp string
		sid       []int8
		regs      openrtb2.Regs // GPP and GPPSID are set from the row
		consent   string        // user.consent
		want      Decision
	}{
		// EU TCF section (2).
		{"tcf consent", "tcf-consent", []int8{2}, openrtb2.Regs{}, "", Allow},
		{"tcf consent, gdpr=0 in regs", "tcf-consent", []int8{2}, openrtb2.Regs{GDPR: &zero}, "", Allow},
		{"tcf without consent", "tcf-no-consent", []int8{2}, openrtb2.Regs{}, "", TCFPurposes},
		{"tcf without consent beats user.consent", "tcf-no-consent", []int8{2}, openrtb2.Regs{GDPR: &one}, full, TCFPurposes},
		{"tcf consent, user.consent without: most restrictive", "tcf-consent", []int8{2}, openrtb2.Regs{GDPR: &one}, privacytest.TCF2([]int{1}, []int{vendor}, 100, 0, 0), TCFPurposes},
		{"section 2 listed, not carried: user.consent", "usnat-clean", []int8{2, 7}, openrtb2.Regs{}, full, Allow},
		{"section 2 listed, not carried, no user.consent", "usnat-clean", []int8{2, 7}, openrtb2.Regs{}, "", TCFNoConsent},
		// Sections not listed in gpp_sid do not apply.
		{"tcf not listed", "tcf-usp", []int8{6}, openrtb2.Regs{}, "", Allow},
		{"tcf not listed, gdpr=1 from regs", "tcf-no-consent", []int8{7}, openrtb2.Regs{GDPR: &one}, full, Allow},
		{"empty gpp_sid", "tcf-no-consent", []int8{}, openrtb2.Regs{}, "", Allow},
		{"no gpp_sid", "tcf-no-consent", nil, openrtb2.Regs{}, "", Allow},
		{"usnat restricted, not listed", "usnat-restricted", []int8{6}, openrtb2.Regs{}, "", Allow},
		{"listed section not carried", "usnat-restricted", []int8{8}, openrtb2.Regs{}, "", Allow},
		{"bad section, not listed", "bad-uspca", []int8{7}, openrtb2.Regs{}, "", Allow},
		// US Privacy section (6).
		{"section 6 no opt-out", "tcf-usp", []int8{6}, openrtb2.Regs{}, "", Allow},
		{"section 6 opt-out", "tcf-usp-optout", []int8{6}, openrtb2.Regs{}, "", USPOptOut},
		{"section 6 opt-out beats regs.us_privacy", "tcf-usp-optout", []int8{6}, openrtb2.Regs{USPrivacy: "1YNN"}, "", USPOptOut},
		{"regs.us_privacy opt-out beats section 6", "tcf-usp", []int8{6}, openrtb2.Regs{USPrivacy: "1YYN"}, "", USPOptOut},
		{"tcf and section 6 listed", "tcf-usp", []int8{2, 6}, openrtb2.Regs{}, "", TCFPurposes},
		// US national (7) and states (8-12).
		{"usnat no opt-out", "usnat-clean", []int8{7}, openrtb2.Regs{}, "", Allow},
		{"usnat sale opt-out", "usnat-sale-optout", []int8{7}, openrtb2.Regs{}, "", GPPOptOut},
		{"usnat gpc", "usnat-gpc", []int8{7}, openrtb2.Regs{}, "", GPPGPC},
		{"usnat notice not given", "usnat-restricted", []int8{7}, openrtb2.Regs{}, "", GPPOptOut},
		{"california sale notice not given", "us-all-states", []int8{8}, openrtb2.Regs{}, "", GPPOptOut},
		{"virginia targeted opt-out", "us-all-states", []int8{9}, openrtb2.Regs{}, "", GPPOptOut},
		{"utah", "us-all-states", []int8{11}, openrtb2.Regs{}, "", GPPOptOut},
		{"clean usnat with gdpr consent", "usnat-clean", []int8{7}, openrtb2.Regs{GDPR: &one}, full, Allow},
		// Unread and malformed sections.
		{"canadian tcf listed", "tcfca-usp", []int8{5, 6}, openrtb2.Regs{}, "", GPPUnreadSection},
		{"canadian tcf not listed", "tcfca-usp", []int8{6}, openrtb2.Regs{}, "", Allow},
		{"malformed header", "bad-header", []int8{2}, openrtb2.Regs{}, "", GPPBad},
		{"malformed california", "bad-uspca", []int8{8}, openrtb2.Regs{}, "", GPPBad},
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
			if got := decide(t, req, vendor); got != tc.want {
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
			if got := decide(t, req, vendor); got != tc.want {
				t.Errorf("regs.ext form: %q, want %q", got, tc.want)
			}
			q := Signals{TCF: TCF{GDPR: -1, Consent: tc.consent}, GPP: GPP{String: f.GPP, SID: strings.Join(sid, ",")}}
			if got := q.Decide(vendor); got != tc.want {
				t.Errorf("query form gpp_sid=%s: %q, want %q", q.GPP.SID, got, tc.want)
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
		s := Signals{TCF: TCF{GDPR: -1}, GPP: GPP{String: tc.gpp, SID: tc.sid}}
		if got := s.Decide(0); got != GPPBad {
			t.Errorf("%s: %q, want %q", tc.name, got, GPPBad)
		}
	}
}

// FuzzPrivacyGPP drives the GPP path of the privacy decision with any
// string and listed sections: it answers one of the known reasons; with
// nothing listed the string changes nothing; listing one more section
// never turns a no into a yes (the most restrictive signal wins). Seeds:
// testdata/gpp.json.
func FuzzPrivacyGPP(f *testing.F) {
	for _, fx := range privacytest.GPPFixtures(f) {
		for _, sid := range []uint8{2, 6, 7, 8, 9, 10, 11, 12} {
			f.Add(fx.GPP, sid, uint8(6), "")
		}
	}
	f.Add("DBABMA~CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA", uint8(2), uint8(7), "CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA")
	f.Fuzz(func(t *testing.T, gpp string, sid1, sid2 uint8, consent string) {
		const vendor = 32
		// The header reader agrees with go-gpp's (kept short: go-gpp's
		// Fibonacci decoding is exponential in a long integer).
		if header, _, _ := strings.Cut(gpp, "~"); len(header) <= 8 {
			var ids [maxGPPSections]int
			n, ok := gppSectionIDs(header, &ids)
			if want := goGPPSectionIDs(header); ok && fmt.Sprint(ids[:n]) != fmt.Sprint(want) ||
				!ok && len(want) != 0 {
				t.Fatalf("header %q: ids %v (%v), go-gpp %v", header, ids[:n], ok, want)
			}
		}
		decide := func(sid string) Decision {
			s := Signals{TCF: TCF{GDPR: -1, Consent: consent}, GPP: GPP{String: gpp, SID: sid}}
			got := s.Decide(vendor)
			if got >= numDecisions {
				t.Fatalf("gpp %q sid %q: unknown answer %d", gpp, sid, got)
			}
			return got
		}
		none := decide("")
		noGPP := Signals{TCF: TCF{GDPR: -1, Consent: consent}}
		if want := noGPP.Decide(vendor); none != want {
			t.Fatalf("gpp %q listed nowhere: %q, without it %q", gpp, none, want)
		}
		one := decide(strconv.Itoa(int(sid1)))
		both := decide(strconv.Itoa(int(sid1)) + "," + strconv.Itoa(int(sid2)))
		if one != Allow && both == Allow {
			t.Fatalf("gpp %q: sid %d says %q, adding sid %d says yes", gpp, sid1, one, sid2)
		}
		// The 2.6 form of the same list decides the same.
		s := Signals{TCF: TCF{GDPR: -1, Consent: consent}, GPP: GPP{String: gpp, SIDs: []int8{int8(sid1), int8(sid2)}}}
		if sid1 < 128 && sid2 < 128 {
			if got := s.Decide(vendor); got != both {
				t.Fatalf("gpp %q: regs.gpp_sid [%d %d] says %q, the query form %q", gpp, sid1, sid2, got, both)
			}
		}
	})
}
