package configs

import (
	"strings"
	"testing"
	"time"
)

func TestSupplyDefaults(t *testing.T) {
	c := mustDefault(t)
	if got, want := c.Supply, (Supply{RefreshInterval: 10 * time.Minute}); got != want {
		t.Errorf("supply defaults %+v, want %+v", got, want)
	}
	if c.Bidder.DSADomain != "" {
		t.Errorf("bidder.dsa_domain default %q", c.Bidder.DSADomain)
	}
}

// TestSupplyValidate: supply.refresh_interval, bidder.dsa_domain and
// exchanges.NAME.domain are checked, with the key named.
func TestSupplyValidate(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string // want "" = valid
	}{
		{"supply.dir", "/srv/rtbd/supply", ""},
		{"supply.refresh_interval", "0s", "supply.refresh_interval: must be > 0"},
		{"bidder.dsa_domain", "dsp.example", ""},
		{"bidder.dsa_domain", "DSP.example", "bidder.dsa_domain: must be a lower-case domain name"},
		{"bidder.dsa_domain", strings.Repeat("a", 97) + ".com", "bidder.dsa_domain: must be a domain name of at most 100 bytes"},
		{"bidder.dsa_domain", "localhost", "bidder.dsa_domain: must be a domain name"},
	} {
		c := mustDefault(t)
		if err := c.Set(tc.key, tc.value); err != nil {
			t.Fatalf("Set(%s, %q): %v", tc.key, tc.value, err)
		}
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s=%q: %v", tc.key, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s=%q: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	c, err := load(writeFile(t, "exchanges:\n  pbs: {domain: pbs-host.example}\n  bad: {domain: \"not a.domain\"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), `exchanges.bad.domain: must be a lower-case domain name of at most 253 bytes, got "not a.domain"`) || strings.Contains(err.Error(), "exchanges.pbs") {
		t.Errorf("exchange domains: %v", err)
	}
	if e, _ := c.Exchanges.Get("pbs"); e.Domain != "pbs-host.example" {
		t.Errorf("pbs domain %q", e.Domain)
	}
}
