package configs

import (
	"strings"
	"testing"
	"time"
)

// TestBidderValidate checks each rule of Bidder.Validate: one bad setting
// gives one problem naming its key.
func TestBidderValidate(t *testing.T) {
	tests := []setting{
		{"bidder.public_url", "https://bid.example.com", ""},
		{"bidder.public_url", "http://10.0.0.1:8080/rtb", ""},
		{"bidder.public_url", "bid.example.com", "bidder.public_url: must start with http:// or https://"},
		{"bidder.public_url", "http://", "bidder.public_url: must name a host"},
		{"bidder.public_url", "http://x/?a=b", "bidder.public_url: must have no query"},
		{"bidder.secure_public_url", "", ""},
		{"bidder.secure_public_url", "https://bid.example.com", ""},
		{"bidder.secure_public_url", "https://bid.example.com:8443/rtb", ""},
		{"bidder.secure_public_url", "http://bid.example.com", "bidder.secure_public_url: must start with https://"},
		{"bidder.secure_public_url", "bid.example.com", "bidder.secure_public_url: must start with http:// or https://"},
		{"bidder.secure_public_url", "https://x/#f", "bidder.secure_public_url: must have no query"},
		{"bidder.data_dir", "", "bidder.data_dir: must not be empty"},
		{"bidder.campaigns", " ", "bidder.campaigns: must not be empty"},
		{"bidder.seat", "", "bidder.seat: must be 1-64 characters"},
		{"bidder.seat", `a"b`, "bidder.seat: must be 1-64 characters"},
		{"bidder.currency", "JPY", ""},
		{"bidder.currency", "usd", ""},
		{"bidder.currency", "chf", "bidder.currency: CHF has no rate in fx_rates"},
		{"bidder.currency", "CHF", "bidder.currency: CHF has no rate in fx_rates"},
		{"bidder.currency", "XAU", "bidder.currency: must be a 3-letter ISO 4217 code"},
		{"bidder.fx_rates", "JPY=0.0067, EUR=1.08", ""},
		{"bidder.fx_rates", "", ""},
		{"bidder.fx_rates", "JPY:0.0067", "bidder.fx_rates[0]: want CUR=rate"},
		{"bidder.fx_rates", "EUR=1.1,jpy=0.0067", ""},
		{"bidder.fx_rates", "EUR=1.1,eur=1.2", "bidder.fx_rates[1]: EUR listed twice"},
		{"bidder.fx_rates", "EUR=1.1,jpz=0.0067", "bidder.fx_rates[1]: currency must be a 3-letter code from ISO 4217"},
		{"bidder.fx_rates", "JPY=0", "bidder.fx_rates[0]: rate must be a number > 0"},
		{"bidder.fx_rates", "JPY=-1", "bidder.fx_rates[0]: rate must be a number > 0"},
		{"bidder.fx_rates", "JPY=NaN", "bidder.fx_rates[0]: rate must be a number > 0"},
		{"bidder.fx_rates", "JPY=2e9", "bidder.fx_rates[0]: rate must be a number > 0"},
		{"bidder.fx_rates", "XAU=2000", "bidder.fx_rates[0]: currency must be a 3-letter code from ISO 4217"},
		{"bidder.fx_rates", "USD=1", "bidder.fx_rates[0]: USD is the base"},
		{"bidder.fx_rates", "JPY=1,JPY=2", "bidder.fx_rates[1]: JPY listed twice"},
		{"bidder.default_tmax", "0s", "bidder.default_tmax: must be > 0"},
		{"bidder.max_tmax", "-1ms", "bidder.max_tmax: must be > 0"},
		{"bidder.tmax_margin", "0s", "bidder.tmax_margin: must be > 0"},
		{"bidder.tmax_margin", "499ms", "bidder.tmax_margin: tmax_margin (499ms) + min_budget (3ms) leaves no time"},
		{"bidder.tmax_margin_ratio", "0", ""},
		{"bidder.tmax_margin_ratio", "0.9", ""},
		{"bidder.tmax_margin_ratio", "0.95", "bidder.tmax_margin_ratio: must be between 0 (off) and 0.9, got 0.95"},
		{"bidder.tmax_margin_ratio", "-0.1", "bidder.tmax_margin_ratio: must be between 0 (off) and 0.9, got -0.1"},
		{"bidder.min_budget", "0s", "bidder.min_budget: must be > 0"},
		{"bidder.max_body_bytes", "100", "bidder.max_body_bytes: must be >= 1024, got 100"},
		{"bidder.max_drain_bytes", "-1", "bidder.max_drain_bytes: must be >= 0, got -1"},
		{"bidder.max_in_flight", "0", "bidder.max_in_flight: must be >= 1, got 0"},
		{"bidder.overload_response", "503", ""},
		{"bidder.click_links", "absolute", ""},
		{"bidder.click_links", "relative", `bidder.click_links: must be one of base, absolute; got "relative"`},
		{"bidder.overload_response", "drop", `bidder.overload_response: must be one of nobid, 503; got "drop"`},
		{"bidder.nbr_body", "true", ""},
		{"bidder.gzip_min_bytes", "0", ""},
		{"bidder.gzip_min_bytes", "-1", "bidder.gzip_min_bytes: must be >= 0"},
		{"bidder.gdpr_vendor_id", "1126", ""},
		{"bidder.gdpr_vendor_id", "70000", "bidder.gdpr_vendor_id: must be <= 65535"},
		{"bidder.token_keys", "0123456789abcdef,fedcba9876543210", ""},
		{"bidder.token_keys", "0123456789abcdef,short", "bidder.token_keys[1]: must be at least 16 bytes, got 5"},
		{"bidder.notice_ttl", "0s", "bidder.notice_ttl: must be > 0"},
		{"bidder.click_ttl", "0s", "bidder.click_ttl: must be > 0"},
		{"bidder.event_timeout", "0s", "bidder.event_timeout: must be > 0"},
		{"bidder.admission_latency", "0s", ""},
		{"bidder.admission_latency", "-1ms", "bidder.admission_latency: must be between 0 (off) and 10s, got -1ms"},
		{"bidder.admission_interval", "0s", "bidder.admission_interval: must be between 1ms and 1m, got 0s"},
		{"bidder.gc_floor_mb", "0", ""},
		{"bidder.gc_floor_mb", "-1", "bidder.gc_floor_mb: must be >= 0, got -1"},
		{"bidder.access_log_sample", "0", ""},
		{"bidder.access_log_sample", "-2", "bidder.access_log_sample: must be >= 0"},
		{"bidder.read_timeout", "0s", "bidder.read_timeout: must be > 0"},
		{"bidder.write_timeout", "0s", "bidder.write_timeout: must be > 0"},
		{"bidder.idle_timeout", "0s", "bidder.idle_timeout: must be > 0"},
		{"bidder.shutdown_timeout", "0s", "bidder.shutdown_timeout: must be > 0"},
		{"bidder.user_cache_mb", "0", "bidder.user_cache_mb: must be >= 1"},
	}
	checkSettings(t, tests)
}

// The overload defaults: admission control on, the GC floor off.
func TestBidderOverloadDefaults(t *testing.T) {
	c := mustDefault(t)
	if c.Bidder.GCFloorMB != 0 {
		t.Errorf("bidder.gc_floor_mb defaults to %d, want 0 (off)", c.Bidder.GCFloorMB)
	}
	if c.Bidder.AdmissionLatency <= 0 || c.Bidder.AdmissionInterval <= 0 {
		t.Errorf("bidder.admission_latency %v, admission_interval %v: want the admission control on", c.Bidder.AdmissionLatency, c.Bidder.AdmissionInterval)
	}
}

// TestBidderFXFile: with bidder.fx_file set, its refresh interval and
// maximum age must be positive, and bidder.currency may take its rate
// from the file (checked when the file loads).
func TestBidderFXFile(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	c.Bidder.FXFile = "/srv/rtbd/latest.json"
	c.Bidder.Currency = "sek" // in no fx_rates entry
	if err := c.Validate(); err != nil {
		t.Errorf("fx_file with a currency only the file may have: %v", err)
	}
	c.Bidder.FXRefreshInterval, c.Bidder.FXMaxAge = 0, -time.Hour
	err = c.Validate()
	for _, want := range []string{"bidder.fx_refresh_interval: must be > 0", "bidder.fx_max_age: must be > 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	c.Bidder.FXFile = ""
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "bidder.currency: SEK has no rate in fx_rates") {
		t.Errorf("without fx_file: %v, want bidder.currency: SEK has no rate", err)
	}
}
