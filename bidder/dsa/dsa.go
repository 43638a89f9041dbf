// Package dsa decides what a bid says under the EU Digital Services Act,
// as IAB Tech Lab's DSA transparency extension carries it: the request's
// regs.ext.dsa (dsarequired, pubrender, datatopub) and a campaign's
// setting (dsa: {behalf, paid}) give, per campaign and imp, either a
// refusal or the bid's ext.dsa (behalf, paid, transparency, adrender) and
// whether the creative renders the notice itself.
//
// The rules:
//   - no regs.ext.dsa: nothing is written;
//   - dsarequired 2 or 3 (bids without ext.dsa are dropped) and a campaign
//     without dsa: refused (NoCampaignDSA);
//   - pubrender 0 (the publisher cannot render the notice): the creative
//     renders behalf and paid in its advertiser label and adrender is 1;
//     a format that cannot (video; a native request without a sponsored
//     data asset long enough) is refused when dsarequired is 2 or 3, and
//     bids without ext.dsa otherwise (adrender 0 beside pubrender 0 makes
//     Prebid Server drop the bid);
//   - pubrender 2 (the publisher will render): adrender 0;
//   - pubrender 1 (either): the creative renders it when it can
//     (adrender 1), else adrender 0;
//   - transparency, when datatopub is not 0 and the bidder has a domain:
//     that domain, with dsaparams 1 (profiling) when the user's profile
//     chose the products, else 2 (basic advertising);
//   - every string at most MaxLen bytes (Prebid Server's len(): bytes):
//     campaigns and the domain are validated when loaded, and Decide
//     refuses a longer one (TooLong) rather than send a bid that would be
//     dropped.
package dsa

import "github.com/rtbd/rtbd/rtb"

// MaxLen is the most bytes behalf, paid and a transparency domain may
// have (Prebid Server drops a bid whose behalf or paid is longer).
const MaxLen = 100

// Values of dsarequired, pubrender and adrender.
const (
	RequiredNo             = 0 // not required
	RequiredSupported      = 1 // supported: bids with or without ext.dsa
	Required               = 2 // bids without ext.dsa are dropped
	RequiredOnlinePlatform = 3 // the same, the publisher is an online platform

	PubRenderCannot = 0
	PubRenderCould  = 1
	PubRenderWill   = 2

	AdRenderWont = 0
	AdRenderWill = 1

	ParamProfiling = 1 // dsaparams: the user's profile chose the ad
	ParamBasic     = 2 // dsaparams: basic advertising
)

// Setting is a campaign's dsa setting: on whose behalf the ad is shown
// and who paid for it. The zero value is no setting.
type Setting struct {
	Behalf, Paid string
}

// Set reports whether s is a setting (behalf or paid given).
func (s Setting) Set() bool { return s.Behalf != "" || s.Paid != "" }

// Reason is why a campaign is refused: the reason label of
// rtbd_bidder_dsa_refusals_total.
type Reason uint8

// Reasons.
const (
	OK            Reason = iota
	NoCampaignDSA        // dsarequired 2 or 3 and the campaign has no dsa setting
	CannotRender         // pubrender 0, dsarequired 2 or 3, and the format cannot render the notice
	TooLong              // behalf, paid or the transparency domain over MaxLen bytes
	NumReasons
)

var reasonNames = [NumReasons]string{"ok", "no_campaign_dsa", "cannot_render", "too_long"}

// String is the metric label.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "other"
}

// Explain is the debug endpoint's sentence for a refusal.
func (r Reason) Explain() string {
	switch r {
	case NoCampaignDSA:
		return "dsa: regs.ext.dsa.dsarequired is 2 or 3 and the campaign has no dsa setting (behalf, paid)"
	case CannotRender:
		return "dsa: pubrender 0 (the publisher cannot render the notice) and this format cannot render it (video, or a native request without a sponsored data asset long enough)"
	case TooLong:
		return "dsa: behalf, paid or bidder.dsa_domain over 100 bytes"
	}
	return "dsa: ok"
}

// Decision is what Decide says of one campaign on one imp.
type Decision struct {
	// Reason is OK, or why the campaign may not bid.
	Reason Reason
	// Write: the bid carries ext.dsa (Ext).
	Write bool
	// Render: the creative shows behalf and paid in its advertiser label.
	Render bool
	// Ext is the bid's ext.dsa when Write.
	Ext rtb.BidDSA
}

// Decide decides for the request's regs.ext.dsa req, a campaign's setting
// s, a format that canRender the notice or not, the bidder's transparency
// domain (""; none) and whether the user's profile chose the products.
// It makes no allocation: Ext's strings are s's and domain.
func Decide(req *rtb.DSA, s Setting, canRender bool, domain string, profiled bool) Decision {
	if !req.Present {
		return Decision{}
	}
	required := req.Required == Required || req.Required == RequiredOnlinePlatform
	if !s.Set() {
		if required {
			return Decision{Reason: NoCampaignDSA}
		}
		return Decision{}
	}
	if len(s.Behalf) > MaxLen || len(s.Paid) > MaxLen || len(domain) > MaxLen {
		if required {
			return Decision{Reason: TooLong}
		}
		return Decision{} // a bid without ext.dsa is still welcome
	}
	d := Decision{Write: true, Ext: rtb.BidDSA{Behalf: s.Behalf, Paid: s.Paid}}
	switch req.PubRender {
	case PubRenderWill:
		d.Ext.AdRender = AdRenderWont
	case PubRenderCannot:
		if !canRender {
			if required {
				return Decision{Reason: CannotRender}
			}
			return Decision{}
		}
		d.Render, d.Ext.AdRender = true, AdRenderWill
	default:
		if canRender {
			d.Render, d.Ext.AdRender = true, AdRenderWill
		}
	}
	if domain != "" && req.DataToPub != 0 {
		d.Ext.Domain = domain
		d.Ext.Param = ParamBasic
		if profiled {
			d.Ext.Param = ParamProfiling
		}
	}
	return d
}
