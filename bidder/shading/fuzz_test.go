package shading

import (
	"testing"
)

// FuzzParseMinToWin feeds arbitrary m values (outside input: the
// exchange's ${AUCTION_MIN_TO_WIN}) for a win and a loss: never a panic,
// and an accepted m is within the bounds of its outcome.
func FuzzParseMinToWin(f *testing.F) {
	for _, s := range []string{"", "1.5", "${AUCTION_MIN_TO_WIN}", "NaN", "-0", "-1", "1e3", "99999999999999999999", "0.0000001", "2.000000"} {
		f.Add(s, int64(2_000_000))
	}
	f.Fuzz(func(t *testing.T, raw string, price int64) {
		for _, won := range []bool{true, false} {
			m, r := ParseMinToWin([]byte(raw), price, won)
			if r >= NumBadMinToWin {
				t.Fatalf("result %d", r)
			}
			if r != MinToWinOK {
				continue
			}
			switch {
			case m < 0:
				t.Fatalf("%q: negative m %d accepted", raw, m)
			case won && m > price:
				t.Fatalf("%q: win with m %d above the price %d accepted", raw, m, price)
			case !won && (m <= price || m > MaxMinToWinMicros):
				t.Fatalf("%q: loss with m %d against price %d accepted", raw, m, price)
			}
		}
	})
}
