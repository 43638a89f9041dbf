package rtb

import "github.com/prebid/openrtb/v20/openrtb3"

// LossReason is the index of an OpenRTB 2.6 loss reason code (the value an
// exchange substitutes for ${AUCTION_LOSS} in a bid's lurl) in a fixed set
// of labels, usable as a metric label and as an array index: every code the
// specification lists (0..10, 100..104, 200..215, openrtb3.LossReason's
// constants) has its own, exchange-specific codes (500 and up) share
// LossExchangeSpecific, and anything else (unknown, missing, an unfilled
// macro) is LossOther.
type LossReason uint8

// LossOther is the reason of a code that is not one of the specification's
// (or no code at all); LossExchangeSpecific of a code of 500 and up.
const (
	LossOther LossReason = iota
	LossExchangeSpecific
	lossFirstCode // the first reason with a code of its own
)

// lossCodes are the specification's codes with their labels, in order.
var lossCodes = [...]struct {
	code  openrtb3.LossReason
	label string
}{
	{openrtb3.LossWon, "bid_won"},
	{openrtb3.LossInternalError, "internal_error"},
	{openrtb3.LossExpired, "impression_expired"},
	{openrtb3.LossInvalidResponse, "invalid_bid_response"},
	{openrtb3.LossInvalidDealID, "invalid_deal_id"},
	{openrtb3.LossInvalidAuctionID, "invalid_auction_id"},
	{openrtb3.LossInvalidAdvertiserDomain, "invalid_adomain"},
	{openrtb3.LossMissingMarkup, "missing_markup"},
	{openrtb3.LossMissingCreativeID, "missing_creative_id"},
	{openrtb3.LossMissingBidPrice, "missing_bid_price"},
	{openrtb3.LossMissingApproval, "missing_creative_approval"},
	{openrtb3.LossBelowAuctionFloor, "below_auction_floor"},
	{openrtb3.LossBelowDealFloor, "below_deal_floor"},
	{openrtb3.LossLostToHigherBid, "lost_to_higher_bid"},
	{openrtb3.LossLostToDealBid, "lost_to_deal_bid"},
	{openrtb3.LossSeatBlocked, "seat_blocked"},
	{openrtb3.LossCreativeFiltered, "creative_filtered"},
	{openrtb3.LossPendingProcessing, "creative_pending_processing"},
	{openrtb3.LossDisapproved, "creative_disapproved"},
	{openrtb3.LossSizeNotAllowed, "creative_size_not_allowed"},
	{openrtb3.LossIncorrectFormat, "creative_incorrect_format"},
	{openrtb3.LossAdvertiserExclusions, "creative_advertiser_exclusions"},
	{openrtb3.LossAppStoreIDExclusions, "creative_app_store_id_exclusions"},
	{openrtb3.LossNotSecure, "creative_not_secure"},
	{openrtb3.LossLanguageExclusions, "creative_language_exclusions"},
	{openrtb3.LossCategoryExclusions, "creative_category_exclusions"},
	{openrtb3.LossAttributeExclusions, "creative_attribute_exclusions"},
	{openrtb3.LossAdTypeExclusions, "creative_ad_type_exclusions"},
	{openrtb3.LossAnimationTooLong, "creative_animation_too_long"},
	{openrtb3.LossNotAllowedInDeal, "creative_not_allowed_in_deal"},
	{openrtb3.LossInvalidSKAdNetwork, "creative_invalid_skadnetwork"},
	{openrtb3.LossAppBundleExclusions, "creative_app_bundle_exclusions"},
}

// NumLossReasons is the number of LossReason values.
const NumLossReasons = int(lossFirstCode) + len(lossCodes)

// LossReasonOf maps a loss reason code to its LossReason.
func LossReasonOf(code int64) LossReason {
	if code >= 500 {
		return LossExchangeSpecific
	}
	for i := range lossCodes {
		if int64(lossCodes[i].code) == code {
			return lossFirstCode + LossReason(i)
		}
	}
	return LossOther
}

// ParseLossReason maps the r parameter of a loss notice (the exchange's
// ${AUCTION_LOSS}: a decimal code) to its LossReason: LossOther when it is
// missing, not a number or still the literal macro.
func ParseLossReason(s []byte) LossReason {
	if len(s) == 0 || len(s) > 6 {
		return LossOther
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return LossOther
		}
		n = n*10 + int64(c-'0')
	}
	return LossReasonOf(n)
}

// String returns the reason's label ("lost_to_higher_bid", "other",
// "exchange_specific", ...): a fixed set.
func (r LossReason) String() string {
	switch {
	case r == LossOther:
		return "other"
	case r == LossExchangeSpecific:
		return "exchange_specific"
	case int(r) < NumLossReasons:
		return lossCodes[r-lossFirstCode].label
	}
	return "other"
}

// Code returns the reason's OpenRTB code, or -1 for LossOther and
// LossExchangeSpecific (which stand for many or none).
func (r LossReason) Code() int64 {
	if r < lossFirstCode || int(r) >= NumLossReasons {
		return -1
	}
	return int64(lossCodes[r-lossFirstCode].code)
}
