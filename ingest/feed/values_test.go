package feed

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/rtb/money"
)

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   int64
		reason Reason
		msg    string
	}{
		{"0", 0, "", ""},
		{"19.99", 19_990_000, "", ""},
		{"1980", 1_980_000_000, "", ""},
		{"0.000001", 1, "", ""},
		{"00012.50", 12_500_000, "", ""},
		{"1.000000", 1_000_000, "", ""},
		{"999999999999.999999", 999_999_999_999_999_999, "", ""},
		{"1000000000000", 0, ReasonBadPrice, "too large (at most 999999999999.999999)"},
		{"9223372036854.775807", 0, ReasonBadPrice, "too large (at most 999999999999.999999)"},
		{"99999999999999999999999999", 0, ReasonBadPrice, "too large (at most 999999999999.999999)"},
		{"1.0000001", 0, ReasonBadPrice, "more than 6 decimal places"},
		{"1.0000000", 0, ReasonBadPrice, "more than 6 decimal places"},
		{"-1", 0, ReasonNegativePrice, "below zero"},
		{"-0.01", 0, ReasonNegativePrice, "below zero"},
		{"-", 0, ReasonBadPrice, "not a decimal number"},
		{"-x", 0, ReasonBadPrice, "not a decimal number"},
		{"1e5", 0, ReasonBadPrice, "not a plain decimal number (no exponent, sign or separators)"},
		{"1E5", 0, ReasonBadPrice, "not a plain decimal number (no exponent, sign or separators)"},
		{"", 0, ReasonBadPrice, "empty"},
		{".5", 0, ReasonBadPrice, "not a decimal number"},
		{"5.", 0, ReasonBadPrice, "no digits after the decimal point"},
		{"+5", 0, ReasonBadPrice, "not a decimal number"},
		{"1,000", 0, ReasonBadPrice, "not a plain decimal number (no exponent, sign or separators)"},
		{"1.2.3", 0, ReasonBadPrice, "not a plain decimal number (no exponent, sign or separators)"},
		{"１２", 0, ReasonBadPrice, "not a decimal number"}, // full-width digits
		{"NaN", 0, ReasonBadPrice, "not a decimal number"},
		{"Infinity", 0, ReasonBadPrice, "not a decimal number"},
	} {
		got, reason, msg := parsePrice([]byte(tc.in))
		if got != tc.want || reason != tc.reason || msg != tc.msg {
			t.Errorf("parsePrice(%q) = %d, %q, %q; want %d, %q, %q", tc.in, got, reason, msg, tc.want, tc.reason, tc.msg)
		}
	}
	// Round trip with the generator's formatter over a spread of values.
	for m := int64(0); m <= 999_999_999_999_999_999; m = m*3 + 7 {
		s := money.Append([]byte("x"), m)
		got, reason, _ := parsePrice(s[1:])
		if reason != "" || got != m {
			t.Fatalf("round trip %d -> %q -> %d %s", m, s, got, reason)
		}
	}
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"0", true}, {"1735689600", true}, {"253402300799", true}, {"253402300800", false},
		{"2025-01-31T09:00:00Z", true}, {"2025-01-31t09:00:00z", true}, {"2025-01-31 09:00:00+09:00", true},
		{"2025-01-31T09:00:00.123456789-05:30", true}, {"2024-02-29T00:00:00Z", true},
		{"2023-02-29T00:00:00Z", false}, {"2025-13-01T00:00:00Z", false}, {"2025-01-31T24:00:00Z", false},
		{"2025-01-31T09:00:00", false}, {"2025-01-31", false}, {"2025-01-31T09:00:00.Z", false},
		{"2025-01-31T09:00:00+0900", false}, {"1969-12-31T23:59:59Z", false}, {"-1", false},
		{"1735689600.5", false}, {"2025-01-31T09:00:00Zjunk", false}, {"12345678901234567890", false},
	} {
		got, reason, _ := parseTime([]byte(tc.in))
		if (reason == "") != tc.ok {
			t.Errorf("parseTime(%q) = %d, %q; want ok=%v", tc.in, got, reason, tc.ok)
			continue
		}
		if !tc.ok || !strings.Contains(tc.in, "-") {
			continue
		}
		s := strings.Replace(strings.ToUpper(tc.in), " ", "T", 1)
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("time.Parse(%q): %v", s, err)
		}
		if got != want.Unix() {
			t.Errorf("parseTime(%q) = %d, time.Parse says %d", tc.in, got, want.Unix())
		}
	}
}

// TestCheckURLAgreesWithNetURL: every URL checkURL accepts parses with
// net/url as an absolute http(s) URL with a host.
func TestCheckURLAgreesWithNetURL(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"https://a.example/", true}, {"http://a.example", true}, {"HTTP://A.EXAMPLE:80/x?y#z", true},
		{"https://a.example:/", true}, {"https://[::1]/", true}, {"https://[::1]:443/x", true},
		{"https://例え.jp/商品?q=あ", true}, {"https://a.example/%41%e3%81%82", true},
		{"https://a_b.example/", true}, {"https://a.example/{id}|x^", true},
		{"https://", false}, {"https://:80/", false}, {"https://[::1/", false}, {"https://[xyz]/", false},
		{"https://[1.2.3.4]/", false}, {"https://a.example:65536x/", false}, {"https://a.example:123456/", false},
		{"https://u:p@a.example/", false}, {"https://a.example/ x", false}, {"https://a.example/\x7f", false},
		{"https://a.example/%4", false}, {"https://a.example/%", false}, {"https://a.example/<script>", false},
		{"https://a.example/\\x", false}, {"https://a.example/\u0085", false}, {"https://a.exa mple/", false},
		{"mailto:x@a.example", false}, {"//a.example/", false}, {"https:a.example", false},
		{"https://a.example/\xff", false}, {"https://\xff/", false},
	} {
		reason, _ := checkURL([]byte(tc.in))
		if (reason == "") != tc.ok {
			t.Errorf("checkURL(%q) = %q, want ok=%v", tc.in, reason, tc.ok)
		}
		if reason == "" {
			checkNetURL(t, tc.in)
		}
	}
}

func checkNetURL(t *testing.T, s string) {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Errorf("checkURL accepted %q, url.Parse: %v", s, err)
		return
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		t.Errorf("checkURL accepted %q: scheme %q host %q", s, u.Scheme, u.Host)
	}
}

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		in        string
		multiline bool
		want      Reason
	}{
		{"plain", false, ""}, {"日本語", false, ""}, {"a\tb", false, ReasonBadUTF8}, {"a\tb\nc\r", true, ""},
		{"a\x00", true, ReasonBadUTF8}, {"\x7f", false, ReasonBadUTF8}, {"\u009f", false, ReasonBadUTF8},
		{"\u00a0", false, ""}, {"\xc3", false, ReasonBadUTF8}, {"\xed\xa0\x80", false, ReasonBadUTF8},
		{strings.Repeat("a", 11), false, ReasonFieldTooLong},
	} {
		if got, _ := checkText([]byte(tc.in), 10, tc.multiline); got != tc.want {
			t.Errorf("checkText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCutUTF8(t *testing.T) {
	s := []byte("aé日本")
	for n, want := range map[int]string{0: "", 1: "a", 2: "a", 3: "aé", 4: "aé", 5: "aé", 6: "aé日", 100: "aé日本"} {
		if got := string(cutUTF8(s, n)); got != want {
			t.Errorf("cutUTF8(%d) = %q, want %q", n, got, want)
		}
	}
	bin := bytes.Repeat([]byte{0x80}, 10)
	if got := cutUTF8(bin, 5); len(got) != 5 {
		t.Errorf("cutUTF8 of continuation bytes = %d bytes, want 5", len(got))
	}
}

// TestLineBufferBounded: a huge line never grows the record buffer beyond
// MaxLineBytes plus a line-break allowance.
func TestLineBufferBounded(t *testing.T) {
	for _, format := range []Format{CSV, JSONL} {
		pre := ""
		if format == CSV {
			pre = "id,group_id,op\n"
		}
		src := io.MultiReader(strings.NewReader(pre+"\"1,"), io.LimitReader(zeros{}, 32<<20), strings.NewReader("\n1,2,delete\n"))
		r, err := NewReader(src, "", Options{Format: format, MaxLineBytes: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var row Row
		if err := r.Next(&row); err == nil {
			t.Fatal("huge line accepted")
		}
		if cap(r.rec) > 64<<10 {
			t.Errorf("%v: record buffer grew to %d bytes", format, cap(r.rec))
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestASCIIClean8(t *testing.T) {
	base := []byte("abcdefgh")
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			w := append([]byte(nil), base...)
			w[pos] = byte(c)
			want := c >= 0x20 && c < 0x7f
			if got := asciiClean8(binary.LittleEndian.Uint64(w)); got != want {
				t.Fatalf("byte %#x at %d: got %v", c, pos, got)
			}
		}
	}
}
