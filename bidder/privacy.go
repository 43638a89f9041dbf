package bidder

import (
	"github.com/prebid/go-gdpr/consentconstants"
	"github.com/prebid/go-gdpr/vendorconsent"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// Privacy decisions (the reason text of a privacy no-bid, for the debug
// endpoint; nbr 505 on the wire).
const (
	privacyOK            = ""
	privacyCOPPA         = "regs.coppa=1: no personalised (retargeting) ads for child-directed traffic"
	privacyNoConsent     = "gdpr=1 without a consent string"
	privacyBadConsent    = "gdpr=1 and the consent string does not parse as TCF v2"
	privacyPurposes      = "gdpr=1 and no consent for purposes 1, 3 and 4 (store/access, personalised ads profile and selection)"
	privacyVendor        = "gdpr=1 and no consent for rtbd's vendor id (bidder.gdpr_vendor_id)"
	privacyPubRestricted = "gdpr=1 and a publisher restriction forbids rtbd's purposes"
	privacyUSOptOut      = "us_privacy: the user opted out of sale (CCPA)"
	privacyDNT           = "device.dnt=1 or device.lmt=1: the user limits ad tracking"
)

// personalisedAdPurposes are the TCF v2 purposes a retargeting ad needs
// consent for: 1 store and/or access information on a device, 3 create a
// personalised ads profile, 4 select personalised ads.
var personalisedAdPurposes = [...]consentconstants.Purpose{1, 3, 4}

// privacyCheck returns privacyOK when a retargeting bid is allowed for req,
// else the reason (nbr 505). vendorID 0 skips the vendor checks.
//
// Supported: regs.coppa; regs.gdpr (2.6) or regs.ext.gdpr (2.5) with the
// TCF v2 string in user.consent (2.6) or user.ext.consent (2.5), parsed
// with github.com/prebid/go-gdpr; regs.us_privacy or regs.ext.us_privacy
// (an opt-out of sale, "1-Y-", is a no-bid); device.dnt and device.lmt.
// GDPR unknown (no gdpr field) counts as not applying. It allocates only
// when it parses a consent string (GDPR traffic).
func privacyCheck(req *openrtb2.BidRequest, vendorID uint16) string {
	var regsExt []byte
	if r := req.Regs; r != nil {
		if r.COPPA == 1 {
			return privacyCOPPA
		}
		regsExt = r.Ext
		if usOptOut(r.USPrivacy) || (r.USPrivacy == "" && usOptOut(extString(regsExt, "us_privacy"))) {
			return privacyUSOptOut
		}
	}
	if d := req.Device; d != nil && ((d.DNT != nil && *d.DNT == 1) || (d.Lmt != nil && *d.Lmt == 1)) {
		return privacyDNT
	}
	applies := false
	if r := req.Regs; r != nil {
		if r.GDPR != nil {
			applies = *r.GDPR == 1
		} else if v, ok := extInt(regsExt, "gdpr"); ok {
			applies = v == 1
		}
	}
	if !applies {
		return privacyOK
	}
	consent := ""
	if u := req.User; u != nil {
		consent = u.Consent
		if consent == "" {
			consent = extString(u.Ext, "consent")
		}
	}
	if consent == "" {
		return privacyNoConsent
	}
	return checkConsent(consent, vendorID)
}

// pubRestrictions is implemented by go-gdpr's TCF v2 consent.
type pubRestrictions interface {
	CheckPubRestriction(purposeID uint8, restrictType uint8, vendor uint16) bool
}

// checkConsent checks a TCF consent string for personalised ads.
func checkConsent(consent string, vendorID uint16) (reason string) {
	defer func() {
		if recover() != nil { // a parser bug must not take the bidder down
			reason = privacyBadConsent
		}
	}()
	if len(consent) > 8192 {
		return privacyBadConsent
	}
	vc, err := vendorconsent.ParseString(consent)
	if err != nil || vc == nil || vc.Version() != 2 {
		return privacyBadConsent
	}
	for _, p := range personalisedAdPurposes {
		if !vc.PurposeAllowed(p) {
			return privacyPurposes
		}
	}
	if vendorID == 0 {
		return privacyOK
	}
	if vendorID > vc.MaxVendorID() || !vc.VendorConsent(vendorID) {
		return privacyVendor
	}
	if pr, ok := vc.(pubRestrictions); ok {
		for _, p := range personalisedAdPurposes {
			// Restriction type 0: purpose flatly not allowed for the vendor.
			if pr.CheckPubRestriction(uint8(p), 0, vendorID) {
				return privacyPubRestricted
			}
		}
	}
	return privacyOK
}

// usOptOut reports whether an IAB US Privacy string ("1YNN") says the user
// opted out of sale (third character 'Y').
func usOptOut(s string) bool {
	return len(s) == 4 && s[0] == '1' && (s[2] == 'Y' || s[2] == 'y')
}
