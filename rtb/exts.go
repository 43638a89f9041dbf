package rtb

import (
	"encoding/json"
	"strconv"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// Exts holds the members of a bid request's ext objects that the bidder
// reads, filled by DecodeRequestExts in the same pass that decodes the
// request (the raw ext objects stay in the openrtb2 types as well).
//
// Rules, the same for every member: a member is looked up by its exact key
// (escapes undone; no case folding, unlike the openrtb2 fields) and its
// first occurrence in its object wins, whatever its type; a member of the
// wrong JSON type is ignored (it reads as absent: the zero value), as is
// an ext that is not an object; it never makes the request invalid. Each
// group below is a function of the ext object that the openrtb2 type ends
// up holding (regs.ext for the Regs members, and so on): when the request
// has no such object, the group is zero.
//
// Ownership: strings point into the private copy of the body that the
// decoded request owns, or (escaped ones) into memory of their own. The
// caller may reuse an Exts for the next request (DecodeRequestExts resets
// it, keeping the backing arrays of its slices up to a bound); it must not
// be used concurrently.
type Exts struct {
	// regs.ext (OpenRTB 2.5 placement of the privacy signals, as Prebid
	// Server down-converts them).

	// GDPR is regs.ext.gdpr when HasGDPR.
	GDPR int64
	// HasGDPR: regs.ext.gdpr was an integer: a JSON number without
	// fraction or exponent, or a string holding one ("1", as some
	// exchanges send it; strconv.ParseInt's syntax).
	HasGDPR bool
	// USPrivacy is regs.ext.us_privacy.
	USPrivacy string
	// GPP is regs.ext.gpp, the GPP string.
	GPP string
	// GPPSID is regs.ext.gpp_sid as sent: the text of a string ("2,6"),
	// or the JSON text of any other value (an array: "[2,6]"). Its
	// section ids are its runs of digits.
	GPPSID string
	// DSA is regs.ext.dsa.
	DSA DSA

	// Consent is user.ext.consent, the TCF consent string.
	Consent string

	// SChain25 is source.ext.schain, the supply chain in its OpenRTB 2.5
	// place, decoded as encoding/json would decode it into the openrtb2
	// type (keys in any case, the last duplicate winning); zero when
	// absent or when it does not fit the type. (source.schain, the 2.6
	// place, is decoded into the openrtb2 request.)
	SChain25 openrtb2.SupplyChain

	// Currency is ext.prebid.currency.
	Currency CurrencyExt
}

// DSA is regs.ext.dsa (IAB Tech Lab DSA transparency extension).
type DSA struct {
	// Present: regs.ext.dsa was an object.
	Present bool
	// Required is dsarequired (0-3), PubRender pubrender (0-2), DataToPub
	// datatopub (0-2), as sent (integers; out of range values are the
	// reader's to reject).
	Required, PubRender, DataToPub int
	// Transparency holds the elements of transparency that are objects.
	Transparency []DSATransparency
}

// DSATransparency is one element of regs.ext.dsa.transparency: domain and
// the integers of dsaparams (elements of another type left out).
type DSATransparency struct {
	Domain string
	Params []int
}

// CurrencyExt is ext.prebid.currency: the conversion rates a request
// carries, as Prebid Server forwards them.
type CurrencyExt struct {
	// Present: ext.prebid.currency was there (any value).
	Present bool
	// NoPBSRates: usepbsrates was false (only the request's rates apply;
	// the default, true, lets the bidder's own rates fill the gaps).
	NoPBSRates bool
	// HasRates: rates was there (any value).
	HasRates bool
	// Rates are the rates of rates {"FROM":{"TO":rate}} (units of TO per
	// unit of FROM) that are JSON numbers within float64's range, in the
	// order sent; codes as sent (not checked).
	Rates []CurrencyRate
	// Invalid: rates held an entry that is left out of Rates: a FROM whose
	// value is not an object, or a rate that is not a number in range.
	Invalid bool
}

// CurrencyRate is one rate of ext.prebid.currency.rates.
type CurrencyRate struct {
	From, To string
	Rate     float64
}

// maxKeptExts bounds the backing arrays that Exts.reset keeps for reuse.
const maxKeptExts = 256

// Reset zeroes e, keeping the backing arrays of its slices when small.
func (e *Exts) Reset() {
	*e = Exts{
		DSA:      DSA{Transparency: keepTransparency(e.DSA.Transparency)},
		SChain25: openrtb2.SupplyChain{Nodes: keepNodes(e.SChain25.Nodes)},
		Currency: CurrencyExt{Rates: keep(e.Currency.Rates)},
	}
}

func (e *Exts) resetRegs() {
	t := keepTransparency(e.DSA.Transparency)
	e.GDPR, e.HasGDPR, e.USPrivacy, e.GPP, e.GPPSID = 0, false, "", "", ""
	e.DSA = DSA{Transparency: t}
}

func (e *Exts) resetUser() { e.Consent = "" }

func (e *Exts) resetSource() {
	e.SChain25 = openrtb2.SupplyChain{Nodes: keepNodes(e.SChain25.Nodes)}
}

func (e *Exts) resetRequest() {
	e.Currency = CurrencyExt{Rates: keep(e.Currency.Rates)}
}

// keep returns s emptied, or nil when its backing array is large. Only
// s[:len(s)] is cleared: the ext readers fill elements by growing the
// slice, so those beyond its length are zero.
func keep[T any](s []T) []T {
	if cap(s) > maxKeptExts {
		return nil
	}
	clear(s)
	return s[:0]
}

// keepTransparency is keep, keeping each element's Params array too.
func keepTransparency(s []DSATransparency) []DSATransparency {
	if cap(s) > maxKeptExts {
		return nil
	}
	for i := range s {
		s[i] = DSATransparency{Params: keep(s[i].Params)}
	}
	return s[:0]
}

// keepNodes is keep for supply chain nodes, which decSlice may leave beyond
// the length (a repeated "nodes" cuts the slice to the shorter array):
// the whole backing array is cleared.
func keepNodes(s []openrtb2.SupplyChainNode) []openrtb2.SupplyChainNode {
	if cap(s) > maxKeptExts {
		return nil
	}
	clear(s[:cap(s)])
	return s[:0]
}

// fixExts resets the groups of e whose ext object the decoded request
// does not hold (a "regs":null after a regs with an ext, say), so that
// each group is a function of the ext the request ends up with.
func fixExts(req *openrtb2.BidRequest, e *Exts) {
	if req.Regs == nil || req.Regs.Ext == nil {
		e.resetRegs()
	}
	if req.User == nil || req.User.Ext == nil {
		e.resetUser()
	}
	if req.Source == nil || req.Source.Ext == nil {
		e.resetSource()
	}
	if req.Ext == nil {
		e.resetRequest()
	}
}

// The ext decoders below are called by the generated code in place of
// d.raw for the ext fields listed in decgen's extHooks. Each keeps the raw
// value as d.raw does and, when the decoder fills an Exts, reads the
// members into it. Reading an ext must not change the bytes its raw value
// shows, so strings with escapes are unescaped into memory of their own
// while it runs (d.copyEsc).

// extBegin starts an ext value: it records where the raw value starts and
// reports whether its members are to be read (there is an Exts to fill
// and the value is an object, whose '{' it consumes).
func (d *decoder) extBegin() (start int, read bool) {
	d.ws()
	start = d.i
	if d.exts == nil || d.i >= len(d.buf) || d.buf[d.i] != '{' {
		d.skip()
		return start, false
	}
	d.i++
	d.enter()
	d.copyEsc = true
	return start, true
}

// extEnd ends an ext value begun at start: the raw value into *p.
func (d *decoder) extEnd(p *json.RawMessage, start int) bool {
	d.copyEsc = false
	if d.err == nil {
		*p = d.buf[start:d.i:d.i]
	}
	return true
}

// seen marks bit and reports whether it was marked before (a later
// duplicate of a member, which is skipped: the first one wins).
func seen(mask *uint32, bit uint32) bool {
	if *mask&bit != 0 {
		return true
	}
	*mask |= bit
	return false
}

// extRegs decodes regs.ext.
func (d *decoder) extRegs(p *json.RawMessage) bool {
	if d.exts != nil {
		d.exts.resetRegs()
	}
	start, read := d.extBegin()
	if read {
		e := d.exts
		var mask uint32
		for ok := d.first(); ok; ok = d.next() {
			switch string(d.key) {
			case "gdpr":
				if !seen(&mask, 1) {
					e.GDPR, e.HasGDPR = d.extInt()
					continue
				}
			case "us_privacy":
				if !seen(&mask, 2) {
					e.USPrivacy = d.extString()
					continue
				}
			case "gpp":
				if !seen(&mask, 4) {
					e.GPP = d.extString()
					continue
				}
			case "gpp_sid":
				if !seen(&mask, 8) {
					e.GPPSID = d.extText()
					continue
				}
			case "dsa":
				if !seen(&mask, 16) {
					d.extDSA(&e.DSA)
					continue
				}
			}
			d.skip()
		}
	}
	return d.extEnd(p, start)
}

// extUser decodes user.ext.
func (d *decoder) extUser(p *json.RawMessage) bool {
	if d.exts != nil {
		d.exts.resetUser()
	}
	start, read := d.extBegin()
	if read {
		var mask uint32
		for ok := d.first(); ok; ok = d.next() {
			if string(d.key) == "consent" && !seen(&mask, 1) {
				d.exts.Consent = d.extString()
				continue
			}
			d.skip()
		}
	}
	return d.extEnd(p, start)
}

// extSource decodes source.ext.
func (d *decoder) extSource(p *json.RawMessage) bool {
	if d.exts != nil {
		d.exts.resetSource()
	}
	start, read := d.extBegin()
	if read {
		var mask uint32
		for ok := d.first(); ok; ok = d.next() {
			if string(d.key) == "schain" && !seen(&mask, 1) {
				d.extSChain(&d.exts.SChain25)
				continue
			}
			d.skip()
		}
	}
	return d.extEnd(p, start)
}

// extRequest decodes the request's ext.
func (d *decoder) extRequest(p *json.RawMessage) bool {
	if d.exts != nil {
		d.exts.resetRequest()
	}
	start, read := d.extBegin()
	if read {
		var mask uint32
		for ok := d.first(); ok; ok = d.next() {
			if string(d.key) == "prebid" && !seen(&mask, 1) {
				d.extPrebid(&d.exts.Currency)
				continue
			}
			d.skip()
		}
	}
	return d.extEnd(p, start)
}

// extObject consumes the '{' of an object value, or skips a value of
// another type and returns false.
func (d *decoder) extObject() bool {
	if d.ws() == '{' {
		d.i++
		d.enter()
		return true
	}
	d.skip()
	return false
}

// extPrebid decodes ext.prebid, of which only currency is read.
func (d *decoder) extPrebid(c *CurrencyExt) {
	if !d.extObject() {
		return
	}
	var mask uint32
	for ok := d.first(); ok; ok = d.next() {
		if string(d.key) == "currency" && !seen(&mask, 1) {
			d.extCurrency(c)
			continue
		}
		d.skip()
	}
}

// extCurrency decodes ext.prebid.currency.
func (d *decoder) extCurrency(c *CurrencyExt) {
	c.Present = true
	if !d.extObject() {
		return
	}
	var mask uint32
	for ok := d.first(); ok; ok = d.next() {
		switch string(d.key) {
		case "usepbsrates":
			if !seen(&mask, 1) {
				if d.ws() == 'f' {
					d.literal("false")
					c.NoPBSRates = true
				} else {
					d.skip()
				}
				continue
			}
		case "rates":
			if !seen(&mask, 2) {
				c.HasRates = true
				d.extRates(c)
				continue
			}
		}
		d.skip()
	}
}

// extRates decodes ext.prebid.currency.rates: every member, in order.
func (d *decoder) extRates(c *CurrencyExt) {
	if !d.extObject() {
		return
	}
	for ok := d.first(); ok; ok = d.next() {
		from := d.extKey()
		if !d.extObject() {
			c.Invalid = true
			continue
		}
		for ok := d.first(); ok; ok = d.next() {
			to := d.extKey()
			var f float64
			if b := d.ws(); b != '-' && (b < '0' || b > '9') {
				d.skip()
			} else if d.float(&f) {
				if n := len(c.Rates); n < cap(c.Rates) {
					c.Rates = c.Rates[:n+1]
					c.Rates[n] = CurrencyRate{From: from, To: to, Rate: f}
				} else {
					c.Rates = append(c.Rates, CurrencyRate{From: from, To: to, Rate: f})
				}
				continue
			}
			c.Invalid = true
		}
	}
}

// extDSA decodes regs.ext.dsa.
func (d *decoder) extDSA(v *DSA) {
	if !d.extObject() {
		return
	}
	v.Present = true
	var mask uint32
	for ok := d.first(); ok; ok = d.next() {
		switch string(d.key) {
		case "dsarequired":
			if !seen(&mask, 1) {
				v.Required = d.extInteger()
				continue
			}
		case "pubrender":
			if !seen(&mask, 2) {
				v.PubRender = d.extInteger()
				continue
			}
		case "datatopub":
			if !seen(&mask, 4) {
				v.DataToPub = d.extInteger()
				continue
			}
		case "transparency":
			if !seen(&mask, 8) {
				d.extTransparency(v)
				continue
			}
		}
		d.skip()
	}
}

// extTransparency decodes regs.ext.dsa.transparency.
func (d *decoder) extTransparency(v *DSA) {
	if d.ws() != '[' {
		d.skip()
		return
	}
	d.i++
	d.enter()
	for ok := d.firstElem(); ok; ok = d.nextElem() {
		if d.ws() != '{' {
			d.skip()
			continue
		}
		d.i++
		d.enter()
		n := len(v.Transparency)
		if n < cap(v.Transparency) {
			v.Transparency = v.Transparency[:n+1]
		} else {
			v.Transparency = append(v.Transparency, DSATransparency{})
		}
		t := &v.Transparency[n]
		var mask uint32
		for ok := d.first(); ok; ok = d.next() {
			switch string(d.key) {
			case "domain":
				if !seen(&mask, 1) {
					t.Domain = d.extString()
					continue
				}
			case "dsaparams":
				if !seen(&mask, 2) {
					d.extInts(&t.Params)
					continue
				}
			}
			d.skip()
		}
	}
}

// extInts appends the integer elements of an array to *p (other elements
// and another type than an array are skipped).
func (d *decoder) extInts(p *[]int) {
	if d.ws() != '[' {
		d.skip()
		return
	}
	d.i++
	d.enter()
	for ok := d.firstElem(); ok; ok = d.nextElem() {
		if c := d.ws(); c != '-' && (c < '0' || c > '9') {
			d.skip()
			continue
		}
		if n, set, ok := d.integer(64); set && ok {
			*p = append(*p, int(n))
		}
	}
}

// firstElem starts the elements of an array whose '[' was consumed (and
// entered); false at ']' (or an error).
func (d *decoder) firstElem() bool {
	if d.err != nil {
		return false
	}
	if d.ws() == ']' {
		d.i++
		d.depth--
		return false
	}
	return d.count()
}

// nextElem moves to the next element; false at ']' (or an error).
func (d *decoder) nextElem() bool {
	if d.err != nil {
		return false
	}
	switch d.ws() {
	case ',':
		d.i++
		return d.count()
	case ']':
		d.i++
		d.depth--
		return false
	}
	d.fail(errSyntax)
	return false
}

// extSChain decodes source.ext.schain as encoding/json would into the
// openrtb2 type; on a value that does not fit it, *v is zero and the
// value skipped.
func (d *decoder) extSChain(v *openrtb2.SupplyChain) {
	d.ws()
	at, depth := d.i, d.depth
	if decSupplyChain(d, v) && d.err == nil {
		return
	}
	if _, ok := d.err.(*typeError); ok || d.err == nil {
		d.err = nil
		*v = openrtb2.SupplyChain{Nodes: keepNodes(v.Nodes)}
		d.i, d.depth = at, depth
		d.skip()
	}
}

// extKey is the current member key as a string (it points into the
// buffer, or into memory of its own when it had escapes).
func (d *decoder) extKey() string {
	if len(d.key) == 0 {
		return ""
	}
	return unsafe.String(&d.key[0], len(d.key))
}

// extString decodes a string member; "" for another type.
func (d *decoder) extString() string {
	if d.ws() != '"' {
		d.skip()
		return ""
	}
	s, ok := d.readString()
	if !ok || len(s) == 0 {
		return ""
	}
	return unsafe.String(&s[0], len(s))
}

// extText decodes a member as text: a string's content, or the JSON text
// of another value.
func (d *decoder) extText() string {
	if d.ws() == '"' {
		return d.extString()
	}
	start := d.i
	d.skip()
	if d.err != nil || d.i == start {
		return ""
	}
	return unsafe.String(&d.buf[start], d.i-start)
}

// extInt decodes an integer member: a JSON number without fraction or
// exponent, or a string holding an integer (strconv.ParseInt's syntax);
// ok is false for anything else.
func (d *decoder) extInt() (n int64, ok bool) {
	switch c := d.ws(); {
	case c == '"':
		s := d.extString()
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case c == '-' || (c >= '0' && c <= '9'):
		n, set, ok := d.integer(64)
		return n, set && ok
	}
	d.skip()
	return 0, false
}

// extInteger decodes a JSON integer member (0 for anything else).
func (d *decoder) extInteger() int {
	if c := d.ws(); c != '-' && (c < '0' || c > '9') {
		d.skip()
		return 0
	}
	n, set, ok := d.integer(64)
	if !set || !ok {
		return 0
	}
	return int(n)
}
