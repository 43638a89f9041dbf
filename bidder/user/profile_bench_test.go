package user

import "testing"

func BenchmarkDecodeProfile(b *testing.B) {
	var p Profile
	for g := int64(1); g <= 3; g++ {
		var v []int64
		for k := int64(1); k <= 20; k++ {
			v = append(v, g*1_000_000+k)
		}
		p.Viewed = append(p.Viewed, GroupIDs{g, v})
		p.Recommended = append(p.Recommended, GroupIDs{g, v})
	}
	p.Segments = []string{"sports", "high-value", "seg-1"}
	enc := AppendProfile(nil, &p)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var q Profile
	for b.Loop() {
		if err := DecodeProfile(enc, &q); err != nil {
			b.Fatal(err)
		}
	}
}
