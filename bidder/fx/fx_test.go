package fx

import (
	"errors"
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

// target keeps the rates of the last accepted refresh, refusing rates
// without its currency, as a Bidder does.
type target struct {
	currency string
	rates    money.Rates
}

func (t *target) SetRates(r money.Rates) error {
	if !r.Known(t.currency) {
		return errors.New("no rate for " + t.currency)
	}
	t.rates = r
	return nil
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
	var rr RequestRates
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
	result, present := rr.Read(mustCurrencyExt(t, []byte(b.String())))
	if !present || result != RatesTruncated || rr.pairs.Len() != money.MaxPairs || rr.usePBS {
		t.Errorf("read: result %s, present %v, %d pairs, usePBS %v; want truncated, %d pairs, usePBS false",
			RatesNames[result], present, rr.pairs.Len(), rr.usePBS, money.MaxPairs)
	}
	result, present = rr.Read(mustCurrencyExt(t, []byte(`{"prebid":{"currency":{"usepbsrates":false}}}`)))
	if present || !rr.custom || rr.usePBS || rr.pairs.Len() != 0 {
		t.Errorf("currency without rates: present %v custom %v usePBS %v", present, rr.custom, rr.usePBS)
	}
	if _, ok := rr.ConvertFloor(&money.Rates{}, 1_000_000, "EUR", "USD"); ok {
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
		var rr RequestRates
		rr.Read(c)
		if rr.pairs.Len() > money.MaxPairs {
			t.Fatalf("%d pairs", rr.pairs.Len())
		}
		for _, c := range [][2]string{{"EUR", "USD"}, {"USD", "EUR"}, {"JPY", "GBP"}, {"", "SEK"}} {
			if r, ok := rr.pairs.Rate(c[0], c[1]); ok && !(r > 0 && r < 1e19) {
				t.Fatalf("rate %s->%s = %v", c[0], c[1], r)
			}
			if v, ok := rr.ConvertFloor(&own, 1_500_000, c[0], c[1]); ok && v < 0 {
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
	b := &target{currency: "USD"}
	path := filepath.Join(t.TempDir(), "latest.json")
	asOf := time.Now().UTC().AddDate(0, 0, -3).Truncate(24 * time.Hour)
	writeFXFile(t, path, asOf, 0.8) // 1 EUR = 1.25 USD
	base, _ := money.ParseRates([]string{"eur=1.08", "JPY=0.0067"})
	cfg := configs.Bidder{FXFile: path, Currency: "usd", FXRefreshInterval: time.Hour, FXMaxAge: 24 * time.Hour}
	reg := prometheus.NewRegistry()
	w, rates, err := NewFile(cfg, base, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for cur, want := range map[string]int64{"EUR": 1_250_000, "GBP": 1_250_000, "JPY": 6700} {
		if v, ok := rates.Convert(1_000_000, cur, "USD"); !ok || v != want {
			t.Errorf("1 %s = %d USD micros (%v), want %d", cur, v, ok, want)
		}
	}
	if err := b.SetRates(rates); err != nil {
		t.Fatal(err)
	}
	age := metrictest.Value(t, reg, "rtbd_fx_rates_age_seconds")
	if want := time.Since(asOf).Seconds(); age < want-60 || age > want+60 {
		t.Errorf("rtbd_fx_rates_age_seconds = %v, want about %v", age, want)
	}

	// A good refresh swaps the rates; a bad one keeps them.
	writeFXFile(t, path, time.Now().UTC(), 0.5) // 1 EUR = 2 USD
	w.refresh(b)
	if v, _ := b.rates.Convert(1_000_000, "EUR", "USD"); v != 2_000_000 {
		t.Errorf("after a refresh 1 EUR = %d USD micros, want 2000000", v)
	}
	if err := os.WriteFile(path, []byte(`{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	w.refresh(b)
	if v, _ := b.rates.Convert(1_000_000, "EUR", "USD"); v != 2_000_000 {
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
		if _, _, err := NewFile(c, base, nil, nil); err == nil || !strings.Contains(err.Error(), "bidder.fx_file") {
			t.Errorf("%s: %v, want an error naming bidder.fx_file", name, err)
		}
	}
}
