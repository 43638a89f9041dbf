package configs

import (
	"strings"
	"testing"
	"time"
)

func TestRecordsDefaults(t *testing.T) {
	c := mustDefault(t)
	want := Records{Files: true, RollInterval: time.Minute, RollBytes: 128 << 20, Retention: 168 * time.Hour,
		ViewRetention: 168 * time.Hour, BufferBytes: 64 << 20, NoBidSample: 100, ChargeMaxPending: 10_000_000,
		Kafka: RecordsKafka{TopicPrefix: "rtbd.records.", DeliveryTimeout: 10 * time.Second}}
	if c.Records != want {
		t.Errorf("records defaults %+v, want %+v", c.Records, want)
	}
	if got := c.RecordsDir(); got != "data/bidder/records" && got != "./data/bidder/records" {
		t.Errorf("records dir %q, want bidder.data_dir/records", got)
	}
}

func TestRecordsValidate(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string // want "" = valid
	}{
		{"records.roll_interval", "0s", "records.roll_interval: must be > 0"},
		{"records.roll_bytes", "10", "records.roll_bytes: must be >= 1024"},
		{"records.retention", "0s", "records.retention: must be > 0"},
		{"records.view_retention", "1h", "records.view_retention: must be at least records.retention"},
		{"records.view_retention", "720h", ""},
		{"records.buffer_bytes", "100", "records.buffer_bytes: must be >= 65536"},
		{"records.nobid_sample", "-1", "records.nobid_sample: must be >= 0"},
		{"records.nobid_sample", "0", ""},
		{"records.charge_max_pending", "0", "records.charge_max_pending: must be >= 1"},
		{"records.kafka.brokers", "10.0.0.1:9092,10.0.0.2:9092", ""},
		{"records.kafka.brokers", "kafka", "records.kafka.brokers: must be host:port"},
		{"records.kafka.topic_prefix", "a b", "records.kafka.topic_prefix: must be of [0-9A-Za-z._-]"},
		{"records.kafka.delivery_timeout", "0s", "records.kafka.delivery_timeout: must be > 0"},
		{"records.dir", " /x", "records.dir: must not start or end with spaces"},
	} {
		c := mustDefault(t)
		if err := c.Set(tc.key, tc.value); err != nil {
			t.Fatalf("set %s=%s: %v", tc.key, tc.value, err)
		}
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s=%q: %v", tc.key, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s=%q: error %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
}
