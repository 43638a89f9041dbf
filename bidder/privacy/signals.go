package privacy

import (
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/rtb"
)

// Signals are the privacy policies of one request: a bid request's
// (FromRequest) or the query of /event, /usersync and /match (FromQuery).
// Strings may alias the request. The zero value is "no signal" but for
// TCF.GDPR, which FromRequest and FromQuery set to -1 (unknown) when the
// request does not say.
type Signals struct {
	COPPA COPPA
	USP   USP
	LMT   LMT
	GPP   GPP
	TCF   TCF
}

// Decide applies the policies of s: COPPA, USP and LMT, then the GPP
// sections listed (section 2 makes GDPR apply with its TCF string), then
// TCF. It returns Allow when every signal present allows personalising,
// else the first refusal. vendorID is rtb's IAB vendor id
// (bidder.gdpr_vendor_id); 0 skips the vendor checks. When the GPP string
// and user.consent both carry a TCF string, both must consent.
func (s *Signals) Decide(vendorID uint16) Decision {
	if d := s.COPPA.Decide(); d != Allow {
		return d
	}
	if d := s.USP.Decide(); d != Allow {
		return d
	}
	if d := s.LMT.Decide(); d != Allow {
		return d
	}
	tcf, gppConsent := s.TCF, ""
	if s.GPP.listsAny() {
		d, section2, consent := s.GPP.decide()
		if d != Allow {
			return d
		}
		if section2 {
			tcf.GDPR, gppConsent = 1, consent
		}
	}
	if tcf.GDPR != 1 {
		return Allow
	}
	if gppConsent != "" {
		if d := checkConsent(gppConsent, vendorID); d != Allow || tcf.Consent == "" || tcf.Consent == gppConsent {
			return d
		}
	}
	return tcf.Decide(vendorID)
}

// FromRequest reads the policies of req and its ext members exts (decoded
// with it).
//
// Read: regs.coppa; regs.gdpr (2.6) or regs.ext.gdpr (2.5) with the TCF
// v2 string in user.consent (2.6) or user.ext.consent (2.5);
// regs.us_privacy or regs.ext.us_privacy; device.dnt and device.lmt;
// regs.gpp with regs.gpp_sid (2.6) or regs.ext.gpp with regs.ext.gpp_sid
// (2.5, as Prebid Server down-converts them). An ext member of the wrong
// type counts as absent (see rtb.Exts).
func FromRequest(req *openrtb2.BidRequest, exts *rtb.Exts) Signals {
	s := Signals{TCF: TCF{GDPR: -1}}
	if r := req.Regs; r != nil {
		s.COPPA.ChildDirected = r.COPPA == 1
		s.USP.Consent = r.USPrivacy
		if s.USP.Consent == "" && !s.COPPA.ChildDirected {
			s.USP.Consent = exts.USPrivacy
		}
		if r.GDPR != nil {
			s.TCF.GDPR = *r.GDPR
		} else if exts.HasGDPR {
			s.TCF.GDPR = 0
			if exts.GDPR == 1 {
				s.TCF.GDPR = 1
			}
		}
		s.GPP.String, s.GPP.SIDs = r.GPP, r.GPPSID
		if s.GPP.String == "" {
			if s.GPP.String = exts.GPP; s.GPP.String != "" {
				s.GPP.SID = exts.GPPSID
			}
		}
	}
	if d := req.Device; d != nil {
		s.LMT.Limited = (d.DNT != nil && *d.DNT == 1) || (d.Lmt != nil && *d.Lmt == 1)
	}
	if u := req.User; u != nil && (s.TCF.GDPR == 1 || s.GPP.String != "") {
		s.TCF.Consent = u.Consent
		if s.TCF.Consent == "" {
			s.TCF.Consent = exts.Consent
		}
	}
	return s
}

// FromQuery reads the policies of a user-sync or pixel query: gdpr (0 or
// 1), gdpr_consent, us_privacy, gpp and gpp_sid (Prebid Server's
// user-sync macros). The strings alias args: s is valid while args is.
func FromQuery(args *fasthttp.Args) Signals {
	s := Signals{TCF: TCF{GDPR: -1}}
	switch string(args.Peek("gdpr")) {
	case "1":
		s.TCF.GDPR = 1
	case "0":
		s.TCF.GDPR = 0
	}
	s.TCF.Consent = alias(args.Peek("gdpr_consent"))
	s.USP.Consent = alias(args.Peek("us_privacy"))
	s.GPP.String = alias(args.Peek("gpp"))
	s.GPP.SID = alias(args.Peek("gpp_sid"))
	return s
}

// alias returns b as a string without copying.
func alias(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
