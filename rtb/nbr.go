package rtb

// NoBidReason is an OpenRTB no-bid reason code, sent as BidResponse.nbr.
//
// Codes 0-17 are the OpenRTB 2.x list (2.5 and 2.6; the same values as the
// OpenRTB 3.0 NoBidReason list, github.com/prebid/openrtb/v20/openrtb3). Codes
// 500 and above are "exchange specific" in the spec; rtbd uses them for its own
// DSP-side reasons, which it counts in metrics and may send to exchanges that
// agreed to them:
//
//	500 no matching campaign        504 unsupported imp type
//	501 budget exhausted            505 privacy (COPPA, GDPR)
//	502 frequency capped            506 below floor
//	503 no products                 507 overloaded
//	                                508 deadline (tmax would be missed)
//	                                509 insecure (a secure imp and no https base)
//	                                510 dsa (regs.ext.dsa requires what no campaign can give)
type NoBidReason int

// OpenRTB 2.x / 2.6 no-bid reason codes.
const (
	NoBidUnknownError            NoBidReason = 0  // Unknown Error
	NoBidTechnicalError          NoBidReason = 1  // Technical Error
	NoBidInvalidRequest          NoBidReason = 2  // Invalid Request
	NoBidKnownWebSpider          NoBidReason = 3  // Known Web Spider
	NoBidSuspectedNonHuman       NoBidReason = 4  // Suspected Non-Human Traffic
	NoBidCloudProxyIP            NoBidReason = 5  // Cloud, Data Center, or Proxy IP
	NoBidUnsupportedDevice       NoBidReason = 6  // Unsupported Device
	NoBidBlockedPublisher        NoBidReason = 7  // Blocked Publisher or Site
	NoBidUnmatchedUser           NoBidReason = 8  // Unmatched User
	NoBidDailyReaderCap          NoBidReason = 9  // Daily Reader Cap Met
	NoBidDailyDomainCap          NoBidReason = 10 // Daily Domain Cap Met
	NoBidAdsTxtUnavailable       NoBidReason = 11 // Ads.txt Authorization Unavailable (2.6)
	NoBidAdsTxtViolation         NoBidReason = 12 // Ads.txt Authorization Violation (2.6)
	NoBidAdsCertUnavailable      NoBidReason = 13 // Ads.cert Authentication Unavailable (2.6)
	NoBidAdsCertViolation        NoBidReason = 14 // Ads.cert Authentication Violation (2.6)
	NoBidInsufficientAuctionTime NoBidReason = 15 // Insufficient Auction Time (2.6)
	NoBidIncompleteSupplyChain   NoBidReason = 16 // Incomplete SupplyChain (2.6)
	NoBidBlockedSupplyChainNode  NoBidReason = 17 // Blocked SupplyChain Node (2.6)
)

// rtbd's DSP-side no-bid reasons, in the exchange-specific range (500+).
const (
	NoBidNoMatchingCampaign NoBidReason = 500 // no active campaign targets this request
	NoBidBudgetExhausted    NoBidReason = 501 // matching campaigns are out of budget or paced out
	NoBidFrequencyCapped    NoBidReason = 502 // the user reached the frequency cap
	NoBidNoProducts         NoBidReason = 503 // no product to show (empty profile and no fallback)
	NoBidUnsupportedImpType NoBidReason = 504 // only video/audio imps and no template for them
	NoBidPrivacy            NoBidReason = 505 // COPPA, or GDPR without consent
	NoBidBelowFloor         NoBidReason = 506 // the best bid is below imp.bidfloor
	NoBidOverloaded         NoBidReason = 507 // load shedding
	NoBidDeadline           NoBidReason = 508 // the request's deadline (tmax) would be missed
	NoBidInsecure           NoBidReason = 509 // a secure imp (imp.secure=1) and no https base (bidder.secure_public_url)
	NoBidDSA                NoBidReason = 510 // regs.ext.dsa requires a DSA notice the matching campaigns cannot give
)

// String returns the metric label of r: a snake_case name from a fixed set,
// "other" for any code not defined above. It never allocates.
func (r NoBidReason) String() string {
	switch r {
	case NoBidUnknownError:
		return "unknown_error"
	case NoBidTechnicalError:
		return "technical_error"
	case NoBidInvalidRequest:
		return "invalid_request"
	case NoBidKnownWebSpider:
		return "known_web_spider"
	case NoBidSuspectedNonHuman:
		return "suspected_non_human"
	case NoBidCloudProxyIP:
		return "cloud_proxy_ip"
	case NoBidUnsupportedDevice:
		return "unsupported_device"
	case NoBidBlockedPublisher:
		return "blocked_publisher"
	case NoBidUnmatchedUser:
		return "unmatched_user"
	case NoBidDailyReaderCap:
		return "daily_reader_cap"
	case NoBidDailyDomainCap:
		return "daily_domain_cap"
	case NoBidAdsTxtUnavailable:
		return "ads_txt_unavailable"
	case NoBidAdsTxtViolation:
		return "ads_txt_violation"
	case NoBidAdsCertUnavailable:
		return "ads_cert_unavailable"
	case NoBidAdsCertViolation:
		return "ads_cert_violation"
	case NoBidInsufficientAuctionTime:
		return "insufficient_auction_time"
	case NoBidIncompleteSupplyChain:
		return "incomplete_supply_chain"
	case NoBidBlockedSupplyChainNode:
		return "blocked_supply_chain_node"
	case NoBidNoMatchingCampaign:
		return "no_matching_campaign"
	case NoBidBudgetExhausted:
		return "budget_exhausted"
	case NoBidFrequencyCapped:
		return "frequency_capped"
	case NoBidNoProducts:
		return "no_products"
	case NoBidUnsupportedImpType:
		return "unsupported_imp_type"
	case NoBidPrivacy:
		return "privacy"
	case NoBidBelowFloor:
		return "below_floor"
	case NoBidOverloaded:
		return "overloaded"
	case NoBidDeadline:
		return "deadline"
	case NoBidInsecure:
		return "insecure"
	case NoBidDSA:
		return "dsa"
	}
	return "other"
}

// NoBidReasons returns every code defined in this package, in ascending
// order, in a new slice: for pre-registering metric label values.
func NoBidReasons() []NoBidReason {
	return []NoBidReason{
		NoBidUnknownError, NoBidTechnicalError, NoBidInvalidRequest, NoBidKnownWebSpider,
		NoBidSuspectedNonHuman, NoBidCloudProxyIP, NoBidUnsupportedDevice, NoBidBlockedPublisher,
		NoBidUnmatchedUser, NoBidDailyReaderCap, NoBidDailyDomainCap, NoBidAdsTxtUnavailable,
		NoBidAdsTxtViolation, NoBidAdsCertUnavailable, NoBidAdsCertViolation,
		NoBidInsufficientAuctionTime, NoBidIncompleteSupplyChain, NoBidBlockedSupplyChainNode,
		NoBidNoMatchingCampaign, NoBidBudgetExhausted, NoBidFrequencyCapped, NoBidNoProducts,
		NoBidUnsupportedImpType, NoBidPrivacy, NoBidBelowFloor, NoBidOverloaded, NoBidDeadline, NoBidInsecure, NoBidDSA,
	}
}
