package bidder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/internal/metrictest"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// wantCurrency is the response currency a request should get, by the
// documented rule: the bidder's currency without cur; else the first
// imp floor's currency when cur lists it (any case) and has a rate; else
// the bidder's currency when listed; else the first listed with a rate.
func wantCurrency(f *fixture, req *openrtb2.BidRequest) string {
	own := f.b.opts.Currency
	if len(req.Cur) == 0 {
		return own
	}
	known := func(c string) bool { return f.b.rates().Known(c) }
	listed := func(c string) bool {
		for _, x := range req.Cur {
			if strings.EqualFold(x, c) {
				return true
			}
		}
		return false
	}
	for _, imp := range req.Imp {
		if imp.BidFloor > 0 {
			if fc := strings.ToUpper(imp.BidFloorCur); fc != "" && listed(fc) && known(fc) {
				return fc
			}
			break
		}
	}
	if listed(own) {
		return own
	}
	for _, c := range req.Cur {
		if _, ok := money.Code(c); ok && known(c) {
			return strings.ToUpper(c)
		}
	}
	return ""
}

// convertFloor converts a floor as the bidder should: the request's
// ext.prebid.currency.rates first, then (unless usepbsrates is false) the
// bidder's own rates.
func convertFloor(f *fixture, req *openrtb2.BidRequest, floor int64, from, to string) (int64, bool) {
	if floor <= 0 {
		return 0, true
	}
	var ext struct {
		Prebid struct {
			Currency *struct {
				Rates       map[string]map[string]json.Number `json:"rates"`
				UsePBSRates *bool                             `json:"usepbsrates"`
			} `json:"currency"`
		} `json:"prebid"`
	}
	if len(req.Ext) > 0 {
		_ = json.Unmarshal(req.Ext, &ext)
	}
	if c := ext.Prebid.Currency; c != nil {
		var p money.Pairs
		for base, tos := range c.Rates {
			for to, n := range tos {
				v, err := n.Float64()
				if err == nil {
					_ = p.Add(base, to, v)
				}
			}
		}
		if v, ok := p.ConvertUp(floor, from, to); ok {
			return v, true
		}
		if c.UsePBSRates != nil && !*c.UsePBSRates {
			return 0, false
		}
	}
	return f.b.rates().ConvertUp(floor, from, to)
}

// currencyExt is a request ext carrying an exchange's rates, as Prebid
// Server forwards them; usePBS nil leaves usepbsrates out.
func currencyExt(rates map[string]map[string]any, usePBS *bool) map[string]any {
	cur := map[string]any{"rates": rates}
	if usePBS != nil {
		cur["usepbsrates"] = *usePBS
	}
	return map[string]any{"prebid": map[string]any{"currency": cur}}
}

// TestRequestCurrencies: currency codes in any case, floors converted with
// the request's own rates (ext.prebid.currency.rates) before the
// bidder's, usepbsrates: false using only the request's, lookups direct,
// inverse and through one intermediate currency, and the bid made in the
// floor's currency when cur allows it. The fixture bids 1.50 USD for
// userBulk; its own rate is 1 EUR = 1.08 USD.
func TestRequestCurrencies(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.NBRBody = true })
	base := readFile(t, filepath.Join(specDir, "request-1-simple-banner.json"))
	imp := func(floor float64, cur string) []any {
		return []any{map[string]any{"id": "1", "bidfloor": floor, "bidfloorcur": cur, "banner": map[string]any{"w": 300, "h": 250}}}
	}
	no := false
	// 1 EUR = 1/0.85 = 1.1765 USD: dearer than the bidder's 1.08.
	dearEUR := map[string]map[string]any{"USD": {"EUR": 0.85}}
	// 1 EUR = 1.00 USD: cheaper (direct pair EUR -> USD).
	cheapEUR := map[string]map[string]any{"EUR": {"USD": 1.0}}
	// Only through GBP: 1 EUR = 1.25 / 1.2 = 1.0417 USD.
	viaGBP := map[string]map[string]any{"GBP": {"USD": 1.25, "EUR": 1.2}}
	for _, tc := range []struct {
		name  string
		edits []any
		nbr   int
		cur   string
		price float64
	}{
		{"cur in lower case", []any{"cur", []string{"usd"}}, 0, "USD", 1.5},
		{"floor currency in lower case", []any{"cur", []string{"usd"}, "imp", imp(1.35, "eur")}, 0, "USD", 1.5},
		// 1.35 EUR: 1.458 USD by the bidder's rate (bid), 1.588 by the request's (below the floor).
		{"own rates: bid", []any{"cur", []string{"usd"}, "imp", imp(1.35, "eur")}, 0, "USD", 1.5},
		{"request rates raise the floor", []any{"cur", []string{"usd"}, "imp", imp(1.35, "eur"), "ext", currencyExt(dearEUR, nil)}, 506, "", 0},
		// 1.45 EUR: 1.566 USD by the bidder's rate (below), 1.45 by the request's (bid).
		{"own rates: below the floor", []any{"cur", []string{"USD"}, "imp", imp(1.45, "EUR")}, 506, "", 0},
		{"request rates lower the floor", []any{"cur", []string{"USD"}, "imp", imp(1.45, "EUR"), "ext", currencyExt(cheapEUR, nil)}, 0, "USD", 1.5},
		{"inverse pair, any case", []any{"cur", []string{"usd"}, "imp", imp(1.35, "eur"), "ext", currencyExt(map[string]map[string]any{"usd": {"eur": 0.85}}, nil)}, 506, "", 0},
		// usepbsrates false: the request's rates only.
		{"usepbsrates false, pair missing", []any{"cur", []string{"USD"}, "imp", imp(1.0, "EUR"), "ext", currencyExt(map[string]map[string]any{"USD": {"GBP": 0.8}}, &no)}, 506, "", 0},
		{"usepbsrates true, pair missing: own rates", []any{"cur", []string{"USD"}, "imp", imp(1.0, "EUR"), "ext", currencyExt(map[string]map[string]any{"USD": {"GBP": 0.8}}, nil)}, 0, "USD", 1.5},
		{"usepbsrates false, pair present", []any{"cur", []string{"USD"}, "imp", imp(1.45, "EUR"), "ext", currencyExt(cheapEUR, &no)}, 0, "USD", 1.5},
		{"usepbsrates false, no floor", []any{"cur", []string{"USD"}, "imp", imp(0, "EUR"), "ext", currencyExt(map[string]map[string]any{}, &no)}, 0, "USD", 1.5},
		// Through an intermediate currency (GBP), with usepbsrates false so
		// the bidder's own EUR rate cannot be what decides.
		{"intermediate: bid", []any{"cur", []string{"USD"}, "imp", imp(1.40, "EUR"), "ext", currencyExt(viaGBP, &no)}, 0, "USD", 1.5},
		{"intermediate: below the floor", []any{"cur", []string{"USD"}, "imp", imp(1.45, "EUR"), "ext", currencyExt(viaGBP, &no)}, 506, "", 0},
		// Bad entries are ignored, the good ones used.
		{"bad entries ignored", []any{"cur", []string{"USD"}, "imp", imp(1.35, "EUR"), "ext", currencyExt(map[string]map[string]any{
			"USD": {"EUR": 0.85, "GBP": -1, "XAU": 2, "JPY": "150"}, "EUR": {"USD": 0}, "SEK": {"NOK": nil}}, nil)}, 506, "", 0},
		// Bid in the floor's currency when cur lists it: 1.50 USD = 1.388888 EUR.
		{"bid in bidfloorcur", []any{"cur", []string{"usd", "eur"}, "imp", imp(1.0, "eur")}, 0, "EUR", 1.388888},
		{"bidfloorcur not in cur", []any{"cur", []string{"EUR", "USD"}, "imp", imp(100, "JPY")}, 0, "USD", 1.5},
		{"no cur: the bidder's currency", []any{"cur", nil, "imp", imp(1.0, "EUR")}, 0, "USD", 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := withUser(t, base, userBulk, tc.edits...)
			r := f.bid(body)
			var resp openrtb2.BidResponse
			if err := json.Unmarshal(r.body, &resp); err != nil {
				t.Fatalf("%v: %s", err, r.body)
			}
			if tc.nbr != 0 {
				if resp.NBR == nil || int(*resp.NBR) != tc.nbr {
					t.Fatalf("%s, want nbr %d", r.body, tc.nbr)
				}
				return
			}
			_, bids := checkResponse(t, f, body, r, userBulk)
			if resp.Cur != tc.cur || len(bids) != 1 || bids[0].bid.Price != tc.price {
				t.Fatalf("cur %q, %d bids (%s); want %s %v", resp.Cur, len(bids), r.body, tc.cur, tc.price)
			}
			// checkResponse has checked the tokens carry resp.Cur.
		})
	}
	if n := f.counter("rtbd_fx_request_rates_total", "result", "invalid"); n != 1 {
		t.Errorf("rtbd_fx_request_rates_total{result=invalid} = %v, want 1", n)
	}
	if n := f.counter("rtbd_fx_request_rates_total", "result", "ok"); n < 8 {
		t.Errorf("rtbd_fx_request_rates_total{result=ok} = %v, want >= 8", n)
	}
}

// decodeCurrencyExt decodes ext as a bid request's ext, as the bid path
// does; ok is false when that request does not decode.
func decodeCurrencyExt(ext []byte) (c *rtb.CurrencyExt, ok bool) {
	body := append([]byte(`{"id":"r","imp":[{"id":"1","banner":{}}],"ext":`), ext...)
	body = append(body, '}')
	var req openrtb2.BidRequest
	var e rtb.Exts
	if err := (&rtb.Decoder{}).DecodeRequestExts(body, &req, &e); err != nil {
		return nil, false
	}
	return &e.Currency, true
}

func mustCurrencyExt(t *testing.T, ext []byte) *rtb.CurrencyExt {
	t.Helper()
	c, ok := decodeCurrencyExt(ext)
	if !ok {
		t.Fatalf("a request with ext %.100s does not decode", ext)
	}
	return c
}

// TestRequestRatesBounded: a request with more rates than money.MaxPairs
// keeps the first ones and is counted truncated.
func TestRequestRatesBounded(t *testing.T) {
	var rr requestRates
	var b strings.Builder
	b.WriteString(`{"prebid":{"currency":{"rates":{"USD":{`)
	codes := money.Codes()
	for i, c := range codes {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%d.5", c, i+1)
	}
	b.WriteString(`}},"usepbsrates":false}}}`)
	result, present := rr.read(mustCurrencyExt(t, []byte(b.String())))
	if !present || result != fxRatesTruncated || rr.pairs.Len() != money.MaxPairs || rr.usePBS {
		t.Errorf("read: result %s, present %v, %d pairs, usePBS %v; want truncated, %d pairs, usePBS false",
			fxRatesNames[result], present, rr.pairs.Len(), rr.usePBS, money.MaxPairs)
	}
	result, present = rr.read(mustCurrencyExt(t, []byte(`{"prebid":{"currency":{"usepbsrates":false}}}`)))
	if present || !rr.custom || rr.usePBS || rr.pairs.Len() != 0 {
		t.Errorf("currency without rates: present %v custom %v usePBS %v", present, rr.custom, rr.usePBS)
	}
	if _, ok := rr.convertFloor(&money.Rates{}, 1_000_000, "EUR", "USD"); ok {
		t.Error("usepbsrates false without rates converted a floor")
	}
	_ = result
}

// FuzzRequestRates: any ext parses without panic into a bounded table
// of valid rates, and the floor conversions stay in range.
func FuzzRequestRates(f *testing.F) {
	for _, s := range []string{
		`{"prebid":{"currency":{"rates":{"USD":{"EUR":0.92,"JPY":150}},"usepbsrates":false}}}`,
		`{"prebid":{"currency":{"rates":{"GBP":{"USD":1.25,"EUR":1.2}}}}}`,
		`{"prebid":{"currency":{"rates":{"usd":{"eur":-1,"gbp":"x"},"EUR":[1]}}}}`,
		`{"prebid":{"currency":{"rates":{"USD":{"EUR":1e400}}}}}`,
		`{"prebid":{"currency":{"rates":{"U\"D":{"EUR":1}}}}}`,
		`{"prebid":{"currency":{"rates":{"USD":{"EUR":0.9,}}}}}`,
		`{"prebid":{"currency":`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	own, _ := money.ParseRates([]string{"EUR=1.08", "JPY=0.0067"})
	f.Fuzz(func(t *testing.T, ext []byte) {
		c, ok := decodeCurrencyExt(ext)
		if !ok {
			return // the request does not decode: no bid path
		}
		var rr requestRates
		rr.read(c)
		if rr.pairs.Len() > money.MaxPairs {
			t.Fatalf("%d pairs", rr.pairs.Len())
		}
		for _, c := range [][2]string{{"EUR", "USD"}, {"USD", "EUR"}, {"JPY", "GBP"}, {"", "SEK"}} {
			if r, ok := rr.pairs.Rate(c[0], c[1]); ok && !(r > 0 && r < 1e19) {
				t.Fatalf("rate %s->%s = %v", c[0], c[1], r)
			}
			if v, ok := rr.convertFloor(&own, 1_500_000, c[0], c[1]); ok && v < 0 {
				t.Fatalf("floor %s->%s = %d", c[0], c[1], v)
			}
		}
	})
}

// writeFXFile writes a currency file with 1 USD = eur EUR, dated asOf.
func writeFXFile(t *testing.T, path string, asOf time.Time, eur float64) {
	t.Helper()
	data := fmt.Sprintf(`{"dataAsOf":%q,"conversions":{"USD":{"USD":1,"EUR":%v,"GBP":0.8}}}`, asOf.Format(time.DateOnly), eur)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFXFile: bidder.fx_file's rates go over bidder.fx_rates at start, a
// bad file is an error naming the key, a refresh swaps the rates, a failed
// refresh keeps the last good ones and is counted, and the age gauge
// shows the age by dataAsOf.
func TestFXFile(t *testing.T) {
	f := newFixture(t, nil)
	path := filepath.Join(t.TempDir(), "latest.json")
	asOf := time.Now().UTC().AddDate(0, 0, -3).Truncate(24 * time.Hour)
	writeFXFile(t, path, asOf, 0.8) // 1 EUR = 1.25 USD
	base, _ := money.ParseRates([]string{"eur=1.08", "JPY=0.0067"})
	cfg := configs.Bidder{FXFile: path, Currency: "usd", FXRefreshInterval: time.Hour, FXMaxAge: 24 * time.Hour}
	reg := prometheus.NewRegistry()
	w, rates, err := NewFXFile(cfg, base, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for cur, want := range map[string]int64{"EUR": 1_250_000, "GBP": 1_250_000, "JPY": 6700} {
		if v, ok := rates.Convert(1_000_000, cur, "USD"); !ok || v != want {
			t.Errorf("1 %s = %d USD micros (%v), want %d", cur, v, ok, want)
		}
	}
	if err := f.b.SetRates(rates); err != nil {
		t.Fatal(err)
	}
	age := metrictest.Value(t, reg, "rtbd_fx_rates_age_seconds")
	if want := time.Since(asOf).Seconds(); age < want-60 || age > want+60 {
		t.Errorf("rtbd_fx_rates_age_seconds = %v, want about %v", age, want)
	}

	// A good refresh swaps the rates; a bad one keeps them.
	writeFXFile(t, path, time.Now().UTC(), 0.5) // 1 EUR = 2 USD
	w.refresh(f.b)
	if v, _ := f.b.rates().Convert(1_000_000, "EUR", "USD"); v != 2_000_000 {
		t.Errorf("after a refresh 1 EUR = %d USD micros, want 2000000", v)
	}
	if err := os.WriteFile(path, []byte(`{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	w.refresh(f.b)
	if v, _ := f.b.rates().Convert(1_000_000, "EUR", "USD"); v != 2_000_000 {
		t.Errorf("after a failed refresh 1 EUR = %d USD micros, want the last good 2000000", v)
	}
	if ok, bad := metrictest.Value(t, reg, "rtbd_fx_refresh_total", "result", "ok"), metrictest.Value(t, reg, "rtbd_fx_refresh_total", "result", "error"); ok != 1 || bad != 1 {
		t.Errorf("refreshes ok %v error %v, want 1 and 1", ok, bad)
	}
	if age := metrictest.Value(t, reg, "rtbd_fx_rates_age_seconds"); age > 2*86400 {
		t.Errorf("age %v after the refresh, want under two days", age)
	}

	// Bad files at start: an error naming the key.
	for name, data := range map[string]string{
		"missing":         "",
		"not json":        "{",
		"no dataAsOf":     `{"conversions":{"USD":{"EUR":0.9}}}`,
		"no rate for USD": `{"dataAsOf":"2026-12-01","conversions":{"SEK":{"NOK":1.1}}}`,
	} {
		p := filepath.Join(t.TempDir(), "fx.json")
		if name != "missing" {
			if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		c := cfg
		c.FXFile, c.Currency = p, "SEK"
		if _, _, err := NewFXFile(c, base, nil, nil); err == nil || !strings.Contains(err.Error(), "bidder.fx_file") {
			t.Errorf("%s: %v, want an error naming bidder.fx_file", name, err)
		}
	}
}
