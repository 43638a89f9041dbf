//go:build !race

package money

import "testing"

// TestAllocations pins the hot-path functions at no allocation.
func TestAllocations(t *testing.T) {
	r, err := ParseRates([]string{"JPY=0.0067", "EUR=1.08"})
	if err != nil {
		t.Fatal(err)
	}
	var pairs Pairs
	_ = pairs.Add("USD", "SEK", 10.2)
	_ = pairs.Add("USD", "NOK", 10.4)
	buf := make([]byte, 0, 64)
	b := []byte("19.99")
	var sink int64
	for name, f := range map[string]func(){
		"Parse":         func() { v, _ := Parse("1.2345"); sink += v },
		"ParseBytes":    func() { v, _ := Parse(b); sink += v },
		"ParseSigned":   func() { v, _ := ParseSigned("-2.5"); sink += v },
		"ParseError":    func() { _, err := Parse("1e5"); sink += int64(len(err.Error())) },
		"Append":        func() { buf = Append(buf[:0], 1_234_500) },
		"AppendDisplay": func() { buf = AppendDisplay(buf[:0], 1_234_567_890_000, "EUR") },
		"FromFloat":     func() { sink += FromFloat(1.1) + FromFloat(1.2345671) },
		"Scale":         func() { sink += Scale(2_000_000, 1.65) + PerImpression(1_500_000) },
		"Code":          func() { c, _ := Code(b[:3]); sink += int64(len(c)) },
		"IsCode":        func() { _ = IsCode("JPY") },
		"Convert": func() {
			v, _ := r.Convert(1_000_000, "jpy", "USD")
			w, _ := r.ConvertUp(1_000_000, "EUR", "JPY")
			sink += v + w
		},
		"Pairs": func() {
			pairs.Reset()
			_ = pairs.Add("usd", "SEK", 10.2)
			_ = pairs.Add("USD", "nok", 10.4)
			v, _ := pairs.ConvertUp(1_000_000, "nok", "SEK")
			w, _ := pairs.Convert(1_000_000, "SEK", "usd")
			sink += v + w
		},
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
	_ = sink
}
