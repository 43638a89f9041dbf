package money

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ok := map[string]int64{
		"0": 0, "1": 1_000_000, "1.2345": 1_234_500, "0.000001": 1, "12.5": 12_500_000, "19.99": 19_990_000,
		"1980": 1_980_000_000, "007.50": 7_500_000, "00012.50": 12_500_000, "1.000000": 1_000_000,
		"999999999999.999999": MaxText, "0000000000001": 1_000_000, "000000000000000000000000000001.5": 1_500_000,
	}
	for s, want := range ok {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", s, got, err, want)
		}
		if got, err := Parse([]byte(s)); err != nil || got != want {
			t.Errorf("Parse([]byte(%q)) = %d, %v; want %d", s, got, err, want)
		}
		if got, err := ParseSigned("-" + s); len(s) < maxTextLen && (err != nil || got != -want) {
			t.Errorf("ParseSigned(-%q) = %d, %v; want %d", s, got, err, -want)
		}
	}
	bad := map[string]error{
		"": ErrEmpty, ".5": ErrSyntax, ".": ErrSyntax, "-": ErrSyntax, "-x": ErrSyntax, "--1": ErrSyntax,
		"+1": ErrSyntax, "abc": ErrSyntax, " 1": ErrSyntax, "NaN": ErrSyntax, "Inf": ErrSyntax,
		"Infinity": ErrSyntax, "١": ErrSyntax, "１２": ErrSyntax,
		"5.": ErrNoFraction, "1.": ErrNoFraction,
		"1.2.3": ErrTrailing, "1e3": ErrTrailing, "1E5": ErrTrailing, "1 ": ErrTrailing, "0x10": ErrTrailing,
		"1,5": ErrTrailing, "1,000": ErrTrailing,
		"-1": ErrNegative, "-0.5": ErrNegative, "-0.01": ErrNegative, "-0": ErrNegative,
		"1.0000001": ErrPrecision, "1.0000000": ErrPrecision, "1.2345000000": ErrPrecision,
		"1000000000000": ErrRange, "9223372036854.775807": ErrRange, "9223372036855": ErrRange,
		"99999999999999999999999999": ErrRange, strings.Repeat("1", 40): ErrRange,
		"0." + strings.Repeat("0", 40) + "1": ErrRange, "-99999999999999": ErrRange,
		"0000000000000000000000000000001.5": ErrRange, // 33 bytes
	}
	for s, want := range bad {
		if got, err := Parse(s); !errors.Is(err, want) || got != 0 {
			t.Errorf("Parse(%q) = %d, %v; want %v", s, got, err, want)
		}
		if want == ErrNegative {
			continue
		}
		if got, err := ParseSigned(s); !errors.Is(err, want) || got != 0 {
			t.Errorf("ParseSigned(%q) = %d, %v; want %v", s, got, err, want)
		}
	}
	for _, e := range []error{ErrEmpty, ErrNoFraction, ErrTrailing} {
		if !errors.Is(e, ErrSyntax) {
			t.Errorf("%v does not wrap ErrSyntax", e)
		}
	}
	if v, err := ParseSigned("-0"); err != nil || v != 0 {
		t.Errorf("ParseSigned(-0) = %d, %v", v, err)
	}
}

func TestAppend(t *testing.T) {
	for micros, want := range map[int64]string{
		0: "0", 1: "0.000001", 1_234_500: "1.2345", 2_000_000: "2", 10_000_010: "10.00001", 10_000: "0.01",
		19_990_000: "19.99", 1_980_000_000: "1980", -500_000: "-0.5",
		-1_500_000: "-1.5", math.MaxInt64: "9223372036854.775807", math.MinInt64: "-9223372036854.775808",
	} {
		if got := string(Append([]byte("p="), micros)); got != "p="+want {
			t.Errorf("Append(%d) = %q, want %q", micros, got, "p="+want)
		}
		if got := Format(micros); got != want {
			t.Errorf("Format(%d) = %q, want %q", micros, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10000 {
		m := rng.Int64N(MaxText + 1)
		if got, err := Parse(Append(nil, m)); err != nil || got != m {
			t.Fatalf("round trip %d: %d, %v", m, got, err)
		}
		if got, err := ParseSigned(Format(-m)); err != nil || got != -m {
			t.Fatalf("signed round trip %d: %d, %v", -m, got, err)
		}
	}
}

func TestAppendDisplay(t *testing.T) {
	cases := []struct {
		micros int64
		cur    string
		want   string
	}{
		{1_980_000_000, "JPY", "¥1,980"},
		{1_980_500_000, "JPY", "¥1,981"},
		{12_500_000, "USD", "$12.50"},
		{1_234_567_890_000, "EUR", "€1,234,567.89"},
		{9_900_000, "CHF", "9.90 CHF"},
		{5_000, "USD", "$0.01"},
		{0, "GBP", "£0.00"},
		{-5, "USD", "$0.00"},
		{999_999, "", "1.00"},
		{1_500_000, "KRW", "₩2"},
		{math.MaxInt64, "USD", "$9,223,372,036,854.78"},
	}
	for _, c := range cases {
		if got := string(AppendDisplay(nil, c.micros, c.cur)); got != c.want {
			t.Errorf("%d %s: %q, want %q", c.micros, c.cur, got, c.want)
		}
	}
}

func TestFromFloat(t *testing.T) {
	for in, want := range map[float64]int64{
		-1: 0, 0: 0, math.Copysign(0, -1): 0, math.NaN(): 0, math.Inf(-1): 0, math.Inf(1): Max, 1e300: Max,
		0.1: 100_000, 0.01: 10_000, 0.03: 30_000, 0.111: 111_000, 1.1: 1_100_000, 1.5: 1_500_000,
		1.234567: 1_234_567, 2.675: 2_675_000, 0.000001: 1, 19.99: 19_990_000,
		0.0000015: 2, 1.2345671: 1_234_568, 1.2345679: 1_234_568, 1e-7: 1, 5e-324: 1, 0.0000010000001: 2,
		999999999999.999999: 1_000_000_000_000_000_000, // the same float as 1e12
		5000000000000.123:   5_000_000_000_000_123_000,
		9223372036854.77:    9_223_372_036_854_770_000, 9223372036854.775: 9_223_372_036_854_775_000, 9223372036854.78: Max,
		9e12: 9_000_000_000_000_000_000,
	} {
		if got := FromFloat(in); got != want {
			t.Errorf("FromFloat(%v) = %d, want %d", in, got, want)
		}
	}
	// Every whole number of micros written as a float comes back exactly.
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		m := rng.Int64N(4_000_000_000_000_000) // up to 4e9 units
		f := Float(m)
		if got := FromFloat(f); got != m {
			t.Fatalf("FromFloat(Float(%d)) = %d", m, got)
		}
	}
}

func TestScale(t *testing.T) {
	for _, c := range []struct {
		micros int64
		f      float64
		want   int64
	}{
		{2_000_000, 1.5 * 1.1 * 2, 6_600_000}, {2_000_000, 0.5 * 1.1, 1_100_000}, {2_000_000, 0.7 * 3, 4_200_000},
		{3, 0.5, 2}, {1, 0.4, 0}, {MaxText, 100, Max}, {1, math.NaN(), 0}, {1, math.Inf(1), Max}, {5, -1, 0},
	} {
		if got := Scale(c.micros, c.f); got != c.want {
			t.Errorf("Scale(%d, %v) = %d, want %d", c.micros, c.f, got, c.want)
		}
	}
}

func TestPerImpression(t *testing.T) {
	for in, want := range map[int64]int64{
		0: 0, 1_500_000: 1_500, 499: 0, 500: 1, 1_499: 1, 1_500: 2, math.MaxInt64: math.MaxInt64/1000 + 1,
	} {
		if got := PerImpression(in); got != want {
			t.Errorf("PerImpression(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestCodes(t *testing.T) {
	list := Codes()
	if !sort.StringsAreSorted(list) || len(list)*4 != len(codes) {
		t.Fatalf("currency table not sorted or malformed")
	}
	for i, c := range list {
		if len(c) != 3 || strings.ToUpper(c) != c || (i > 0 && list[i-1] == c) {
			t.Fatalf("bad code %q", c)
		}
		if got, ok := Code([]byte(c)); !ok || got != c {
			t.Errorf("Code(%q) = %q, %v", c, got, ok)
		}
		if got, ok := Code(strings.ToLower(c)); !ok || got != c || IsCode(strings.ToLower(c)) || !IsCode(c) {
			t.Errorf("Code(lower %q) = %q, %v", c, got, ok)
		}
	}
	for _, c := range strings.Fields("JPY USD EUR GBP KRW CNY TWD HKD SGD AUD CAD NZD CHF SEK NOK DKK PLN CZK HUF " +
		"INR IDR THB VND PHP MYR BRL MXN ARS CLP COP PEN ZAR AED SAR ILS TRY RUB UAH EGP NGN KES") {
		if !IsCode(c) {
			t.Errorf("%s not known", c)
		}
	}
	for _, c := range []string{"", "XXX", "XAU", "YEN", "US", "USDD", "U$D", "EU1", "US\x00", "ÜSD"} {
		if _, ok := Code(c); ok || IsCode(c) {
			t.Errorf("%q known", c)
		}
	}
}

func TestRates(t *testing.T) {
	r, err := ParseRates([]string{"JPY=0.0067", " EUR = 1.08 "})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		micros   int64
		from, to string
		down, up int64
		ok       bool
	}{
		{1_000_000, "USD", "USD", 1_000_000, 1_000_000, true},
		{-5, "JPY", "JPY", -5, -5, true},
		{1_000_000, "jpy", "JPY", 1_000_000, 1_000_000, true},
		{1_000_000, "", "usd", 1_000_000, 1_000_000, true},
		{100_000_000, "JPY", "USD", 670_000, 670_000, true},
		{1_000_000, "USD", "JPY", 149_253_731, 149_253_732, true},
		{1_000_000, "EUR", "USD", 1_080_000, 1_080_000, true},
		{1, "JPY", "USD", 0, 1, true},
		{Max, "EUR", "USD", Max, Max, true},
		{Max, "USD", "JPY", Max, Max, true},
		{-5, "EUR", "USD", 0, 0, true},
		{1_000_000, "GBP", "USD", 0, 0, false},
		{1_000_000, "USD", "XYZ", 0, 0, false},
	} {
		down, ok1 := r.Convert(c.micros, c.from, c.to)
		up, ok2 := r.ConvertUp(c.micros, c.from, c.to)
		if down != c.down || up != c.up || ok1 != c.ok || ok2 != c.ok {
			t.Errorf("%d %s->%s: Convert %d %v, ConvertUp %d %v; want %d %d %v", c.micros, c.from, c.to, down, ok1, up, ok2, c.down, c.up, c.ok)
		}
	}
	if !r.Known("jpy") || !r.Known("") || r.Known("GBP") || (Rates{}).Known("JPY") || !(Rates{}).Known("USD") {
		t.Error("Known")
	}
	for entry, want := range map[string]error{
		"JPY": ErrRateSyntax, "JPY:0.0067": ErrRateSyntax, "jpz=0.0067": ErrRateCode, "XAU=2000": ErrRateCode,
		"JPY=0": ErrRateValue, "JPY=-1": ErrRateValue, "JPY=NaN": ErrRateValue, "JPY=Inf": ErrRateValue,
		"JPY=2e9": ErrRateValue, "JPY=x": ErrRateValue, "USD=1": ErrRateUSD,
	} {
		if _, err := ParseRates([]string{entry}); !errors.Is(err, want) || !errors.Is(err, ErrRates) {
			t.Errorf("ParseRates(%q): %v, want %v", entry, err, want)
		}
	}
	if _, err := ParseRates([]string{"JPY=1", "JPY=2"}); !errors.Is(err, ErrRates) || !strings.Contains(err.Error(), "JPY listed twice") {
		t.Errorf("twice: %v", err)
	}
}
