package remote

import (
	"testing"

	"google.golang.org/protobuf/proto"

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
		{Product2S: []*catalogpb.Product{{ProductId: 3}}, Version: &catalogpb.IndexVersion{Generation: 2, ContentHash: 9},
			SimilarLists: []*catalogpb.SimilarList{{ProductGroupId: 1, ProductId: 2, List: []byte{1, 6, 10}}, {ProductGroupId: 1, ProductId: 5}}},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got catalogpb.ProductMastersResponse
		if err := decodeResponse(b, &got); err != nil {
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
		gerr := decodeResponse(b, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("proto err %v, ours %v", werr, gerr)
		}
		if werr == nil && !proto.Equal(&want, &got) {
			t.Fatalf("decoded differently:\nproto %v\nours  %v", &want, &got)
		}
	})
}

// BenchmarkDecodeResponse decodes a 15-product answer of the synthetic
// catalog (the remote client's per-call decode), beside proto.Unmarshal.
func BenchmarkDecodeResponse(b *testing.B) {
	var r catalogpb.ProductMastersResponse
	for i := range 15 {
		r.Product1S = append(r.Product1S, catalogtest.SyntheticProduct(i*37, 1))
	}
	buf, err := proto.Marshal(&r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			var got catalogpb.ProductMastersResponse
			if err := decodeResponse(buf, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			var got catalogpb.ProductMastersResponse
			if err := proto.Unmarshal(buf, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}
