package rtb

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/prebid/openrtb/v20/openrtb2"
)

// AppendResponse appends the JSON encoding of resp to dst and returns the
// extended buffer. It is hand-written for the three response types
// (BidResponse, SeatBid, Bid) and makes no allocation beyond growing dst.
//
// The output is byte for byte what encoding/json's Encoder produces with
// SetEscapeHTML(false), without the trailing newline: same field order,
// omitempty rules, number and string formatting (ad markup keeps its '<',
// '>' and '&'; invalid UTF-8 becomes U+FFFD), ext objects compacted. The
// tests hold it to that.
//
// Errors: ErrResponseFloat when a price is NaN or infinite, ErrResponseExt
// when an ext is not valid JSON. On error dst is returned with its original
// length. resp is only read.
func AppendResponse(dst []byte, resp *openrtb2.BidResponse) ([]byte, error) {
	return (&Encoder{}).AppendResponse(dst, resp)
}

// Encoder encodes bid responses as AppendResponse does. The zero Encoder is
// AppendResponse.
type Encoder struct {
	// SafeAdM, if set, reports whether a bid's adm is known to be
	// JSON-safe (see JSONSafe): it is then copied between the quotes as it
	// is, without the scan that escaping takes (9% of a 15-product bid's
	// CPU in-process: its adm is 4 KB of HTML). A wrong true writes
	// invalid JSON; the bidder answers true only for the HTML documents of
	// creative.AppendBanner, which guarantees it.
	SafeAdM func(b *openrtb2.Bid) bool
}

// AppendResponse is the package's AppendResponse, with e's options.
func (e *Encoder) AppendResponse(dst []byte, resp *openrtb2.BidResponse) ([]byte, error) {
	orig := len(dst)
	var err error
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, resp.ID)
	if len(resp.SeatBid) > 0 {
		dst = append(dst, `,"seatbid":[`...)
		for i := range resp.SeatBid {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = e.appendSeatBid(dst, &resp.SeatBid[i]); err != nil {
				return dst[:orig], err
			}
		}
		dst = append(dst, ']')
	}
	dst = appendStringField(dst, `,"bidid":`, resp.BidID)
	dst = appendStringField(dst, `,"cur":`, resp.Cur)
	dst = appendStringField(dst, `,"customdata":`, resp.CustomData)
	if resp.NBR != nil {
		dst = append(dst, `,"nbr":`...)
		dst = strconv.AppendInt(dst, int64(*resp.NBR), 10)
	}
	if dst, err = appendExt(dst, resp.Ext); err != nil {
		return dst[:orig], err
	}
	return append(dst, '}'), nil
}

func (e *Encoder) appendSeatBid(dst []byte, sb *openrtb2.SeatBid) ([]byte, error) {
	var err error
	dst = append(dst, `{"bid":`...)
	if sb.Bid == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range sb.Bid {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = e.appendBid(dst, &sb.Bid[i]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	dst = appendStringField(dst, `,"seat":`, sb.Seat)
	dst = appendIntField(dst, `,"group":`, sb.Group)
	if dst, err = appendExt(dst, sb.Ext); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

func (e *Encoder) appendBid(dst []byte, b *openrtb2.Bid) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, b.ID)
	dst = append(dst, `,"impid":`...)
	dst = appendString(dst, b.ImpID)
	dst = append(dst, `,"price":`...)
	var ok bool
	if dst, ok = appendFloat(dst, b.Price); !ok {
		return dst, ErrResponseFloat
	}
	dst = appendStringField(dst, `,"nurl":`, b.NURL)
	dst = appendStringField(dst, `,"burl":`, b.BURL)
	dst = appendStringField(dst, `,"lurl":`, b.LURL)
	if b.AdM != "" && e.SafeAdM != nil && e.SafeAdM(b) {
		dst = append(dst, `,"adm":"`...)
		dst = append(dst, b.AdM...)
		dst = append(dst, '"')
	} else {
		dst = appendStringField(dst, `,"adm":`, b.AdM)
	}
	dst = appendStringField(dst, `,"adid":`, b.AdID)
	dst = appendArrayField(dst, `,"adomain":`, b.ADomain, appendString)
	dst = appendStringField(dst, `,"bundle":`, b.Bundle)
	dst = appendStringField(dst, `,"iurl":`, b.IURL)
	dst = appendStringField(dst, `,"cid":`, b.CID)
	dst = appendStringField(dst, `,"crid":`, b.CrID)
	dst = appendStringField(dst, `,"tactic":`, b.Tactic)
	dst = appendIntField(dst, `,"cattax":`, b.CatTax)
	dst = appendArrayField(dst, `,"cat":`, b.Cat, appendString)
	dst = appendArrayField(dst, `,"attr":`, b.Attr, appendInt)
	dst = appendArrayField(dst, `,"apis":`, b.APIs, appendInt)
	dst = appendIntField(dst, `,"api":`, b.API)
	dst = appendIntField(dst, `,"protocol":`, b.Protocol)
	dst = appendIntField(dst, `,"qagmediarating":`, b.QAGMediaRating)
	dst = appendStringField(dst, `,"language":`, b.Language)
	dst = appendStringField(dst, `,"langb":`, b.LangB)
	dst = appendStringField(dst, `,"dealid":`, b.DealID)
	dst = appendIntField(dst, `,"w":`, b.W)
	dst = appendIntField(dst, `,"h":`, b.H)
	dst = appendIntField(dst, `,"wratio":`, b.WRatio)
	dst = appendIntField(dst, `,"hratio":`, b.HRatio)
	dst = appendIntField(dst, `,"exp":`, b.Exp)
	dst = appendIntField(dst, `,"dur":`, b.Dur)
	dst = appendIntField(dst, `,"mtype":`, b.MType)
	dst = appendIntField(dst, `,"slotinpod":`, b.SlotInPod)
	dst, err := appendExt(dst, b.Ext)
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// AppendNoBid appends the no-bid response {"id":"<id>","nbr":<nbr>} to dst,
// the same bytes as AppendResponse(&openrtb2.BidResponse{ID: id, NBR: &n}).
// id is escaped as a JSON string. It makes no allocation beyond growing dst.
func AppendNoBid(dst []byte, id string, nbr NoBidReason) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, id)
	dst = append(dst, `,"nbr":`...)
	dst = strconv.AppendInt(dst, int64(nbr), 10)
	return append(dst, '}')
}

type integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64
}

// appendIntField appends key and v unless v is 0 (omitempty).
func appendIntField[T integer](dst []byte, key string, v T) []byte {
	if v == 0 {
		return dst
	}
	dst = append(dst, key...)
	return strconv.AppendInt(dst, int64(v), 10)
}

// appendInt appends v in decimal.
func appendInt[T integer](dst []byte, v T) []byte { return strconv.AppendInt(dst, int64(v), 10) }

// appendStringField appends key and s unless s is empty (omitempty).
func appendStringField(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, key...)
	return appendString(dst, s)
}

// appendArrayField appends key and the array vs, each element by
// appendElem, unless vs is empty (omitempty).
func appendArrayField[T any](dst []byte, key string, vs []T, appendElem func([]byte, T) []byte) []byte {
	if len(vs) == 0 {
		return dst
	}
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendElem(dst, v)
	}
	return append(dst, ']')
}

// appendExt appends `,"ext":` and ext compacted, unless ext is empty.
func appendExt(dst []byte, ext []byte) ([]byte, error) {
	if len(ext) == 0 {
		return dst, nil
	}
	if msg, _ := checkJSON(ext, maxDepthCap, math.MaxInt, math.MaxInt); msg != "" {
		return dst, ErrResponseExt
	}
	dst = append(dst, `,"ext":`...)
	return appendCompact(dst, ext), nil
}

// appendCompact appends the valid JSON src without insignificant whitespace.
func appendCompact(dst, src []byte) []byte {
	inStr, esc := false, false
	start := 0
	for i, c := range src {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}

// appendFloat appends f as encoding/json does (ES6 number formatting). It
// reports false for NaN and infinities, which JSON cannot represent.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

const hexDigits = "0123456789abcdef"

// JSONSafe reports whether s needs no escaping in a JSON string as
// AppendResponse writes strings: valid UTF-8 without '"', '\', control
// characters, U+2028 or U+2029.
func JSONSafe(s string) bool {
	for i := 0; i < len(s); {
		if i = skipSafeString(s, i); i >= len(s) {
			return true
		}
		if s[i] < utf8.RuneSelf {
			return false
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 || c == '\u2028' || c == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// AppendStringHTML appends s as a JSON string that may be inlined into a
// page: escaped as AppendResponse escapes strings, and '<', '>' and '&' as \u003c,
// \u003e and \u0026 (encoding/json's default).
func AppendStringHTML(dst []byte, s string) []byte { return appendEscaped(dst, s, true) }

// appendString appends s as a JSON string, escaped as encoding/json does
// with HTML escaping off.
func appendString(dst []byte, s string) []byte { return appendEscaped(dst, s, false) }

// appendEscaped appends s as a JSON string, escaped as encoding/json does
// (HTML escaping only when html is set): '"', '\\' and control characters
// escaped, invalid UTF-8 replaced by \ufffd, U+2028 and U+2029 escaped.
func appendEscaped(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if !html {
			if i = skipSafeString(s, i); i >= len(s) {
				break
			}
		}
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!html || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 || c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			if c == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// BidDSA is a bid's ext.dsa, IAB Tech Lab's DSA transparency extension:
// on whose behalf the ad is shown, who paid for it, who decided on its
// personalisation and with what parameters, and whether the ad renders
// the notice itself.
type BidDSA struct {
	// Behalf and Paid are always written, even empty.
	Behalf, Paid string
	// Domain, when not "", is written as the one transparency entry, with
	// dsaparams [Param].
	Domain string
	Param  int
	// AdRender is 1 when the creative renders the notice, else 0; always
	// written.
	AdRender int
}

// AppendBidExtDSA appends a bid's ext holding only dsa, from d:
// {"dsa":{"behalf":..,"paid":..,"transparency":[{"domain":..,"dsaparams":[..]}],"adrender":..}},
// strings escaped as AppendResponse escapes them. It makes no allocation
// beyond growing dst; the result is valid JSON for Bid.Ext.
func AppendBidExtDSA(dst []byte, d *BidDSA) []byte {
	dst = append(dst, `{"dsa":{"behalf":`...)
	dst = appendString(dst, d.Behalf)
	dst = append(dst, `,"paid":`...)
	dst = appendString(dst, d.Paid)
	if d.Domain != "" {
		dst = append(dst, `,"transparency":[{"domain":`...)
		dst = appendString(dst, d.Domain)
		dst = append(dst, `,"dsaparams":[`...)
		dst = strconv.AppendInt(dst, int64(d.Param), 10)
		dst = append(dst, `]}]`...)
	}
	dst = append(dst, `,"adrender":`...)
	dst = strconv.AppendInt(dst, int64(d.AdRender), 10)
	return append(dst, `}}`...)
}
