package privacy

import (
	"strings"

	"github.com/prebid/go-gpp/constants"
	"github.com/prebid/go-gpp/sections"
	"github.com/prebid/go-gpp/sections/uspca"
	"github.com/prebid/go-gpp/sections/uspco"
	"github.com/prebid/go-gpp/sections/uspct"
	"github.com/prebid/go-gpp/sections/uspnat"
	"github.com/prebid/go-gpp/sections/usput"
	"github.com/prebid/go-gpp/sections/uspva"
	"github.com/prebid/go-gpp/util"
)

// GPP is the IAB Global Privacy Platform policy: the GPP string
// (regs.gpp, regs.ext.gpp; gpp= of a query) and the sections that apply:
// those listed in SIDs (regs.gpp_sid) or, when SIDs is nil, in SID: ids
// separated by anything that is not a digit ("2,6" in a query, "[2,6]" in
// regs.ext.gpp_sid). A GPP string with no section listed says nothing.
type GPP struct {
	String string
	SID    string
	SIDs   []int8
}

// listsAny reports whether p has a string and lists a section.
func (p *GPP) listsAny() bool {
	return p.String != "" && (len(p.SIDs) != 0 || (p.SIDs == nil && p.SID != ""))
}

// listed reports whether GPP section id applies (is in gpp_sid).
func (p *GPP) listed(id int) bool {
	if p.SIDs != nil {
		for _, v := range p.SIDs {
			if int(v) == id {
				return true
			}
		}
		return false
	}
	n, digits := 0, false
	for i := 0; i <= len(p.SID); i++ {
		if i < len(p.SID) && p.SID[i] >= '0' && p.SID[i] <= '9' {
			if n < 1<<16 {
				n = n*10 + int(p.SID[i]-'0')
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

// maxGPPLen bounds the GPP string parsed (a TCF section with a long vendor
// list is a few KB); a longer one counts as not parsing. maxGPPHeader
// bounds its header (7 characters list sections 7 to 12) and
// maxGPPSections the sections.
const (
	maxGPPLen      = 16 << 10
	maxGPPHeader   = 32
	maxGPPSections = 32
)

// decide applies the sections of p.String that p lists (gpp_sid),
// parsed with github.com/prebid/go-gpp: the US sections (6 as a US
// Privacy string; 7 national, 8-12 the states) decide here. tcf reports
// that section 2 (TCF EU v2) is listed, so GDPR applies, and consent is
// its TCF string ("" when the GPP string does not carry it: user.consent
// then counts). A listed section that does not parse, or that rtbd does
// not read, is a no; a listed section the string does not carry adds
// nothing (beyond GDPR applying for section 2). Only listed sections are
// parsed, and the header not with gpp.Parse (see gppSectionIDs).
func (p *GPP) decide() (d Decision, tcf bool, consent string) {
	defer func() {
		if recover() != nil { // a parser bug must not take the bidder down
			d, tcf, consent = GPPBad, false, ""
		}
	}()
	tcf = p.listed(int(constants.SectionTCFEU2))
	if len(p.String) > maxGPPLen {
		return GPPBad, tcf, ""
	}
	header, rest, _ := strings.Cut(p.String, "~")
	var ids [maxGPPSections]int
	n, ok := gppSectionIDs(header, &ids)
	if !ok || strings.Count(rest, "~")+1 != n || rest == "" {
		return GPPBad, tcf, ""
	}
	for i := 0; i < n; i++ {
		var sec string
		sec, rest, _ = strings.Cut(rest, "~")
		id := ids[i]
		if !p.listed(id) {
			continue
		}
		if id == int(constants.SectionTCFEU2) {
			if sec == "" {
				return GPPBad, tcf, ""
			}
			consent = sec
			continue
		}
		if why := gppUSSection(id, sec); why != Allow {
			return why, tcf, ""
		}
	}
	return Allow, tcf, consent
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
func gppUSSection(id int, sec string) Decision {
	var u usSignals
	switch constants.SectionID(id) {
	case constants.SectionUSPV1:
		if !validUSP(sec) {
			return GPPBad
		}
		if uspOptOut(sec) {
			return USPOptOut
		}
		return Allow
	case constants.SectionUSPNAT:
		v, err := uspnat.NewUSPNAT(sec)
		if err != nil {
			return GPPBad
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
			return GPPBad
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
			return GPPBad
		}
		u = commonUS(v.CoreSegment, sections.CommonUSGPCSegment{})
	case constants.SectionUSPCO:
		v, err := uspco.NewUSPCO(sec)
		if err != nil {
			return GPPBad
		}
		u = commonUS(v.CoreSegment, v.GPCSegment)
	case constants.SectionUSPUT:
		v, err := usput.NewUSPUT(sec)
		if err != nil {
			return GPPBad
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
			return GPPBad
		}
		u = commonUS(v.CoreSegment, v.GPCSegment)
	default:
		return GPPUnreadSection
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
func (u *usSignals) decide() Decision {
	for i := range u.optOut {
		if u.optOut[i] == 1 || u.notice[i] == 2 {
			return GPPOptOut
		}
	}
	if u.gpc {
		return GPPGPC
	}
	if u.spMode == 1 {
		return GPPServiceProvider
	}
	for _, c := range u.child {
		if c != 0 {
			return GPPChild
		}
	}
	if u.consent == 2 {
		return GPPNoConsent
	}
	return Allow
}
