package privacy

import (
	"github.com/prebid/go-gdpr/consentconstants"
	"github.com/prebid/go-gdpr/vendorconsent"
)

// TCF is the GDPR policy: whether GDPR applies and the IAB TCF v2 consent
// string (user.consent, user.ext.consent, or a gdpr_consent query
// argument).
type TCF struct {
	// GDPR is 1 when GDPR applies, 0 when it does not, -1 unknown
	// (counted as not applying).
	GDPR    int8
	Consent string
}

// Decide returns Allow when GDPR does not apply, else the reading of the
// consent string (see checkConsent). vendorID 0 skips the vendor checks.
func (p TCF) Decide(vendorID uint16) Decision {
	if p.GDPR != 1 {
		return Allow
	}
	if p.Consent == "" {
		return TCFNoConsent
	}
	return checkConsent(p.Consent, vendorID)
}

// maxConsentLen bounds the TCF string parsed; a longer one counts as not
// parsing.
const maxConsentLen = 8192

// personalisedAdPurposes are the TCF v2 purposes a retargeting ad needs
// consent for: 1 store and/or access information on a device, 3 create a
// personalised ads profile, 4 select personalised ads.
var personalisedAdPurposes = [...]consentconstants.Purpose{1, 3, 4}

// pubRestrictions is implemented by go-gdpr's TCF v2 consent.
type pubRestrictions interface {
	CheckPubRestriction(purposeID uint8, restrictType uint8, vendor uint16) bool
}

// checkConsent checks a TCF consent string for personalised ads: consent
// for personalisedAdPurposes and, unless vendorID is 0, for the vendor,
// with no publisher restriction of type 0 on those purposes for it.
func checkConsent(consent string, vendorID uint16) (d Decision) {
	defer func() {
		if recover() != nil { // a parser bug must not take the bidder down
			d = TCFBadConsent
		}
	}()
	if len(consent) > maxConsentLen {
		return TCFBadConsent
	}
	vc, err := vendorconsent.ParseString(consent)
	if err != nil || vc == nil || vc.Version() != 2 {
		return TCFBadConsent
	}
	for _, p := range personalisedAdPurposes {
		if !vc.PurposeAllowed(p) {
			return TCFPurposes
		}
	}
	if vendorID == 0 {
		return Allow
	}
	if vendorID > vc.MaxVendorID() || !vc.VendorConsent(vendorID) {
		return TCFVendor
	}
	if pr, ok := vc.(pubRestrictions); ok {
		for _, p := range personalisedAdPurposes {
			// Restriction type 0: purpose flatly not allowed for the vendor.
			if pr.CheckPubRestriction(uint8(p), 0, vendorID) {
				return TCFPubRestricted
			}
		}
	}
	return Allow
}
