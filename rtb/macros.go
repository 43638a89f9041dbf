package rtb

import (
	"encoding/base64"
	"strings"
	"unsafe"
)

// MacroValues holds the values of the OpenRTB 2.6 substitution macros
// (section 4.4) for ExpandMacros. Each value is inserted verbatim: the
// caller escapes it for its context (URL, HTML) if needed; ids and prices
// normally need no escaping.
type MacroValues struct {
	AuctionID string // ${AUCTION_ID}: BidRequest.id
	BidID     string // ${AUCTION_BID_ID}: BidResponse.bidid
	ImpID     string // ${AUCTION_IMP_ID}: imp.id
	SeatID    string // ${AUCTION_SEAT_ID}: seatbid.seat
	AdID      string // ${AUCTION_AD_ID}: bid.adid
	// Price is ${AUCTION_PRICE}, the clearing price as the exchange renders
	// it: a decimal in the bid's currency and units (see money.Append) or an
	// encrypted token (see EncryptPrice).
	Price    string
	Currency string // ${AUCTION_CURRENCY}
	MBR      string // ${AUCTION_MBR}: market bid ratio, clearing price / bid price
	Loss     string // ${AUCTION_LOSS}: loss reason code
	MinToWin string // ${AUCTION_MIN_TO_WIN}: minimum bid that would have won

	// KeepEmpty leaves a macro whose value is "" as it is instead of
	// replacing it with "", so that a bidder can fill in the ids it knows
	// and leave ${AUCTION_PRICE} for the exchange.
	KeepEmpty bool
	// B64 encodes the values of the ${NAME:B64} forms. nil means
	// base64.RawURLEncoding (RFC 4648 section 5, no padding), which needs no
	// escaping in a URL; the spec leaves the exact alphabet to the parties.
	B64 *base64.Encoding
}

// ExpandMacros appends tmpl to dst with each known macro replaced by its
// value from m: ${AUCTION_ID}, ${AUCTION_BID_ID}, ${AUCTION_IMP_ID},
// ${AUCTION_SEAT_ID}, ${AUCTION_AD_ID}, ${AUCTION_PRICE},
// ${AUCTION_CURRENCY}, ${AUCTION_MBR}, ${AUCTION_LOSS}, ${AUCTION_MIN_TO_WIN},
// and each of them with the ":B64" suffix (${AUCTION_PRICE:B64}), which
// inserts the base64 of the value. Unknown macros (${AUCTION_MULTIPLIER},
// ${FOO}, ${AUCTION_PRICE:X}) and unterminated "${" are copied unchanged.
// Macro names are case-sensitive, as exchanges treat them. A nil m expands
// nothing. It makes no allocation beyond growing dst.
func ExpandMacros(dst []byte, tmpl string, m *MacroValues) []byte {
	for {
		i := strings.Index(tmpl, "${")
		if i < 0 || m == nil {
			return append(dst, tmpl...)
		}
		dst = append(dst, tmpl[:i]...)
		tmpl = tmpl[i:]
		end := strings.IndexByte(tmpl, '}')
		if end < 0 {
			return append(dst, tmpl...)
		}
		name := tmpl[2:end]
		b64 := false
		if base, ok := strings.CutSuffix(name, ":B64"); ok {
			name, b64 = base, true
		}
		val, known := m.lookup(name)
		if !known || (val == "" && m.KeepEmpty) {
			// Copy "$" only: a macro may start inside this one ("${${AUCTION_ID}").
			dst = append(dst, '$')
			tmpl = tmpl[1:]
			continue
		}
		if b64 {
			enc := m.B64
			if enc == nil {
				enc = base64.RawURLEncoding
			}
			// AppendEncode only reads its source: no copy of val needed.
			dst = enc.AppendEncode(dst, unsafe.Slice(unsafe.StringData(val), len(val)))
		} else {
			dst = append(dst, val...)
		}
		tmpl = tmpl[end+1:]
	}
}

func (m *MacroValues) lookup(name string) (string, bool) {
	switch name {
	case "AUCTION_ID":
		return m.AuctionID, true
	case "AUCTION_BID_ID":
		return m.BidID, true
	case "AUCTION_IMP_ID":
		return m.ImpID, true
	case "AUCTION_SEAT_ID":
		return m.SeatID, true
	case "AUCTION_AD_ID":
		return m.AdID, true
	case "AUCTION_PRICE":
		return m.Price, true
	case "AUCTION_CURRENCY":
		return m.Currency, true
	case "AUCTION_MBR":
		return m.MBR, true
	case "AUCTION_LOSS":
		return m.Loss, true
	case "AUCTION_MIN_TO_WIN":
		return m.MinToWin, true
	}
	return "", false
}
