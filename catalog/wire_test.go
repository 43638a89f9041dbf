package catalog_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

func sampleResponse() *catalogpb.ProductMastersResponse {
	ps := catalogtest.Products()
	return &catalogpb.ProductMastersResponse{Product1S: ps[:3], Product2S: append(ps[5:7], catalogtest.FullProduct())}
}

func TestDecodeResponseMatchesProto(t *testing.T) {
	for _, r := range []*catalogpb.ProductMastersResponse{
		sampleResponse(), {}, {Product2S: []*catalogpb.Product{{}}},
		{Product1S: []*catalogpb.Product{{ProductId: -1, Width: -5, PriceMicros: 1 << 62}}},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got catalogpb.ProductMastersResponse
		if err := catalog.DecodeResponse(b, &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, r) {
			t.Fatalf("got %v\nwant %v", &got, r)
		}
	}
}

func FuzzDecodeResponse(f *testing.F) {
	b, _ := proto.Marshal(sampleResponse())
	f.Add(b)
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01})
	f.Add([]byte{0x0a, 0x03, 0x1a, 0x01, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got catalogpb.ProductMastersResponse
		werr := proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, &want)
		gerr := catalog.DecodeResponse(b, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("proto err %v, ours %v", werr, gerr)
		}
		if werr == nil && !proto.Equal(&want, &got) {
			t.Fatalf("decoded differently:\nproto %v\nours  %v", &want, &got)
		}
	})
}
