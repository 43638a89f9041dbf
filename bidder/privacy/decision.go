package privacy

// Decision is the answer of the privacy policies to one request: Allow,
// or why the request may not be personalised. The zero value is Allow.
type Decision uint8

// The decisions. Each but Allow names the policy that refused.
const (
	Allow Decision = iota
	COPPAChildDirected
	TCFNoConsent
	TCFBadConsent
	TCFPurposes
	TCFVendor
	TCFPubRestricted
	USPOptOut
	LMTLimited
	GPPBad
	GPPUnreadSection
	GPPOptOut
	GPPGPC
	GPPServiceProvider
	GPPChild
	GPPNoConsent
	numDecisions
)

// reasons are the texts of the decisions (the debug endpoint's privacy
// field; nbr 505 on the wire).
var reasons = [numDecisions]string{
	Allow:              "",
	COPPAChildDirected: "regs.coppa=1: no personalised (retargeting) ads for child-directed traffic",
	TCFNoConsent:       "gdpr=1 without a consent string",
	TCFBadConsent:      "gdpr=1 and the consent string does not parse as TCF v2",
	TCFPurposes:        "gdpr=1 and no consent for purposes 1, 3 and 4 (store/access, personalised ads profile and selection)",
	TCFVendor:          "gdpr=1 and no consent for rtbd's vendor id (bidder.gdpr_vendor_id)",
	TCFPubRestricted:   "gdpr=1 and a publisher restriction forbids rtbd's purposes",
	USPOptOut:          "us_privacy: the user opted out of sale (CCPA)",
	LMTLimited:         "device.dnt=1 or device.lmt=1: the user limits ad tracking",
	GPPBad:             "regs.gpp does not parse as GPP, or a section regs.gpp_sid lists does not parse",
	GPPUnreadSection:   "regs.gpp_sid lists a section rtbd does not read (it reads 2, 6 and 7-12)",
	GPPOptOut:          "gpp: a US section opts out of sale, sharing or targeted advertising, or says its opt-out notice was not given",
	GPPGPC:             "gpp: a US section carries Gpc=1 (Global Privacy Control)",
	GPPServiceProvider: "gpp: a US section is in MSPA service provider mode",
	GPPChild:           "gpp: a US section says the user is a known child (KnownChildSensitiveDataConsents)",
	GPPNoConsent:       "gpp: a US section says personal data consent was not given (PersonalDataConsents=2)",
}

// Allowed reports whether the request may be personalised.
func (d Decision) Allowed() bool { return d == Allow }

// String returns the reason of a refusal, "" for Allow.
func (d Decision) String() string {
	if d < numDecisions {
		return reasons[d]
	}
	return "unknown privacy decision"
}
