package catalog

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// decodeRequest decodes a ProductMastersRequest from b into req (which
// starts empty) as proto.Unmarshal does, without its reflection-driven
// table walk: the same fields, the same errors for malformed input (bad
// tags, varints, lengths and groups), packed and unpacked ids alike, the
// last value of a scalar winning. Fields it does not know, and known
// fields of another wire type, are skipped where proto.Unmarshal keeps
// them as unknown fields; no answer depends on them. Each id list gets
// one allocation, of the size its packed encoding gives.
func decodeRequest(b []byte, req *catalogpb.ProductMastersRequest) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if !num.IsValid() {
			return fmt.Errorf("field number %d out of range", num)
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && (num == 1 || num == 2 || num == 4 || num == 6):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			switch num {
			case 1:
				req.ProductGroupId = int64(v)
			case 2:
				req.Product1QuantityAtMost = int32(v)
			case 6:
				req.SimilarToViewed = protowire.DecodeBool(v)
			default:
				req.Product2QuantityAtMost = int32(v)
			}
		case typ == protowire.VarintType && (num == 3 || num == 5):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			ids := idList(req, num)
			*ids = append(*ids, int64(v))
		case typ == protowire.BytesType && (num == 3 || num == 5):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			count := 0
			for _, c := range v {
				if c < 0x80 {
					count++
				}
			}
			ids := idList(req, num)
			if free := cap(*ids) - len(*ids); free < count {
				grown := make([]int64, len(*ids), len(*ids)+count)
				copy(grown, *ids)
				*ids = grown
			}
			for len(v) > 0 {
				x, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return protowire.ParseError(n)
				}
				v = v[n:]
				*ids = append(*ids, int64(x))
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return nil
}

func idList(req *catalogpb.ProductMastersRequest, num protowire.Number) *[]int64 {
	if num == 3 {
		return &req.Product1Ids
	}
	return &req.Product2Ids
}
