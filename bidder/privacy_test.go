package bidder

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/rtbd/rtbd/bidder/privacy/privacytest"
)

// TestPrivacyEndToEnd: a COPPA request and a GDPR request without consent
// (2.6 or 2.5 form) get nbr 505; with consent, a bid; ext members of the
// wrong type are ignored.
func TestPrivacyEndToEnd(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.NBRBody = true; o.GDPRVendorID = 42 })
	base := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	consent := privacytest.TCF2([]int{1, 2, 3, 4}, []int{42}, 42, 0, 0)
	for _, tc := range []struct {
		name string
		body []byte
		nbr  int
	}{
		{"coppa", withUser(t, base, userBulk, "regs", map[string]any{"coppa": 1}), 505},
		{"gdpr without consent", withUser(t, base, userBulk, "regs", map[string]any{"gdpr": 1}), 505},
		{"gdpr with consent", withUser(t, withUser(t, base, userBulk, "regs", map[string]any{"gdpr": 1}), "", "user", map[string]any{"buyeruid": userBulk, "consent": consent}), 0},
		// Ext members of the wrong type are ignored: a bid, not a 400.
		{"ext members of the wrong type", withUser(t, base, "", "user", map[string]any{"buyeruid": userBulk, "ext": map[string]any{"consent": []int{1}}},
			"regs", map[string]any{"ext": map[string]any{"gdpr": map[string]any{}, "us_privacy": 1, "gpp": false, "dsa": "x"}},
			"source", map[string]any{"ext": map[string]any{"schain": 5}},
			"ext", map[string]any{"prebid": map[string]any{"currency": map[string]any{"rates": map[string]any{"EUR": "x"}, "usepbsrates": "no"}}}), 0},
		{"2.5 ext gdpr without consent", withUser(t, base, userBulk, "regs", map[string]any{"ext": map[string]any{"gdpr": "1"}}), 505},
	} {
		r := f.bid(tc.body)
		var nb struct {
			NBR int `json:"nbr"`
		}
		if err := json.Unmarshal(r.body, &nb); err != nil || r.status != 200 || nb.NBR != tc.nbr {
			t.Errorf("%s: status %d body %.200s, want nbr %d", tc.name, r.status, r.body, tc.nbr)
		}
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "privacy"); got != 3 {
		t.Errorf("nobids{privacy} = %v, want 3", got)
	}
}

// TestPrivacyGPPEndToEnd: a bid request whose US national section opts
// out gets nbr 505; without the opt-out, a bid.
func TestPrivacyGPPEndToEnd(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.NBRBody = true })
	fx := privacytest.GPPFixtures(t)
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
