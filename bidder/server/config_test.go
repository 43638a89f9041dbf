package server

import (
	"encoding/base64"
	"testing"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/configs"
)

// TestBillingFromConfig: exchanges.NAME.billing and price_keys reach the
// Bidder's exchanges (keys decoded from base64); the default exchange bills
// on burl with no keys of its own.
func TestBillingFromConfig(t *testing.T) {
	cfg, err := configs.Default()
	if err != nil {
		t.Fatal(err)
	}
	enc, integ := base64.URLEncoding.EncodeToString([]byte("enc-key")), base64.StdEncoding.EncodeToString([]byte("int-key"))
	cfg.Exchanges = configs.Exchanges{
		"pbs": {Billing: "render", PriceKeys: configs.PriceKeys{Encryption: enc, Integrity: integ}},
		"ssp": {Billing: "nurl"},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	xs, _ := userIDFromConfig(cfg)
	got := map[string]bidder.Exchange{}
	for _, x := range xs {
		got[x.Name] = x
	}
	if x := got["pbs"]; x.Billing != token.BillingRender || string(x.PriceEncryptionKey) != "enc-key" || string(x.PriceIntegrityKey) != "int-key" {
		t.Errorf("pbs: %+v", x)
	}
	if x := got["ssp"]; x.Billing != token.BillingNurl || x.PriceEncryptionKey != nil {
		t.Errorf("ssp: %+v", x)
	}
	if x := got[bidder.DefaultExchange]; x.Billing != token.BillingBurl || x.PriceEncryptionKey != nil {
		t.Errorf("default: %+v", x)
	}
}

func TestRateLimitsFromConfig(t *testing.T) {
	cfg, err := configs.Default()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Bidder.RateLimits
	c.TrustedProxies = []string{"10.0.0.0/8", "192.0.2.1", "2001:db8::/32"}
	o := rateLimitsFromConfig(c)
	if o.Event.Rate != c.Event.Rate || o.Event.Burst != c.Event.Burst || o.Match.Rate != c.Match.Rate || o.Sources != c.Sources {
		t.Errorf("limits %+v from %+v", o, c)
	}
	want := []string{"10.0.0.0/8", "192.0.2.1/32", "2001:db8::/32"}
	if len(o.TrustedProxies) != len(want) {
		t.Fatalf("trusted %v, want %v", o.TrustedProxies, want)
	}
	for i, p := range o.TrustedProxies {
		if p.String() != want[i] {
			t.Errorf("trusted[%d] %s, want %s", i, p, want[i])
		}
	}
}

// TestSecureImpsRefused: rtbd warns at start when secure imps have no
// https base (neither public_url nor secure_public_url).
func TestSecureImpsRefused(t *testing.T) {
	for _, tc := range []struct {
		public, secure string
		refused        bool
	}{
		{"http://127.0.0.1:8080", "", true},
		{"http://127.0.0.1:8080", "https://bid.example.com", false},
		{"https://bid.example.com", "", false},
	} {
		if got := secureImpsRefused(configs.Bidder{PublicURL: tc.public, SecurePublicURL: tc.secure}); got != tc.refused {
			t.Errorf("secureImpsRefused(%q, %q) = %v, want %v", tc.public, tc.secure, got, tc.refused)
		}
	}
}
