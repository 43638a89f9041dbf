package bidder

import (
	"strings"

	"github.com/prebid/go-gdpr/consentconstants"
	"github.com/prebid/go-gdpr/vendorconsent"
	"github.com/prebid/go-gpp/constants"
	"github.com/prebid/go-gpp/sections"
	"github.com/prebid/go-gpp/sections/uspca"
	"github.com/prebid/go-gpp/sections/uspco"
	"github.com/prebid/go-gpp/sections/uspct"
	"github.com/prebid/go-gpp/sections/uspnat"
	"github.com/prebid/go-gpp/sections/usput"
	"github.com/prebid/go-gpp/sections/uspva"
	"github.com/prebid/go-gpp/util"
	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/rtb"
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

	privacyBadGPP      = "regs.gpp does not parse as GPP, or a section regs.gpp_sid lists does not parse"
	privacyGPPSection  = "regs.gpp_sid lists a section rtbd does not read (it reads 2, 6 and 7-12)"
	privacyGPPOptOut   = "gpp: a US section opts out of sale, sharing or targeted advertising, or says its opt-out notice was not given"
	privacyGPC         = "gpp: a US section carries Gpc=1 (Global Privacy Control)"
	privacyGPPProvider = "gpp: a US section is in MSPA service provider mode"
	privacyGPPChild    = "gpp: a US section says the user is a known child (KnownChildSensitiveDataConsents)"
	privacyGPPConsent  = "gpp: a US section says personal data consent was not given (PersonalDataConsents=2)"
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
	// gpp is the IAB GPP string (regs.gpp, regs.ext.gpp; gpp= of a
	// query). The sections that apply are those listed in gppSIDs
	// (regs.gpp_sid) or, when that is nil, in gppSID: ids separated by
	// anything that is not a digit ("2,6" in a query, "[2,6]" in
	// regs.ext.gpp_sid).
	gpp, gppSID string
	gppSIDs     []int8
}

// listed reports whether GPP section id applies (is in gpp_sid).
func (s *privacySignals) listed(id int) bool {
	if s.gppSIDs != nil {
		for _, v := range s.gppSIDs {
			if int(v) == id {
				return true
			}
		}
		return false
	}
	n, digits := 0, false
	for i := 0; i <= len(s.gppSID); i++ {
		if i < len(s.gppSID) && s.gppSID[i] >= '0' && s.gppSID[i] <= '9' {
			if n < 1<<16 {
				n = n*10 + int(s.gppSID[i]-'0')
			}
			digits = true
			continue
		}
		if digits && n == id {
			return true
		}
		n, digits = 0, false
	}
	return false
}

// privacyDecision is the one privacy rule of rtbd: it returns privacyOK
// when the request may be personalised (a retargeting bid; reading,
// setting or storing rtbd's uid; recording a view; storing a match), else
// the reason (nbr 505 for a bid). vendorID 0 skips the vendor checks.
// Every signal present must allow it: where signals conflict, the most
// restrictive wins. It allocates only when it parses a consent string
// (GDPR traffic) or a GPP string (regs.gpp with a regs.gpp_sid).
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
	gdpr, gppConsent := s.gdpr, ""
	if s.gpp != "" && (len(s.gppSIDs) != 0 || (s.gppSIDs == nil && s.gppSID != "")) {
		why, tcf, consent := gppDecision(s)
		if why != privacyOK {
			return why
		}
		if tcf {
			gdpr, gppConsent = 1, consent
		}
	}
	if gdpr != 1 {
		return privacyOK
	}
	if gppConsent != "" {
		if why := checkConsent(gppConsent, vendorID); why != privacyOK || s.consent == "" || s.consent == gppConsent {
			return why
		}
	}
	if s.consent == "" {
		return privacyNoConsent
	}
	return checkConsent(s.consent, vendorID)
}

// maxGPPLen bounds the GPP string parsed (a TCF section with a long vendor
// list is a few KB); a longer one counts as not parsing. maxGPPHeader
// bounds its header (7 characters list sections 7 to 12) and
// maxGPPSections the sections.
const (
	maxGPPLen      = 16 << 10
	maxGPPHeader   = 32
	maxGPPSections = 32
)

// gppDecision applies the GPP sections of s.gpp that s lists (gpp_sid),
// parsed with github.com/prebid/go-gpp: the US sections (6 as a US
// Privacy string; 7 national, 8-12 the states) decide here. tcf reports
// that section 2 (TCF EU v2) is listed, so GDPR applies, and consent is
// its TCF string ("" when the GPP string does not carry it: user.consent
// then counts). A listed section that does not parse, or that rtbd does
// not read, is a no; a listed section the string does not carry adds
// nothing (beyond GDPR applying for section 2). Only listed sections are
// parsed, and the header not with gpp.Parse (see gppSectionIDs).
func gppDecision(s *privacySignals) (reason string, tcf bool, consent string) {
	defer func() {
		if recover() != nil { // a parser bug must not take the bidder down
			reason, tcf, consent = privacyBadGPP, false, ""
		}
	}()
	tcf = s.listed(int(constants.SectionTCFEU2))
	if len(s.gpp) > maxGPPLen {
		return privacyBadGPP, tcf, ""
	}
	header, rest, _ := strings.Cut(s.gpp, "~")
	var ids [maxGPPSections]int
	n, ok := gppSectionIDs(header, &ids)
	if !ok || strings.Count(rest, "~")+1 != n || rest == "" {
		return privacyBadGPP, tcf, ""
	}
	for i := 0; i < n; i++ {
		var sec string
		sec, rest, _ = strings.Cut(rest, "~")
		id := ids[i]
		if !s.listed(id) {
			continue
		}
		if id == int(constants.SectionTCFEU2) {
			if sec == "" {
				return privacyBadGPP, tcf, ""
			}
			consent = sec
			continue
		}
		if why := gppUSSection(id, sec); why != privacyOK {
			return why, tcf, ""
		}
	}
	return privacyOK, tcf, consent
}

// gppSectionIDs reads the section ids of a GPP header (type 3, version,
// Fibonacci range of ids) into ids, and their count; false when it does
// not parse or lists more than len(ids). It reads the bits with go-gpp's
// BitStream but decodes the range itself, as go-gpp's ReadFibonacciRange
// does, with two bounds go-gpp lacks: a Fibonacci integer of at most 20
// bits (go-gpp's costs time exponential in its length: a 12-character
// header took 11ms), and no more ids than len(ids) (gpp.Parse's loop over
// a range's ids does not end for one reaching 65535).
func gppSectionIDs(header string, ids *[maxGPPSections]int) (int, bool) {
	if len(header) > maxGPPHeader || len(header) < 2 || header[0] != 'D' { // 'D': the 6 bits of type 3
		return 0, false
	}
	bs, err := util.NewBitStreamFromBase64(header)
	if err != nil {
		return 0, false
	}
	bs.SetPosition(6)
	if _, err := bs.ReadByte6(); err != nil { // version
		return 0, false
	}
	entries, err := bs.ReadUInt12()
	if err != nil || entries == 0 || int(entries) > len(ids) {
		return 0, false
	}
	n, last := 0, 0
	for range entries {
		isRange, err := bs.ReadByte1()
		if err != nil {
			return 0, false
		}
		off, ok := readFibonacci(bs)
		if !ok {
			return 0, false
		}
		start := last + off
		end := start
		if isRange == 1 {
			if off, ok = readFibonacci(bs); !ok {
				return 0, false
			}
			end = start + off
		}
		if end-start >= len(ids)-n {
			return 0, false
		}
		for id := start; id <= end; id++ {
			ids[n] = id
			n++
		}
		last = end
	}
	return n, true
}

// fibonacci are the Fibonacci numbers F(0) to F(21).
var fibonacci = [...]int{0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584, 4181, 6765, 10946}

// readFibonacci reads one Fibonacci-coded integer (bit k adds F(k+1); "11"
// ends it) of at most 20 bits, as GPP headers code section id offsets.
func readFibonacci(bs *util.BitStream) (int, bool) {
	v, prev := 0, byte(0)
	for k := 1; k <= 20; k++ {
		b, err := bs.ReadByte1()
		if err != nil {
			return 0, false
		}
		if b == 1 && prev == 1 {
			return v, v > 0
		}
		if b == 1 {
			v += fibonacci[k+1]
		}
		prev = b
	}
	return 0, false
}

// gppUSSection decides a US GPP section: 6 (US Privacy, "1YNN"), 7
// (national) or 8-12 (California, Virginia, Colorado, Utah,
// Connecticut). Another id is one rtbd does not read: a no.
func gppUSSection(id int, sec string) string {
	var u usSignals
	switch constants.SectionID(id) {
	case constants.SectionUSPV1:
		if !validUSPrivacy(sec) {
			return privacyBadGPP
		}
		if usOptOut(sec) {
			return privacyUSOptOut
		}
		return privacyOK
	case constants.SectionUSPNAT:
		v, err := uspnat.NewUSPNAT(sec)
		if err != nil {
			return privacyBadGPP
		}
		c := v.CoreSegment
		u = usSignals{
			optOut:  [3]byte{c.SaleOptOut, c.SharingOptOut, c.TargetedAdvertisingOptOut},
			notice:  [3]byte{c.SaleOptOutNotice, c.SharingOptOutNotice, c.TargetedAdvertisingOptOutNotice},
			gpc:     v.GPCSegment.Gpc,
			spMode:  c.MspaServiceProviderMode,
			child:   c.KnownChildSensitiveDataConsents,
			consent: c.PersonalDataConsents,
		}
	case constants.SectionUSPCA:
		v, err := uspca.NewUSPCA(sec)
		if err != nil {
			return privacyBadGPP
		}
		c := v.CoreSegment
		u = usSignals{
			optOut:  [3]byte{c.SaleOptOut, c.SharingOptOut, 0},
			notice:  [3]byte{c.SaleOptOutNotice, c.SharingOptOutNotice, 0},
			gpc:     v.GPCSegment.Gpc,
			spMode:  c.MspaServiceProviderMode,
			child:   c.KnownChildSensitiveDataConsents,
			consent: c.PersonalDataConsents,
		}
	case constants.SectionUSPVA:
		v, err := uspva.NewUSPVA(sec)
		if err != nil {
			return privacyBadGPP
		}
		u = commonUS(v.CoreSegment, sections.CommonUSGPCSegment{})
	case constants.SectionUSPCO:
		v, err := uspco.NewUSPCO(sec)
		if err != nil {
			return privacyBadGPP
		}
		u = commonUS(v.CoreSegment, v.GPCSegment)
	case constants.SectionUSPUT:
		v, err := usput.NewUSPUT(sec)
		if err != nil {
			return privacyBadGPP
		}
		c := v.CoreSegment
		u = usSignals{
			optOut: [3]byte{c.SaleOptOut, 0, c.TargetedAdvertisingOptOut},
			notice: [3]byte{c.SaleOptOutNotice, 0, c.TargetedAdvertisingOptOutNotice},
			spMode: c.MspaServiceProviderMode,
			child:  []byte{c.KnownChildSensitiveDataConsents},
		}
	case constants.SectionUSPCT:
		v, err := uspct.NewUSPCT(sec)
		if err != nil {
			return privacyBadGPP
		}
		u = commonUS(v.CoreSegment, v.GPCSegment)
	default:
		return privacyGPPSection
	}
	return u.decide()
}

// usSignals are the fields of a US GPP section (7-12) that decide, 0
// where the section has no such field. Opt-outs and notices are indexed
// sale, sharing, targeted advertising; their values are GPP's: 0 not
// applicable, 1 yes (opted out; notice given), 2 no.
type usSignals struct {
	optOut, notice [3]byte
	gpc            bool
	spMode         byte   // MspaServiceProviderMode
	child          []byte // KnownChildSensitiveDataConsents
	consent        byte   // PersonalDataConsents
}

func commonUS(c sections.CommonUSCoreSegment, g sections.CommonUSGPCSegment) usSignals {
	return usSignals{
		optOut: [3]byte{c.SaleOptOut, 0, c.TargetedAdvertisingOptOut},
		notice: [3]byte{c.SaleOptOutNotice, 0, c.TargetedAdvertisingOptOutNotice},
		gpc:    g.Gpc,
		spMode: c.MspaServiceProviderMode,
		child:  c.KnownChildSensitiveDataConsents,
	}
}

// decide is Prebid's default MSPA reading of a US section: no
// personalisation on an opt-out (1) of sale, sharing or targeted
// advertising or a missing notice (2) of one, Gpc, service provider mode
// (1), any known-child field other than 0, or personal data consent
// refused (2).
func (u *usSignals) decide() string {
	for i := range u.optOut {
		if u.optOut[i] == 1 || u.notice[i] == 2 {
			return privacyGPPOptOut
		}
	}
	if u.gpc {
		return privacyGPC
	}
	if u.spMode == 1 {
		return privacyGPPProvider
	}
	for _, c := range u.child {
		if c != 0 {
			return privacyGPPChild
		}
	}
	if u.consent == 2 {
		return privacyGPPConsent
	}
	return privacyOK
}

// validUSPrivacy reports whether s is an IAB US Privacy string: version
// 1, then Y, N or - three times.
func validUSPrivacy(s string) bool {
	if len(s) != 4 || s[0] != '1' {
		return false
	}
	for _, c := range s[1:] {
		switch c {
		case 'Y', 'y', 'N', 'n', '-':
		default:
			return false
		}
	}
	return true
}

// privacyCheck returns privacyDecision for the signals of req and its
// ext members exts (decoded with it).
//
// Read: regs.coppa; regs.gdpr (2.6) or regs.ext.gdpr (2.5) with the TCF
// v2 string in user.consent (2.6) or user.ext.consent (2.5), parsed with
// github.com/prebid/go-gdpr; regs.us_privacy or regs.ext.us_privacy (an
// opt-out of sale, "1-Y-", is a no-bid); device.dnt and device.lmt;
// regs.gpp with regs.gpp_sid (2.6) or regs.ext.gpp with
// regs.ext.gpp_sid (2.5, as Prebid Server down-converts them). An ext
// member of the wrong type counts as absent (see rtb.Exts).
func privacyCheck(req *openrtb2.BidRequest, exts *rtb.Exts, vendorID uint16) string {
	s := privacySignals{gdpr: -1}
	if r := req.Regs; r != nil {
		s.coppa = r.COPPA == 1
		s.usPrivacy = r.USPrivacy
		if s.usPrivacy == "" && !s.coppa {
			s.usPrivacy = exts.USPrivacy
		}
		if r.GDPR != nil {
			s.gdpr = *r.GDPR
		} else if exts.HasGDPR {
			s.gdpr = 0
			if exts.GDPR == 1 {
				s.gdpr = 1
			}
		}
		s.gpp, s.gppSIDs = r.GPP, r.GPPSID
		if s.gpp == "" {
			if s.gpp = exts.GPP; s.gpp != "" {
				s.gppSID = exts.GPPSID
			}
		}
	}
	if d := req.Device; d != nil {
		s.limitTracking = (d.DNT != nil && *d.DNT == 1) || (d.Lmt != nil && *d.Lmt == 1)
	}
	if u := req.User; u != nil && (s.gdpr == 1 || s.gpp != "") {
		s.consent = u.Consent
		if s.consent == "" {
			s.consent = exts.Consent
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
