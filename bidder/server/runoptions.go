package server

import (
	"strings"

	"github.com/rtbd/rtbd/overload"

	"github.com/rtbd/rtbd/bidder/campaign/pgsource"
	"github.com/rtbd/rtbd/bidder/fraud"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/journal"
	userpebble "github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/userstores"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
	"github.com/rtbd/rtbd/records/kafkasink"
)

// The settings Start hands to each package, one function per package's
// Options: the configured values only (stores, loggers, registerers and
// callbacks are added where the package is opened). TestDefaultsAgree
// holds each of them to configs/rtbd.yaml's defaults.

// spendOptions is the spend Writer's share of the spend section.
func spendOptions(cfg *configs.Config) spend.Options {
	s := cfg.Spend
	return spend.Options{FlushInterval: s.FlushInterval, Flushers: s.Flushers, ThresholdImps: s.ThresholdImps,
		BudgetFraction: s.BudgetFraction, FlushTimeout: s.FlushTimeout}
}

// budgetOptions is the budget check's share of the spend section.
func budgetOptions(cfg *configs.Config) spend.BudgetOptions {
	return spend.BudgetOptions{WaitForTotals: true, ExposureWindow: cfg.Spend.ExposureWindow, WinRateFloor: cfg.Spend.WinRateFloor}
}

// journalOptions is the notice journal's share of the spend section.
func journalOptions(cfg *configs.Config) journal.Options {
	return journal.Options{MaxPending: cfg.Spend.JournalMaxPending}
}

// remoteOptions is the remote catalog client's share of the catalog
// section.
func remoteOptions(cfg *configs.Config) remote.Options {
	c := cfg.Catalog
	return remote.Options{Target: c.Target, ConnsPerNode: c.ConnsPerNode, RefreshInterval: c.RefreshInterval,
		CallTimeout: c.CallTimeout, NearCacheBytes: c.NearCacheBytes, NearCacheGrace: c.NearCacheGrace,
		NearCacheMaxAge: c.NearCacheMaxAge, MaxIDs: c.MaxIDs, VersionInterval: c.WatchInterval}
}

// fraudOptions is the fraud lists' share of the fraud and redis sections.
func fraudOptions(cfg *configs.Config) fraud.Options {
	return fraud.Options{Prefix: cfg.Redis.Prefix + "fraud:", CheckInterval: cfg.Fraud.CheckInterval,
		ReloadInterval: cfg.Fraud.ReloadInterval}
}

// pgsourceOptions is the PostgreSQL campaign source's share of the
// campaigns section.
func pgsourceOptions(cfg *configs.Config) pgsource.Options {
	return pgsource.Options{DSN: cfg.Campaigns.Postgres.DSN, Interval: cfg.Campaigns.RefreshInterval}
}

// userOptions is the embedded user store's share of the user and bidder
// sections (the shared stores take the same limits and expiries:
// userstores.Open).
func userOptions(cfg *configs.Config) userpebble.Options {
	return userstores.PebbleOptions(cfg, userpebble.Options{BlockCacheBytes: int64(cfg.Bidder.UserCacheMB) << 20})
}

// admissionOptions is the admission control's share of the bidder
// section (bidder.admission_latency 0 turns it off: no Admission).
func admissionOptions(cfg *configs.Config) overload.AdmissionOptions {
	return overload.AdmissionOptions{Target: cfg.Bidder.AdmissionLatency, Interval: cfg.Bidder.AdmissionInterval}
}

// recorderOptions, fileSinkOptions and kafkaSinkOptions are the records
// section's.
func recorderOptions(cfg *configs.Config, instance string) records.Options {
	rc := cfg.Records
	return records.Options{Instance: instance, BufferBytes: int(rc.BufferBytes), NoBidSample: int(rc.NoBidSample)}
}

func fileSinkOptions(cfg *configs.Config, instance string) filesink.Options {
	rc := cfg.Records
	return filesink.Options{Dir: cfg.RecordsDir(), Instance: instance, RollInterval: rc.RollInterval,
		RollBytes: rc.RollBytes, Retention: rc.Retention, ViewRetention: rc.ViewRetention}
}

func kafkaSinkOptions(cfg *configs.Config, instance string) kafkasink.Options {
	var brokers []string
	if cfg.Records.Kafka.Brokers != "" {
		for _, b := range strings.Split(cfg.Records.Kafka.Brokers, ",") {
			brokers = append(brokers, strings.TrimSpace(b))
		}
	}
	return kafkasink.Options{Brokers: brokers, TopicPrefix: cfg.Records.Kafka.TopicPrefix, ClientID: "rtbd-" + instance,
		DeliveryTimeout: cfg.Records.Kafka.DeliveryTimeout, BufferBytes: int(cfg.Records.BufferBytes)}
}
