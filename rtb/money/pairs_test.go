package money

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseRateAnyCase: a rate entry's code is read in any case and comes
// back canonical.
func TestParseRateAnyCase(t *testing.T) {
	r, err := ParseRates([]string{"jpy=0.0067", "Eur=1.08"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Known("JPY") || !r.Known("eur") {
		t.Error("lower-case entries not known")
	}
	if c, _, err := ParseRate("gbp=1.27"); err != nil || c != "GBP" {
		t.Errorf("ParseRate(gbp=1.27) = %q, %v; want GBP", c, err)
	}
	if _, err := ParseRates([]string{"JPY=1", "jpy=2"}); err == nil || !strings.Contains(err.Error(), "JPY listed twice") {
		t.Errorf("JPY and jpy: %v, want listed twice", err)
	}
}

// TestPairsRate: direct, inverse and intermediate lookups, as Prebid
// Server's Rates.GetRate does them, codes in any case.
func TestPairsRate(t *testing.T) {
	var p Pairs
	for _, e := range []struct {
		from, to string
		rate     float64
	}{
		{"USD", "SEK", 10.23842}, {"usd", "nok", 10.47089}, {"USD", "USD", 1},
		{"EUR", "THB", 35.23842}, {"EUR", "ZAR", 18.47089},
		{"GBP", "USD", 1.25},
	} {
		if err := p.Add(e.from, e.to, e.rate); err != nil {
			t.Fatalf("Add(%s, %s, %v): %v", e.from, e.to, e.rate, err)
		}
	}
	if p.Len() != 5 {
		t.Errorf("Len %d, want 5 (USD/USD ignored)", p.Len())
	}
	for _, c := range []struct {
		from, to string
		want     float64
		ok       bool
	}{
		{"USD", "SEK", 10.23842, true},            // direct
		{"SEK", "USD", 1 / 10.23842, true},        // inverse
		{"GBP", "USD", 1.25, true},                // direct
		{"", "GBP", 1 / 1.25, true},               // "" is USD, inverse
		{"NOK", "SEK", 10.23842 / 10.47089, true}, // through USD
		{"sek", "Nok", 10.47089 / 10.23842, true}, // through USD, any case
		{"THB", "ZAR", 18.47089 / 35.23842, true}, // through EUR
		{"SEK", "THB", 0, false},                  // different intermediates: none
		{"GBP", "SEK", 0, false},                  // GBP->USD->SEK would need two hops of different kinds
		{"EUR", "EUR", 1, true},
		{"eur", "EUR", 1, true},
		{"XYZ", "USD", 0, false},
	} {
		got, ok := p.Rate(c.from, c.to)
		if ok != c.ok || math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("Rate(%s, %s) = %v, %v; want %v, %v", c.from, c.to, got, ok, c.want, c.ok)
		}
	}
	// Conversions round like Rates': floors up, bids down.
	if v, ok := p.ConvertUp(2_100_000, "USD", "SEK"); !ok || v != 21_500_682 {
		t.Errorf("ConvertUp 2.10 USD -> SEK = %d, %v; want 21500682", v, ok)
	}
	if v, ok := p.Convert(2_100_000, "USD", "SEK"); !ok || v != 21_500_682 {
		t.Errorf("Convert 2.10 USD -> SEK = %d, %v; want 21500682", v, ok)
	}
	if v, ok := p.ConvertUp(1_000_000, "GBP", "USD"); !ok || v != 1_250_000 {
		t.Errorf("ConvertUp 1 GBP -> USD = %d, %v; want exactly 1250000", v, ok)
	}
	if _, ok := p.Convert(1, "SEK", "THB"); ok {
		t.Error("Convert without a rate: ok")
	}
}

// TestPairsAdd: bad codes and values are refused with their error, and
// the table holds at most Max rates; the first rate of a pair wins.
func TestPairsAdd(t *testing.T) {
	var p Pairs
	for _, c := range []struct {
		from, to string
		rate     float64
		want     error
	}{
		{"USD", "EUR", 0, ErrRateValue},
		{"USD", "EUR", -1, ErrRateValue},
		{"USD", "EUR", math.NaN(), ErrRateValue},
		{"USD", "EUR", math.Inf(1), ErrRateValue},
		{"USD", "EUR", 2e9, ErrRateValue},
		{"USD", "EUR", 1e-10, ErrRateValue},
		{"USD", "XAU", 1, ErrPairCode},
		{"US", "EUR", 1, ErrPairCode},
		{"USD", "EUR", 0.9, nil},
		{"USD", "EUR", 0.8, nil},
	} {
		if err := p.Add(c.from, c.to, c.rate); !errors.Is(err, c.want) {
			t.Errorf("Add(%s, %s, %v) = %v, want %v", c.from, c.to, c.rate, err, c.want)
		}
	}
	if r, _ := p.Rate("USD", "EUR"); r != 0.9 {
		t.Errorf("rate %v, want the first one (0.9)", r)
	}
	q := Pairs{Max: 2}
	codes := []string{"EUR", "JPY", "GBP"}
	for i, c := range codes {
		err := q.Add("USD", c, 1)
		if want := i >= 2; (err != nil) != want || (want && !errors.Is(err, ErrPairsFull)) {
			t.Errorf("Add %d of Max 2: %v", i+1, err)
		}
	}
	q.Reset()
	if q.Len() != 0 || q.Max != 2 {
		t.Error("Reset")
	}
}

// TestRatesWithPairs: a currency file's rates become USD rates that
// replace the configured ones; currencies without a path to USD are named.
func TestRatesWithPairs(t *testing.T) {
	base, err := ParseRates([]string{"JPY=0.0067", "EUR=1.08", "CHF=1.1"})
	if err != nil {
		t.Fatal(err)
	}
	var p Pairs
	_ = p.Add("USD", "EUR", 0.8) // 1 EUR = 1.25 USD
	_ = p.Add("USD", "GBP", 0.5) // 1 GBP = 2 USD
	_ = p.Add("SEK", "NOK", 1.1) // no path to USD
	r, missing := base.WithPairs(&p)
	for cur, want := range map[string]int64{"EUR": 1_250_000, "GBP": 2_000_000, "JPY": 6700, "CHF": 1_100_000} {
		if v, ok := r.Convert(1_000_000, cur, "USD"); !ok || v != want {
			t.Errorf("1 %s = %d USD micros (%v), want %d", cur, v, ok, want)
		}
	}
	if strings.Join(missing, ",") != "SEK,NOK" {
		t.Errorf("missing %v, want SEK,NOK", missing)
	}
	if v, _ := base.Convert(1_000_000, "EUR", "USD"); v != 1_080_000 {
		t.Error("WithPairs changed its receiver")
	}
}

// TestParseFXFile: the testdata currency file (the shape of Prebid's
// currency-file latest.json) parses, withdrawn currencies are skipped,
// and every malformed file is an error wrapping ErrFXFile.
func TestParseFXFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "currency-file.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFXFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if !f.AsOf.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("AsOf %v", f.AsOf)
	}
	if strings.Join(f.Skipped, ",") != "GBP/HRK,USD/HRK" {
		t.Errorf("Skipped %v, want GBP/HRK,USD/HRK", f.Skipped)
	}
	if r, ok := f.Pairs.Rate("EUR", "USD"); !ok || math.Abs(r-1/0.92) > 1e-12 {
		t.Errorf("EUR->USD %v %v", r, ok)
	}
	if g, err := ParseFXFile([]byte(`{"dataAsOf":"2026-12-01T10:30:00Z","conversions":{"usd":{"eur":0.9}}}`)); err != nil ||
		g.AsOf.Hour() != 10 || g.Pairs.Len() != 1 {
		t.Errorf("RFC 3339 date, lower-case codes: %+v %v", g, err)
	}
	for _, bad := range []string{
		``, `[]`, `{"conversions":{"USD":{"EUR":0.9}}}`, `{"dataAsOf":"yesterday","conversions":{"USD":{"EUR":0.9}}}`,
		`{"dataAsOf":"2026-12-01","conversions":{}}`, `{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0}}}`,
		`{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":-1}}}`, `{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":"0.9"}}}`,
		`{"dataAsOf":"2026-12-01","conversions":{"USD":{"HRK":7}}}`, `{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0.9}}} {}`,
	} {
		if _, err := ParseFXFile([]byte(bad)); !errors.Is(err, ErrFXFile) {
			t.Errorf("ParseFXFile(%s) = %v, want ErrFXFile", bad, err)
		}
	}
}

// FuzzParseFXFile: any input parses or fails with ErrFXFile, and what
// parses holds only valid rates whose lookups are finite and positive.
func FuzzParseFXFile(f *testing.F) {
	for _, s := range []string{
		`{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0.92,"JPY":150}}}`,
		`{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0}}}`,
		`{"dataAsOf":"2026-12-01T00:00:00Z","conversions":{"gbp":{"usd":1.2},"EUR":{"GBP":0.8}}}`,
		`{"dataAsOf":null}`, `{}`, `nope`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFXFile(data)
		if err != nil {
			if !errors.Is(err, ErrFXFile) {
				t.Fatalf("error %v does not wrap ErrFXFile", err)
			}
			return
		}
		if file.Pairs.Len() == 0 || file.Pairs.Len() > MaxFXFilePairs {
			t.Fatalf("%d pairs", file.Pairs.Len())
		}
		for _, e := range file.Pairs.list {
			for _, c := range [][2]string{{e.from, e.to}, {e.to, e.from}, {e.from, "USD"}, {"USD", e.to}} {
				if r, ok := file.Pairs.Rate(c[0], c[1]); ok && !(r > 0 && !math.IsInf(r, 0)) {
					t.Fatalf("Rate(%s, %s) = %v", c[0], c[1], r)
				}
			}
		}
		r, _ := (Rates{}).WithPairs(&file.Pairs)
		for _, e := range file.Pairs.list {
			if v, ok := r.ConvertUp(1_000_000, e.from, "USD"); ok && v < 0 {
				t.Fatalf("ConvertUp %s: %d", e.from, v)
			}
		}
	})
}
