package rtb

import (
	"encoding/base64"
	"strings"
	"testing"
)

var testMacros = MacroValues{
	AuctionID: "req-1", BidID: "bid-2", ImpID: "imp-3", SeatID: "seat-4", AdID: "ad-5",
	Price: "1.25", Currency: "USD", MBR: "0.8", Loss: "102", MinToWin: "1.3",
}

func TestExpandMacros(t *testing.T) {
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct{ tmpl, want string }{
		{"", ""},
		{"no macros", "no macros"},
		{"https://x/win?a=${AUCTION_ID}&b=${AUCTION_BID_ID}&i=${AUCTION_IMP_ID}&s=${AUCTION_SEAT_ID}&ad=${AUCTION_AD_ID}",
			"https://x/win?a=req-1&b=bid-2&i=imp-3&s=seat-4&ad=ad-5"},
		{"p=${AUCTION_PRICE}&c=${AUCTION_CURRENCY}&m=${AUCTION_MBR}&l=${AUCTION_LOSS}&w=${AUCTION_MIN_TO_WIN}",
			"p=1.25&c=USD&m=0.8&l=102&w=1.3"},
		{"${AUCTION_PRICE:B64}", b64("1.25")},
		{"${AUCTION_ID:B64}|${AUCTION_LOSS:B64}|${AUCTION_MIN_TO_WIN:B64}", b64("req-1") + "|" + b64("102") + "|" + b64("1.3")},
		{"${AUCTION_PRICE}${AUCTION_PRICE}", "1.251.25"},
		{"${AUCTION_MULTIPLIER}", "${AUCTION_MULTIPLIER}"},
		{"${FOO} ${} ${:B64} $AUCTION_ID {AUCTION_ID}", "${FOO} ${} ${:B64} $AUCTION_ID {AUCTION_ID}"},
		{"${AUCTION_PRICE:X}", "${AUCTION_PRICE:X}"},
		{"${AUCTION_PRICE:b64}", "${AUCTION_PRICE:b64}"},
		{"${auction_price}", "${auction_price}"},
		{"${AUCTION_PRICE", "${AUCTION_PRICE"},
		{"x${", "x${"},
		{"$", "$"},
		{"$${AUCTION_ID}", "$req-1"},
		{"${${AUCTION_ID}}", "${req-1}"},
		{"${AUCTION_ID}}", "req-1}"},
		{"<img src=\"https://t/${AUCTION_PRICE}\"/>é", "<img src=\"https://t/1.25\"/>é"},
	}
	for _, c := range cases {
		if got := string(ExpandMacros([]byte("pre:"), c.tmpl, &testMacros)); got != "pre:"+c.want {
			t.Errorf("ExpandMacros(%q) = %q, want %q", c.tmpl, got, "pre:"+c.want)
		}
		if got := string(ExpandMacros(nil, c.tmpl, nil)); got != c.tmpl {
			t.Errorf("nil values changed %q to %q", c.tmpl, got)
		}
	}
}

func TestExpandMacrosEmptyValues(t *testing.T) {
	m := MacroValues{AuctionID: "r"}
	tmpl := "a=${AUCTION_ID}&p=${AUCTION_PRICE}&p64=${AUCTION_PRICE:B64}"
	if got := string(ExpandMacros(nil, tmpl, &m)); got != "a=r&p=&p64=" {
		t.Errorf("empty values: %q", got)
	}
	m.KeepEmpty = true
	if got := string(ExpandMacros(nil, tmpl, &m)); got != "a=r&p=${AUCTION_PRICE}&p64=${AUCTION_PRICE:B64}" {
		t.Errorf("KeepEmpty: %q", got)
	}
	m = MacroValues{Price: "\xff\xfe?>", B64: base64.StdEncoding}
	if got, want := string(ExpandMacros(nil, "${AUCTION_PRICE:B64}", &m)), base64.StdEncoding.EncodeToString([]byte(m.Price)); got != want {
		t.Errorf("StdEncoding: %q, want %q", got, want)
	}
}

// expandMacrosRef is a plain reference implementation for the fuzz test:
// at each '$' try every known name literally.
func expandMacrosRef(tmpl string, m *MacroValues) string {
	names := []string{"AUCTION_ID", "AUCTION_BID_ID", "AUCTION_IMP_ID", "AUCTION_SEAT_ID", "AUCTION_AD_ID",
		"AUCTION_PRICE", "AUCTION_CURRENCY", "AUCTION_MBR", "AUCTION_LOSS", "AUCTION_MIN_TO_WIN"}
	var out strings.Builder
	for i := 0; i < len(tmpl); {
		matched := false
		for _, n := range names {
			v, _ := m.lookup(n)
			if strings.HasPrefix(tmpl[i:], "${"+n+"}") {
				out.WriteString(v)
				i += len(n) + 3
				matched = true
				break
			}
			if strings.HasPrefix(tmpl[i:], "${"+n+":B64}") {
				out.WriteString(base64.RawURLEncoding.EncodeToString([]byte(v)))
				i += len(n) + 7
				matched = true
				break
			}
		}
		if !matched {
			out.WriteByte(tmpl[i])
			i++
		}
	}
	return out.String()
}
