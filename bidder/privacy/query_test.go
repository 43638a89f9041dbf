package privacy

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/privacy/privacytest"
)

// TestQueryPrivacy: the query form of the signals reaches the same
// decision as a bid request's.
func TestQueryPrivacy(t *testing.T) {
	consentAll := privacytest.TCF2([]int{1, 2, 3, 4}, []int{42}, 42, 0, 0)
	consentNone := privacytest.TCF2([]int{1}, []int{42}, 42, 0, 0)
	for _, tc := range []struct {
		query string
		want  Decision
	}{
		{"", Allow},
		{"gdpr=0", Allow},
		{"gdpr=1", TCFNoConsent},
		{"gdpr=1&gdpr_consent=" + consentAll, Allow},
		{"gdpr=1&gdpr_consent=" + consentNone, TCFPurposes},
		{"gdpr=1&gdpr_consent=garbage", TCFBadConsent},
		{"us_privacy=1YYN", USPOptOut},
		// GPP section 2 listed: GDPR applies, and its TC string consents to nothing.
		{"us_privacy=1YNN&gpp=DBABMA~CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA&gpp_sid=2", TCFPurposes},
		{"gpp=DBACNY~CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA~1YNN&gpp_sid=6", Allow},
		{"gpp=DBACNY~CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA~1YNN&gpp_sid=2,6", TCFPurposes},
	} {
		var args fasthttp.Args
		args.Parse(tc.query)
		sig := FromQuery(&args)
		if got := sig.Decide(42); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.query, got, tc.want)
		}
	}
}
