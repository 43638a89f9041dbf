package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Value encoding, format 1:
//
//	byte     format (1)
//	byte     flags (bit 0: in stock)
//	uvarint  width, height
//	uvarint  price_micros, sale_price_micros
//	varint   updated_at (unix seconds)
//	7 x (uvarint length, bytes): currency, title, image_url, landing_url,
//	                             category, brand, description
//
// product_id and product_group_id are not stored: they are in the key.
const valueFormat1 = 1

const flagInStock = 1

var errShortValue = errors.New("catalog: value truncated")

// AppendValue appends the encoding of p (without its ids) to dst.
func AppendValue(dst []byte, p *catalogpb.Product) []byte {
	var flags byte
	if p.InStock {
		flags |= flagInStock
	}
	dst = append(dst, valueFormat1, flags)
	dst = binary.AppendUvarint(dst, uint64(p.Width))
	dst = binary.AppendUvarint(dst, uint64(p.Height))
	dst = binary.AppendUvarint(dst, uint64(p.PriceMicros))
	dst = binary.AppendUvarint(dst, uint64(p.SalePriceMicros))
	dst = binary.AppendVarint(dst, p.UpdatedAt)
	for _, s := range [...]string{p.Currency, p.Title, p.ImageUrl, p.LandingUrl, p.Category, p.Brand, p.Description} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

// DecodeValue decodes v into p and sets p's ids to group and id. All of p's
// strings share one allocation; p does not keep a reference to v, so v may
// be reused (or its Pebble closer closed) afterwards.
func DecodeValue(group, id int64, v []byte, p *catalogpb.Product) error {
	if len(v) < 2 {
		return fmt.Errorf("%w: product %d/%d: %w", ErrCorrupt, group, id, errShortValue)
	}
	if v[0] != valueFormat1 {
		return fmt.Errorf("%w: product %d/%d: unknown value format %d", ErrCorrupt, group, id, v[0])
	}
	p.ProductGroupId = group
	p.ProductId = id
	p.InStock = v[1]&flagInStock != 0
	i := 2
	var u [4]uint64
	for k := range u {
		x, n := binary.Uvarint(v[i:])
		if n <= 0 {
			return fmt.Errorf("%w: product %d/%d: %w", ErrCorrupt, group, id, errShortValue)
		}
		u[k] = x
		i += n
	}
	ts, n := binary.Varint(v[i:])
	if n <= 0 {
		return fmt.Errorf("%w: product %d/%d: %w", ErrCorrupt, group, id, errShortValue)
	}
	i += n
	p.Width, p.Height = int32(u[0]), int32(u[1])
	p.PriceMicros, p.SalePriceMicros = int64(u[2]), int64(u[3])
	p.UpdatedAt = ts
	// One allocation for all strings: copy the tail once, slice it.
	tail := string(v[i:])
	j := 0
	var strs [7]string
	for k := range strs {
		l, n := binary.Uvarint(v[i+j:])
		if n <= 0 || uint64(len(tail)-j-n) < l {
			return fmt.Errorf("%w: product %d/%d: %w", ErrCorrupt, group, id, errShortValue)
		}
		j += n
		strs[k] = tail[j : j+int(l)]
		j += int(l)
	}
	p.Currency, p.Title, p.ImageUrl, p.LandingUrl = strs[0], strs[1], strs[2], strs[3]
	p.Category, p.Brand, p.Description = strs[4], strs[5], strs[6]
	return nil
}
