package rtb

import (
	"strconv"
	"testing"

	"github.com/prebid/openrtb/v20/openrtb3"
)

// TestLossReasons: every code of OpenRTB 2.6's list has a label of its own
// that maps back to the code; 500 and up are exchange_specific; anything
// else, a missing code and the unfilled macro are other.
func TestLossReasons(t *testing.T) {
	seen := map[string]bool{}
	for _, code := range []openrtb3.LossReason{openrtb3.LossWon, openrtb3.LossInternalError, openrtb3.LossExpired,
		openrtb3.LossInvalidResponse, openrtb3.LossInvalidDealID, openrtb3.LossInvalidAuctionID, openrtb3.LossInvalidAdvertiserDomain,
		openrtb3.LossMissingMarkup, openrtb3.LossMissingCreativeID, openrtb3.LossMissingBidPrice, openrtb3.LossMissingApproval,
		openrtb3.LossBelowAuctionFloor, openrtb3.LossBelowDealFloor, openrtb3.LossLostToHigherBid, openrtb3.LossLostToDealBid,
		openrtb3.LossSeatBlocked, openrtb3.LossCreativeFiltered, openrtb3.LossPendingProcessing, openrtb3.LossDisapproved,
		openrtb3.LossSizeNotAllowed, openrtb3.LossIncorrectFormat, openrtb3.LossAdvertiserExclusions, openrtb3.LossAppStoreIDExclusions,
		openrtb3.LossNotSecure, openrtb3.LossLanguageExclusions, openrtb3.LossCategoryExclusions, openrtb3.LossAttributeExclusions,
		openrtb3.LossAdTypeExclusions, openrtb3.LossAnimationTooLong, openrtb3.LossNotAllowedInDeal, openrtb3.LossInvalidSKAdNetwork,
		openrtb3.LossAppBundleExclusions} {
		r := ParseLossReason([]byte(strconv.FormatInt(int64(code), 10)))
		l := r.String()
		if r == LossOther || r == LossExchangeSpecific || seen[l] || r.Code() != int64(code) {
			t.Errorf("code %d: reason %d %q (code %d)", code, r, l, r.Code())
		}
		seen[l] = true
	}
	if len(seen)+2 != NumLossReasons {
		t.Errorf("%d labels for %d reasons", len(seen)+2, NumLossReasons)
	}
	if got := ParseLossReason([]byte("102")).String(); got != "lost_to_higher_bid" {
		t.Errorf("102: %q", got)
	}
	for _, s := range []string{"500", "501", "99999"} {
		if r := ParseLossReason([]byte(s)); r != LossExchangeSpecific || r.String() != "exchange_specific" {
			t.Errorf("%s: %q, want exchange_specific", s, r)
		}
	}
	for _, s := range []string{"", "11", "99", "105", "216", "499", "-1", "1.0", "${AUCTION_LOSS}", "1234567", " 1"} {
		if r := ParseLossReason([]byte(s)); r != LossOther || r.String() != "other" {
			t.Errorf("%q: %q, want other", s, r)
		}
	}
}
