package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

// The wire path a catalog node answers with writes exactly the bytes
// proto.Marshal writes for the response GetProductMasters returns, cold
// (Pebble reads) and warm (hot cache, kept encodings), with and without
// the hot cache.
func TestAppendProductMastersMatchesProto(t *testing.T) {
	for _, o := range []catalog.LocalOptions{{}, {HotCacheEntries: -1}, {HotCacheEntries: 8}, {WireCache: true}, {HotCacheEntries: 8, WireCache: true}} {
		hot := o.HotCacheEntries
		if o.WireCache {
			hot += 100
		}
		l, _ := openFixture(t, o)
		rng := rand.New(rand.NewPCG(uint64(hot+2), 9))
		groups := []int64{catalogtest.TalkGroup, catalogtest.OtherGroup, catalogtest.BulkGroup, catalogtest.FullGroup, catalogtest.UnknownGroup}
		pick := func() []int64 {
			ids := make([]int64, rng.IntN(40))
			for i := range ids {
				switch rng.IntN(4) {
				case 0:
					ids[i] = 101 + rng.Int64N(12)
				case 1:
					ids[i] = rng.Int64N(210) - 3
				case 2:
					ids[i] = 999
				default:
					if i > 0 {
						ids[i] = ids[rng.IntN(i)] // duplicates
					}
				}
			}
			return ids
		}
		for i := 0; i < 2000; i++ {
			req := &catalogpb.ProductMastersRequest{ProductGroupId: groups[rng.IntN(len(groups))],
				Product1QuantityAtMost: int32(rng.IntN(20) - 2), Product1Ids: pick(),
				Product2QuantityAtMost: int32(rng.IntN(20) - 2), Product2Ids: pick()}
			if rng.IntN(10) == 0 {
				req.ProductGroupId = catalogtest.FullGroup
				req.Product1Ids = []int64{1, 1, 2}
			}
			resp, err := l.GetProductMasters(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			got, counts, err := l.AppendProductMasters(context.Background(), req, []byte("prefix"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[6:], want) || string(got[:6]) != "prefix" {
				t.Fatalf("hot=%d request %v:\n got %x\nwant %x", hot, req, got[6:], want)
			}
			if counts != [2]int{len(resp.Product1S), len(resp.Product2S)} {
				t.Fatalf("counts %v, response has %d and %d", counts, len(resp.Product1S), len(resp.Product2S))
			}
		}
		// Errors are GetProductMasters' errors.
		for _, bad := range []*catalogpb.ProductMastersRequest{nil, {ProductGroupId: 0}, {ProductGroupId: 1, Product1Ids: make([]int64, 1001)}} {
			if _, _, err := l.AppendProductMasters(context.Background(), bad, nil); !errors.Is(err, catalog.ErrInvalidArgument) {
				t.Fatalf("request %v: err %v, want ErrInvalidArgument", bad, err)
			}
		}
	}
}

func TestAppendProductMatchesProto(t *testing.T) {
	for _, p := range append(catalogtest.Products(), catalogtest.FullProduct(), &catalogpb.Product{},
		&catalogpb.Product{ProductId: -1, Width: -5, Height: 1 << 30, PriceMicros: -1 << 62, UpdatedAt: -3}) {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := catalog.AppendProduct(nil, p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("product %v: err %v\n got %x\nwant %x", p, err, got, want)
		}
	}
	bad := &catalogpb.Product{ProductId: 1, Title: "ok", Brand: "bad \xff utf-8 in a long enough string"}
	if _, err := proto.Marshal(bad); err == nil {
		t.Fatal("proto marshals invalid UTF-8; the test assumes it does not")
	}
	if _, err := catalog.AppendProduct(nil, bad); !errors.Is(err, catalog.ErrInvalidUTF8) {
		t.Fatalf("invalid UTF-8: err %v, want ErrInvalidUTF8", err)
	}
}

// A catalog node's warm lookup of 15 ids allocates nothing.
func TestAppendProductMastersAllocs(t *testing.T) {
	l, _ := openFixture(t, catalog.LocalOptions{WireCache: true})
	req := &catalogpb.ProductMastersRequest{ProductGroupId: catalogtest.BulkGroup, Product1QuantityAtMost: 15,
		Product1Ids: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 3, 16}, Product2QuantityAtMost: 3, Product2Ids: []int64{21, 22, 21}}
	buf := make([]byte, 0, 64<<10)
	for range 3 {
		if _, _, err := l.AppendProductMasters(context.Background(), req, buf[:0]); err != nil {
			t.Fatal(err)
		}
	}
	if b, counts, _ := l.AppendProductMasters(context.Background(), req, buf[:0]); len(b) == 0 || counts[0] == 0 {
		t.Fatalf("fixture answered %d bytes, counts %v: want products", len(b), counts)
	}
	if n := testing.AllocsPerRun(200, func() {
		l.AppendProductMasters(context.Background(), req, buf[:0])
	}); n != 0 {
		t.Fatalf("AppendProductMasters allocates %.1f times per call, want 0", n)
	}
}
