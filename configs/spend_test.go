package configs

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestSpendSectionsDefaults(t *testing.T) {
	c := mustDefault(t)
	if got, want := c.Spend, (Spend{Store: SpendStoreAuto, FlushInterval: time.Second, Flushers: 4,
		ThresholdImps: 1000, BudgetFraction: 0.01, FlushTimeout: 2 * time.Second, JournalMaxPending: 10_000_000,
		StartupReadTimeout: 10 * time.Second, ExposureWindow: 5 * time.Minute, WinRateFloor: 0.01, InstanceLease: 10 * time.Second}); got != want {
		t.Errorf("spend defaults %+v, want %+v", got, want)
	}
	if got, want := c.Redis, (Redis{Prefix: "rtbd:"}); got != want {
		t.Errorf("redis defaults %+v, want %+v", got, want)
	}
	if got, want := c.Aerospike, (Aerospike{Namespace: "rtbd"}); got != want {
		t.Errorf("aerospike defaults %+v, want %+v", got, want)
	}
	if got, want := c.Fraud, (Fraud{CheckInterval: 10 * time.Second, ReloadInterval: 5 * time.Minute}); got != want {
		t.Errorf("fraud defaults %+v, want %+v", got, want)
	}
	if got, want := c.Notice, (Notice{ReplayWindow: 24 * time.Hour, ClockSkew: 5 * time.Minute}); got != want {
		t.Errorf("notice defaults %+v, want %+v", got, want)
	}
}

func TestSpendSectionsValidate(t *testing.T) {
	key := base64.URLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for _, tc := range []struct {
		key, value, want string // want "" = valid
	}{
		{"spend.store", "redis", ""},
		{"spend.store", "mysql", "spend.store: must be one of"},
		{"spend.flushers", "0", "spend.flushers: must be >= 1"},
		{"spend.instance_lease", "500ms", "spend.instance_lease: must be between 1s and 10m"},
		{"spend.instance_lease", "30s", ""},
		{"spend.budget_fraction", "1.5", "spend.budget_fraction: must be between 0 and 1"},
		{"spend.flush_timeout", "0s", "spend.flush_timeout: must be > 0"},
		{"spend.instance_id", "bidder-1.eu_west", ""},
		{"spend.instance_id", "bidder 1", "spend.instance_id: must be 1-32 of [0-9A-Za-z._-]"},
		{"spend.instance_id", "a123456789012345678901234567890123", "spend.instance_id: must be 1-32"},
		{"spend.journal_dir", "/var/lib/rtbd/journal", ""},
		{"spend.journal_dir", " /x", "spend.journal_dir: must not start or end with spaces"},
		{"spend.journal_max_pending", "0", "spend.journal_max_pending: must be >= 1"},
		{"notice.clock_skew", "0s", ""},
		{"notice.clock_skew", "-1s", "notice.clock_skew: must be between 0 and 24h"},
		{"spend.startup_read_timeout", "0s", "spend.startup_read_timeout: must be > 0"},
		{"spend.exposure_window", "0s", "spend.exposure_window: must be > 0"},
		{"spend.win_rate_floor", "0", "spend.win_rate_floor: must be > 0 and <= 1"},
		{"spend.win_rate_floor", "1", ""},
		{"bidder.shutdown_delay", "0s", ""},
		{"bidder.shutdown_delay", "-1s", "bidder.shutdown_delay: must be between 0 and 10m"},
		{"user.store", "redis", ""},
		{"user.store", "memcached", "user.store: must be one of"},
		{"user.max_groups", "0", "user.max_groups: must be >= 1"},
		{"user.max_products_per_group", "0", "user.max_products_per_group: must be >= 1"},
		{"user.ttl", "10h", ""},
		{"user.ttl", "500ms", "user.ttl: must be at least 1s"},
		{"redis.addr", "127.0.0.1:6379", ""},
		{"redis.addr", "localhost", "redis.addr: must be host:port"},
		{"redis.prefix", "", "redis.prefix: must be 1-64"},
		{"aerospike.hosts", "10.0.0.1:3000,10.0.0.2", ""},
		{"aerospike.hosts", "a,,b", "aerospike.hosts: want host"},
		{"aerospike.namespace", "", "aerospike.namespace: must not be empty"},
		{"fraud.check_interval", "0s", "fraud.check_interval: must be > 0"},
		{"notice.replay_window", "0s", "notice.replay_window: must be > 0"},
		{"notice.price_keys.encryption", key, "notice.price_keys.encryption: encryption and integrity must be set together"},
		{"notice.price_keys.integrity", "!!!", "notice.price_keys.encryption: encryption and integrity"},
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
			t.Errorf("%s=%q: error %v, want one containing %q", tc.key, tc.value, err, tc.want)
		}
	}
	c := mustDefault(t)
	_ = c.Set("notice.price_keys.encryption", key)
	_ = c.Set("notice.price_keys.integrity", "not base64!")
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "notice.price_keys.integrity: must be base64") {
		t.Errorf("bad integrity key: %v", err)
	}
	_ = c.Set("notice.price_keys.integrity", key)
	if err := c.Validate(); err != nil {
		t.Errorf("both keys: %v", err)
	}
}

// TestJournalDir: spend.journal_dir, or bidder.data_dir/journal when unset.
func TestJournalDir(t *testing.T) {
	c := mustDefault(t)
	_ = c.Set("bidder.data_dir", "/srv/rtbd/bidder")
	if got, want := c.JournalDir(), "/srv/rtbd/bidder/journal"; got != want {
		t.Errorf("JournalDir %q, want %q", got, want)
	}
	_ = c.Set("spend.journal_dir", "/fast/journal")
	if got := c.JournalDir(); got != "/fast/journal" {
		t.Errorf("JournalDir %q, want spend.journal_dir", got)
	}
}
