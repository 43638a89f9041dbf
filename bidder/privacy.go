package bidder

import (
	"github.com/prebid/go-gdpr/consentconstants"
	"github.com/prebid/go-gdpr/vendorconsent"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"
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

// privacySignals are the privacy signals of one request: a bid request's
// (privacyCheck reads them) or the query of /event, /usersync and /match
// (querySignals). Strings may alias the request; the zero value is "no
// signal" (GDPR unknown counts as not applying).
type privacySignals struct {
	coppa bool
	// gdpr is 1 when GDPR applies, 0 when it does not, -1 unknown.
	gdpr      int8
	consent   string // TCF v2 string
	usPrivacy string // IAB US Privacy string ("1YNN")
	// limitTracking: device.dnt=1 or device.lmt=1.
	limitTracking bool
	// gpp and gppSID are the IAB GPP string and its applicable section ids
	// (regs.gpp, regs.gpp_sid; the gpp= and gpp_sid= of the user-sync
	// query). They are read but do not decide yet: the GPP rules join
	// privacyDecision, before the TCF and US Privacy rules.
	gpp, gppSID string
}

// privacyDecision is the one privacy rule of rtbd: it returns privacyOK
// when the request may be personalised (a retargeting bid; reading,
// setting or storing rtbd's uid; recording a view; storing a match), else
// the reason (nbr 505 for a bid). vendorID 0 skips the vendor checks. It
// allocates only when it parses a consent string (GDPR traffic).
func privacyDecision(s *privacySignals, vendorID uint16) string {
	if s.coppa {
		return privacyCOPPA
	}
	if usOptOut(s.usPrivacy) {
		return privacyUSOptOut
	}
	if s.limitTracking {
		return privacyDNT
	}
	// GPP (s.gpp with s.gppSID) is decided here, most restrictive first,
	// by the sections listed in gpp_sid.
	if s.gdpr != 1 {
		return privacyOK
	}
	if s.consent == "" {
		return privacyNoConsent
	}
	return checkConsent(s.consent, vendorID)
}

// privacyCheck returns privacyDecision for the signals of req.
//
// Read: regs.coppa; regs.gdpr (2.6) or regs.ext.gdpr (2.5) with the TCF
// v2 string in user.consent (2.6) or user.ext.consent (2.5), parsed with
// github.com/prebid/go-gdpr; regs.us_privacy or regs.ext.us_privacy (an
// opt-out of sale, "1-Y-", is a no-bid); device.dnt and device.lmt;
// regs.gpp and regs.gpp_sid.
func privacyCheck(req *openrtb2.BidRequest, vendorID uint16) string {
	s := privacySignals{gdpr: -1}
	if r := req.Regs; r != nil {
		s.coppa = r.COPPA == 1
		s.usPrivacy = r.USPrivacy
		if s.usPrivacy == "" && !s.coppa {
			s.usPrivacy = extString(r.Ext, "us_privacy")
		}
		if r.GDPR != nil {
			s.gdpr = *r.GDPR
		} else if v, ok := extInt(r.Ext, "gdpr"); ok {
			s.gdpr = 0
			if v == 1 {
				s.gdpr = 1
			}
		}
		s.gpp = r.GPP
	}
	if d := req.Device; d != nil {
		s.limitTracking = (d.DNT != nil && *d.DNT == 1) || (d.Lmt != nil && *d.Lmt == 1)
	}
	if u := req.User; u != nil && s.gdpr == 1 {
		s.consent = u.Consent
		if s.consent == "" {
			s.consent = extString(u.Ext, "consent")
		}
	}
	return privacyDecision(&s, vendorID)
}

// querySignals reads the privacy signals of a user-sync or pixel query:
// gdpr (0 or 1), gdpr_consent, us_privacy, gpp and gpp_sid (Prebid
// Server's user-sync macros). The strings alias args.
func querySignals(args *fasthttp.Args) privacySignals {
	s := privacySignals{gdpr: -1}
	switch string(args.Peek("gdpr")) {
	case "1":
		s.gdpr = 1
	case "0":
		s.gdpr = 0
	}
	s.consent = str(args.Peek("gdpr_consent"))
	s.usPrivacy = str(args.Peek("us_privacy"))
	s.gpp = str(args.Peek("gpp"))
	s.gppSID = str(args.Peek("gpp_sid"))
	return s
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

// queryAllowed is privacyDecision for the signals of a query (querySignals):
// whether /event, /usersync or /match may personalise.
func (b *Bidder) queryAllowed(args *fasthttp.Args) bool {
	sig := querySignals(args)
	return privacyDecision(&sig, b.opts.GDPRVendorID) == privacyOK
}
