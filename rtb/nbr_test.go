package rtb

import (
	"regexp"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb3"
)

func TestNoBidReasons(t *testing.T) {
	label := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]NoBidReason{}
	all := NoBidReasons()
	if len(all) != 29 {
		t.Fatalf("%d reasons, want 18 OpenRTB + 11 rtbd", len(all))
	}
	for i, r := range all {
		s := r.String()
		if !label.MatchString(s) || s == "other" {
			t.Errorf("%d: bad label %q", r, s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("%d and %d share label %q", prev, r, s)
		}
		seen[s] = r
		if i > 0 && all[i-1] >= r {
			t.Errorf("not ascending at %d", r)
		}
		if r > 17 && r < 500 {
			t.Errorf("%d: rtbd codes belong in the 500+ range", r)
		}
	}
	for _, r := range []NoBidReason{18, 499, 511, -1, 1 << 30} {
		if r.String() != "other" {
			t.Errorf("%d: %q, want other", r, r.String())
		}
	}
	// Same numbers as the OpenRTB 3 list in prebid/openrtb.
	for r, want := range map[NoBidReason]openrtb3.NoBidReason{
		NoBidInvalidRequest: openrtb3.NoBidInvalidRequest, NoBidCloudProxyIP: openrtb3.NoBidProxy,
		NoBidDailyReaderCap: openrtb3.NoBidDailyUserCap, NoBidAdsTxtViolation: openrtb3.NoBidAuthorizationViolation,
		NoBidBlockedSupplyChainNode: openrtb3.NoBidBlockedSupplyChainNode,
	} {
		if int64(r) != int64(want) {
			t.Errorf("%s = %d, openrtb3 says %d", r, r, want)
		}
	}
	if NoBidDeadline.String() != "deadline" || NoBidInvalidRequest.String() != "invalid_request" {
		t.Error("label spot check")
	}
}
