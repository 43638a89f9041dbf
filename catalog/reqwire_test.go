package catalog

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

func requestSeeds() [][]byte {
	full, _ := proto.Marshal(&catalogpb.ProductMastersRequest{ProductGroupId: 7, Product1QuantityAtMost: 15,
		Product1Ids: []int64{1, 2, 300, -4, 1 << 40}, Product2QuantityAtMost: -1, Product2Ids: []int64{9}})
	var unpacked []byte
	unpacked = protowire.AppendTag(unpacked, 3, protowire.VarintType)
	unpacked = protowire.AppendVarint(unpacked, 5)
	unpacked = append(unpacked, full...) // packed after unpacked: both kept, in order
	unpacked = protowire.AppendTag(unpacked, 99, protowire.BytesType)
	unpacked = protowire.AppendString(unpacked, "unknown")
	unpacked = protowire.AppendTag(unpacked, 1, protowire.BytesType) // known number, other type
	unpacked = protowire.AppendString(unpacked, "x")
	return [][]byte{nil, full, unpacked, full[:len(full)-1], {0x08}, {0x1a, 0x02, 0x80, 0x80}, {0x00}, {0x0b, 0x14}, {0x0c}}
}

// FuzzDecodeRequest: decodeRequest, which reads every request a node
// gets, accepts what proto.Unmarshal accepts, refuses what it refuses,
// and decodes the same fields.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range requestSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got catalogpb.ProductMastersRequest
		werr := proto.Unmarshal(b, &want)
		gerr := decodeRequest(b, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%x: proto.Unmarshal error %v, decodeRequest error %v", b, werr, gerr)
		}
		if werr != nil {
			return
		}
		if got.ProductGroupId != want.ProductGroupId || got.Product1QuantityAtMost != want.Product1QuantityAtMost ||
			got.Product2QuantityAtMost != want.Product2QuantityAtMost ||
			!slices.Equal(got.Product1Ids, want.Product1Ids) || !slices.Equal(got.Product2Ids, want.Product2Ids) {
			t.Fatalf("%x: decodeRequest %v, proto.Unmarshal %v", b, &got, &want)
		}
	})
}

// The seeds cover packed and unpacked ids, unknown fields and known
// numbers of another wire type, and malformed input.
func TestDecodeRequestSeeds(t *testing.T) {
	var req catalogpb.ProductMastersRequest
	if err := decodeRequest(requestSeeds()[2], &req); err != nil {
		t.Fatal(err)
	}
	if want := []int64{5, 1, 2, 300, -4, 1 << 40}; req.ProductGroupId != 7 || !slices.Equal(req.Product1Ids, want) ||
		req.Product2QuantityAtMost != -1 || !slices.Equal(req.Product2Ids, []int64{9}) {
		t.Fatalf("decoded %v", &req)
	}
	for _, b := range requestSeeds()[3:] {
		if err := decodeRequest(b, new(catalogpb.ProductMastersRequest)); err == nil {
			t.Errorf("%x: decoded without error", b)
		}
	}
}
