package catalog

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// ClientCodec is the proto codec with a fast path for the one message a
// bidder decodes on its hot path, ProductMastersResponse: all of a
// response's strings share one allocation and its products one backing
// array (about 5 allocations per response instead of ~8 per product).
// Everything else goes to the standard proto codec. It speaks the proto
// wire format unchanged, under the name "proto".
type ClientCodec struct{ base encoding.CodecV2 }

// NewClientCodec returns the codec; use it with grpc.ForceCodecV2.
func NewClientCodec() ClientCodec { return ClientCodec{encoding.GetCodecV2("proto")} }

// Name is "proto": the content type on the wire does not change.
func (ClientCodec) Name() string { return "proto" }

// Marshal delegates to the proto codec.
func (c ClientCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

// Unmarshal decodes ProductMastersResponse itself and delegates the rest.
func (c ClientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*catalogpb.ProductMastersResponse); ok {
		var b []byte
		if len(data) == 1 {
			b = data[0].ReadOnlyData()
		} else {
			b = data.Materialize()
		}
		return DecodeResponse(b, r)
	}
	return c.base.Unmarshal(data, v)
}

var errWire = errors.New("catalog: malformed ProductMastersResponse")

// DecodeResponse decodes the protobuf encoding of a ProductMastersResponse
// into r (reset first). It accepts exactly what proto.Unmarshal accepts for
// this message, skipping unknown fields, and does not keep b.
func DecodeResponse(b []byte, r *catalogpb.ProductMastersResponse) error {
	r.Product1S, r.Product2S = nil, nil
	// Pass 1: count products per list and check framing.
	var n1, n2 int
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 || num > protowire.MaxValidNumber { // ConsumeTag checks only the lower bound
			return errWire
		}
		i += n
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			if num == 1 {
				n1++
			} else {
				n2++
			}
		}
		m := protowire.ConsumeFieldValue(num, typ, b[i:])
		if m < 0 {
			return errWire
		}
		i += m
	}
	if n1+n2 == 0 {
		return nil
	}
	s := string(b) // the one allocation every string of the response shares
	ps := make([]catalogpb.Product, n1+n2)
	if n1 > 0 {
		r.Product1S = make([]*catalogpb.Product, 0, n1)
	}
	if n2 > 0 {
		r.Product2S = make([]*catalogpb.Product, 0, n2)
	}
	k := 0
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		i += n
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b[i:])
			if err := decodeProduct(s, i+m-len(v), v, &ps[k]); err != nil {
				return err
			}
			if num == 1 {
				r.Product1S = append(r.Product1S, &ps[k])
			} else {
				r.Product2S = append(r.Product2S, &ps[k])
			}
			k++
			i += m
			continue
		}
		i += protowire.ConsumeFieldValue(num, typ, b[i:])
	}
	return nil
}

// decodeProduct decodes message bytes b, which start at offset off of s
// (s holds the same bytes as the whole frame), slicing strings from s.
func decodeProduct(s string, off int, b []byte, p *catalogpb.Product) error {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 || num > protowire.MaxValidNumber {
			return errWire
		}
		i += n
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b[i:])
			if m < 0 {
				return errWire
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
				return errWire
			}
			start := off + i + m - len(v)
			str := s[start : start+len(v)]
			i += m
			if isStringField(num) && !validUTF8String(str) {
				return fmt.Errorf("%w: field %d: invalid UTF-8", errWire, num)
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
				return errWire
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

// ErrInvalidUTF8 is AppendProduct's error for a string field that is not
// UTF-8 (proto.Marshal refuses such a message too).
var ErrInvalidUTF8 = errors.New("catalog: product string field is not valid UTF-8")

func protowireNumber(n int) protowire.Number { return protowire.Number(n) }

// appendBytesField appends field num (wire type bytes) holding v.
func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// productWireSizeHint is a capacity that fits p's encoding.
func productWireSizeHint(p *catalogpb.Product) int {
	return 15*11 + len(p.Title) + len(p.ImageUrl) + len(p.LandingUrl) + len(p.Currency) +
		len(p.Category) + len(p.Brand) + len(p.Description)
}

// AppendProduct appends the protobuf encoding of p to b: the bytes
// proto.Marshal produces (fields in number order, zero values omitted).
func AppendProduct(b []byte, p *catalogpb.Product) ([]byte, error) {
	varint := func(num protowire.Number, v uint64) {
		if v != 0 {
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
	}
	ok := true
	str := func(num protowire.Number, s string) {
		if s != "" {
			if ok && !validUTF8String(s) {
				ok = false
			}
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendString(b, s)
		}
	}
	varint(1, uint64(p.ProductId))
	varint(2, uint64(p.ProductGroupId))
	str(3, p.Title)
	str(4, p.ImageUrl)
	varint(5, uint64(int64(p.Width)))
	varint(6, uint64(int64(p.Height)))
	str(7, p.LandingUrl)
	varint(8, uint64(p.PriceMicros))
	str(9, p.Currency)
	str(10, p.Category)
	str(11, p.Brand)
	if p.InStock {
		varint(12, 1)
	}
	varint(13, uint64(p.UpdatedAt))
	varint(14, uint64(p.SalePriceMicros))
	str(15, p.Description)
	if !ok {
		return b, fmt.Errorf("%w: product %d/%d", ErrInvalidUTF8, p.ProductGroupId, p.ProductId)
	}
	return b, nil
}

// validUTF8String is utf8.ValidString with an ASCII fast path over 8 bytes
// at a time (product strings are mostly ASCII).
func validUTF8String(s string) bool {
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
