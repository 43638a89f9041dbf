package catalog_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/rtbd/rtbd/catalog"
)

func TestSimilarValueRoundTrip(t *testing.T) {
	list := []catalog.Similar{{ID: 7, Score: 1_000_000}, {ID: -3, Score: 0}, {ID: 1 << 40, Score: 1<<32 - 1}}
	v := catalog.AppendSimilarValue(nil, list)
	got, err := catalog.DecodeSimilar(v, nil)
	if err != nil || !slices.Equal(got, list) {
		t.Fatalf("DecodeSimilar = %v, %v; want %v", got, err, list)
	}
	long := make([]catalog.Similar, catalog.MaxSimilar+5)
	if got, _ := catalog.DecodeSimilar(catalog.AppendSimilarValue(nil, long), nil); len(got) != catalog.MaxSimilar {
		t.Errorf("a list of %d kept %d entries, want %d", len(long), len(got), catalog.MaxSimilar)
	}
	for _, bad := range [][]byte{nil, {2, 1}, {1, 2}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, err := catalog.DecodeSimilar(bad, nil); err == nil {
			t.Errorf("DecodeSimilar(%x): no error", bad)
		}
	}
}

func TestSimilarIDsMerge(t *testing.T) {
	lists := map[int64][]catalog.Similar{
		1: {{ID: 3, Score: 900}, {ID: 2, Score: 800}, {ID: 4, Score: 500}},
		2: {{ID: 4, Score: 700}, {ID: 1, Score: 600}, {ID: 6, Score: 100}, {ID: 5, Score: 100}},
	}
	got := catalog.SimilarIDs([]int64{1, 2, 0, -1, 99}, func(id int64) []catalog.Similar { return lists[id] }, 0, nil)
	// 4: 500+700, 3: 900, then 5 and 6 (100 each, by id); 1 and 2 were viewed.
	if want := []int64{4, 3, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("SimilarIDs = %v, want %v", got, want)
	}
}

// FuzzDecodeSimilar: a similar list's bytes come from the index and, on a
// bidder, from a node's answer: any input decodes or fails cleanly, and
// what decodes encodes back to the bytes it was read from.
func FuzzDecodeSimilar(f *testing.F) {
	f.Add(catalog.AppendSimilarValue(nil, []catalog.Similar{{ID: 1, Score: 2}}))
	f.Add([]byte{0})
	f.Add([]byte{0x65})
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := catalog.DecodeSimilar(b, nil)
		if err != nil {
			return
		}
		enc := catalog.AppendSimilarValue(nil, list)
		if dec, err := catalog.DecodeSimilar(enc, nil); err != nil || !slices.Equal(dec, list) {
			t.Fatalf("re-encoded list does not decode to itself: %v %v", dec, err)
		}
		if !bytes.HasPrefix(b, enc) && len(enc) > len(b) {
			t.Fatalf("encoding %x longer than the input %x", enc, b)
		}
	})
}

// TestSimilarIDsLimit: with a limit, the best ones in the same order.
func TestSimilarIDsLimit(t *testing.T) {
	lists := map[int64][]catalog.Similar{}
	for v := int64(1); v <= 10; v++ {
		for k := int64(0); k < 20; k++ {
			id := 100 + (v*7+k*13)%60
			lists[v] = append(lists[v], catalog.Similar{ID: id, Score: uint32(1000 - k*10 + v)})
		}
	}
	viewed := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	all := catalog.SimilarIDs(viewed, func(id int64) []catalog.Similar { return lists[id] }, 0, nil)
	for _, limit := range []int{1, 5, 28, len(all), len(all) + 3} {
		got := catalog.SimilarIDs(viewed, func(id int64) []catalog.Similar { return lists[id] }, limit, nil)
		if want := all[:min(limit, len(all))]; !slices.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
}
