// Package productwire is the protobuf encoding of one catalogpb.Product
// that the catalog's hot cache (package catalog) and the remote client's
// codec (package catalog/remote) decode without proto's per-field
// allocations, and the UTF-8 check both sides apply to string fields, as
// proto.Marshal and proto.Unmarshal do.
package productwire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// ErrMalformed is Decode's error for bytes that are not a Product's
// protobuf encoding.
var ErrMalformed = errors.New("productwire: malformed Product encoding")

// Decode decodes the encoding of one Product, b,, which start at offset off of s
// (s holds the same bytes as the whole frame), slicing strings from s.
func Decode(s string, off int, b []byte, p *catalogpb.Product) error {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 || num > protowire.MaxValidNumber {
			return ErrMalformed
		}
		i += n
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b[i:])
			if m < 0 {
				return ErrMalformed
			}
			i += m
			switch num {
			case 1:
				p.ProductId = int64(v)
			case 2:
				p.ProductGroupId = int64(v)
			case 5:
				p.Width = int32(v)
			case 6:
				p.Height = int32(v)
			case 8:
				p.PriceMicros = int64(v)
			case 12:
				p.InStock = protowire.DecodeBool(v)
			case 13:
				p.UpdatedAt = int64(v)
			case 14:
				p.SalePriceMicros = int64(v)
			}
			// A field with another wire type than its own is an unknown
			// field to proto, and so skipped here too.
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b[i:])
			if m < 0 {
				return ErrMalformed
			}
			start := off + i + m - len(v)
			str := s[start : start+len(v)]
			i += m
			if isStringField(num) && !ValidUTF8(str) {
				return fmt.Errorf("%w: field %d: invalid UTF-8", ErrMalformed, num)
			}
			switch num { // other numbers: unknown or mistyped, skipped
			case 3:
				p.Title = str
			case 4:
				p.ImageUrl = str
			case 7:
				p.LandingUrl = str
			case 9:
				p.Currency = str
			case 10:
				p.Category = str
			case 11:
				p.Brand = str
			case 15:
				p.Description = str
			}
		default:
			m := protowire.ConsumeFieldValue(num, typ, b[i:])
			if m < 0 {
				return ErrMalformed
			}
			i += m
		}
	}
	return nil
}

func isStringField(num protowire.Number) bool {
	switch num {
	case 3, 4, 7, 9, 10, 11, 15:
		return true
	}
	return false
}

// ValidUTF8 is utf8.ValidString with an ASCII fast path over 8 bytes
// at a time (product strings are mostly ASCII).
func ValidUTF8(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if x&0x8080808080808080 != 0 {
			return utf8.ValidString(s[i:])
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return utf8.ValidString(s[i:])
		}
	}
	return true
}
