package catalog

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/internal/productwire"
)

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
			if ok && !productwire.ValidUTF8(s) {
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
