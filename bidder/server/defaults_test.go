package server

import (
	"fmt"
	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/overload"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtbd/rtbd/bidder/fraud"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/spend/journal"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/remote"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
	"github.com/rtbd/rtbd/rtb"
)

// handed is every Options Start builds, from one configuration.
type handed struct {
	bidder    bidder.Options
	shading   *shading.Options
	spend     spend.Options
	budgets   spend.BudgetOptions
	journal   journal.Options
	remote    remote.Options
	local     catalog.LocalOptions
	fraud     fraud.Options
	user      struct{ blockCacheMB, maxGroups, maxViewed int64 }
	userTTL   [2]string // TTL, MatchTTL
	admission overload.AdmissionOptions
	recorder  records.Options
	filesink  filesink.Options
	kafka     struct{ topicPrefix, deliveryTimeout string }
	pg        string // pgsource Interval
}

func handedFrom(t *testing.T, cfg *configs.Config) *handed {
	t.Helper()
	h := &handed{}
	var err error
	if h.bidder, _, err = optionsFromConfig(cfg.Bidder); err != nil {
		t.Fatal(err)
	}
	h.bidder.Exchanges, h.bidder.UserID = userIDFromConfig(cfg)
	noticeOptions(cfg.Notice, &h.bidder)
	h.shading = shadingFromConfig(cfg.Shading)
	h.spend, h.budgets, h.journal = spendOptions(cfg), budgetOptions(cfg), journalOptions(cfg)
	h.remote, h.local = remoteOptions(cfg), catalog.LocalOptionsFromConfig(cfg.Catalog, nil, nil)
	h.fraud = fraudOptions(cfg)
	u := userOptions(cfg)
	h.user.blockCacheMB, h.user.maxGroups, h.user.maxViewed = u.BlockCacheBytes>>20, int64(u.MaxGroups), int64(u.MaxViewed)
	h.userTTL = [2]string{u.TTL.String(), u.MatchTTL.String()}
	h.admission = admissionOptions(cfg)
	h.recorder, h.filesink = recorderOptions(cfg, "i"), fileSinkOptions(cfg, "i")
	k := kafkaSinkOptions(cfg, "i")
	h.kafka.topicPrefix, h.kafka.deliveryTimeout = k.TopicPrefix, k.DeliveryTimeout.String()
	h.pg = pgsourceOptions(cfg).Interval.String()
	return h
}

// zeroBidder is the bidder's Options as its zero value defaults them.
func zeroBidder() bidder.Options {
	var o bidder.Options
	_ = o.EnsureDefaults() // the errors are about the missing stores
	return o
}

// off marks a setting whose zero value in its package's Options means
// "off" (or "none"), not the configured default. That is allowed only
// because Start always hands the configured value over, which the test
// checks.
var off = func() any { return nil }

// own marks a setting whose package keeps its zero-value default
// unexported; Start always hands the configured value over, which the
// test checks.
var own = func() any { return nil }

// defaultRow is one configuration key that reaches a package's Options:
// the value Start hands over (in the key's own units), and the package's
// default for a zero value (off or own: see there).
type defaultRow struct {
	key    string
	handed func(h *handed) any
	zero   func() any
}

func defaultRows() []defaultRow {
	zb := zeroBidder()
	rows := []defaultRow{
		// bidder.Options
		{"bidder.public_url", func(h *handed) any { return h.bidder.PublicURL }, func() any { return zb.PublicURL }},
		{"bidder.secure_public_url", func(h *handed) any { return h.bidder.SecurePublicURL }, off},
		{"bidder.notice_url", func(h *handed) any { return h.bidder.NoticeURL }, off},
		{"bidder.image_resize_url", func(h *handed) any { return h.bidder.ImageResizeURL }, off},
		{"bidder.demo_images", func(h *handed) any { return h.bidder.DemoImages }, off},
		{"bidder.seat", func(h *handed) any { return h.bidder.Seat }, func() any { return zb.Seat }},
		{"bidder.dsa_domain", func(h *handed) any { return h.bidder.DSADomain }, off},
		{"bidder.currency", func(h *handed) any { return h.bidder.Currency }, func() any { return zb.Currency }},
		{"bidder.default_tmax", func(h *handed) any { return h.bidder.DefaultTMax }, func() any { return zb.DefaultTMax }},
		{"bidder.max_tmax", func(h *handed) any { return h.bidder.MaxTMax }, func() any { return zb.MaxTMax }},
		{"bidder.tmax_margin", func(h *handed) any { return h.bidder.TMaxMargin }, func() any { return zb.TMaxMargin }},
		{"bidder.tmax_margin_ratio", func(h *handed) any { return h.bidder.TMaxMarginRatio }, off},
		{"bidder.min_budget", func(h *handed) any { return h.bidder.MinBudget }, func() any { return zb.MinBudget }},
		{"bidder.max_body_bytes", func(h *handed) any { return h.bidder.MaxBodyBytes }, func() any { return rtb.DefaultMaxBodyBytes }},
		{"bidder.max_drain_bytes", func(h *handed) any { return h.bidder.MaxDrainBytes }, func() any { return zb.MaxDrainBytes }},
		{"bidder.read_timeout", func(h *handed) any { return h.bidder.DrainTimeout }, func() any { return zb.DrainTimeout }},
		{"bidder.max_in_flight", func(h *handed) any { return h.bidder.MaxInFlight }, func() any { return zb.MaxInFlight }},
		{"bidder.overload_response", func(h *handed) any { return map[bool]string{true: "503", false: "nobid"}[h.bidder.Overload503] }, off},
		{"bidder.nbr_body", func(h *handed) any { return h.bidder.NBRBody }, off},
		{"bidder.gzip_min_bytes", func(h *handed) any { return h.bidder.GzipMinBytes }, off},
		{"bidder.gdpr_vendor_id", func(h *handed) any { return h.bidder.GDPRVendorID }, off},
		{"bidder.click_links", func(h *handed) any { return map[bool]string{true: "absolute", false: "base"}[h.bidder.AbsoluteClicks] }, off},
		{"bidder.banner_imp_pixel", func(h *handed) any { return h.bidder.BannerImpPixel }, off},
		{"bidder.notice_ttl", func(h *handed) any { return h.bidder.NoticeTTL }, func() any { return zb.NoticeTTL }},
		{"bidder.click_ttl", func(h *handed) any { return h.bidder.ClickTTL }, func() any { return zb.ClickTTL }},
		{"bidder.event_timeout", func(h *handed) any { return h.bidder.EventTimeout }, func() any { return zb.EventTimeout }},
		{"bidder.access_log_sample", func(h *handed) any { return h.bidder.AccessLogSample }, off},
		{"bidder.max_conns", func(h *handed) any { return h.bidder.MaxConns }, func() any { return zb.MaxConns }},
		{"bidder.rate_limits.event.rate", func(h *handed) any { return h.bidder.RateLimits.Event.Rate }, off},
		{"bidder.rate_limits.event.burst", func(h *handed) any { return h.bidder.RateLimits.Event.Burst }, off},
		{"bidder.rate_limits.usersync.rate", func(h *handed) any { return h.bidder.RateLimits.UserSync.Rate }, off},
		{"bidder.rate_limits.usersync.burst", func(h *handed) any { return h.bidder.RateLimits.UserSync.Burst }, off},
		{"bidder.rate_limits.match.rate", func(h *handed) any { return h.bidder.RateLimits.Match.Rate }, off},
		{"bidder.rate_limits.match.burst", func(h *handed) any { return h.bidder.RateLimits.Match.Burst }, off},
		{"bidder.rate_limits.sources", func(h *handed) any { return h.bidder.RateLimits.Sources }, off},
		{"bidder.rate_limits.trusted_proxies", func(h *handed) any { return joined(h.bidder.RateLimits.TrustedProxies) }, off},
		{"user.cookie.name", func(h *handed) any { return h.bidder.UserID.CookieName }, func() any { return zb.UserID.CookieName }},
		{"user.cookie.domain", func(h *handed) any { return h.bidder.UserID.CookieDomain }, off},
		{"user.cookie.max_age", func(h *handed) any { return h.bidder.UserID.CookieMaxAge }, func() any { return zb.UserID.CookieMaxAge }},
		{"user.trust_query_uid", func(h *handed) any { return h.bidder.UserID.TrustQueryUID }, off},
		{"user.sync_redirect_hosts", func(h *handed) any { return joined(h.bidder.UserID.SyncRedirectHosts) }, off},
		{"notice.replay_window", func(h *handed) any { return h.bidder.ReplayWindow }, func() any { return zb.ReplayWindow }},
		{"notice.clock_skew", func(h *handed) any { return h.bidder.NoticeClockSkew }, func() any { return zb.NoticeClockSkew }},
		// admission control (bidder.admission_latency 0: none)
		{"bidder.admission_latency", func(h *handed) any { return h.admission.Target }, own},
		{"bidder.admission_interval", func(h *handed) any { return h.admission.Interval }, own},
		// shading
		{"shading.half_life", func(h *handed) any { return h.shading.HalfLife }, func() any { return shading.DefaultHalfLife }},
		{"shading.max_segments", func(h *handed) any { return h.shading.MaxSegments }, func() any { return shading.DefaultMaxSegments }},
		{"shading.min_observations", func(h *handed) any { return h.shading.MinObservations }, func() any { return shading.DefaultMinObservations }},
		{"shading.explore", func(h *handed) any { return max(h.shading.Explore, 0) }, func() any { return shading.DefaultExplore }},
		{"shading.explore_cold", func(h *handed) any { return max(h.shading.ExploreCold, 0) }, func() any { return shading.DefaultExploreCold }},
		{"shading.fleet_slot", func(h *handed) any { return fleetOf(h).Slot }, func() any { return shading.DefaultFleetSlot }},
		{"shading.fleet_horizon", func(h *handed) any { return fleetOf(h).Horizon }, func() any { return shading.DefaultFleetHalfLives * shading.DefaultHalfLife }},
		// spend
		{"spend.flush_interval", func(h *handed) any { return h.spend.FlushInterval }, func() any { return spend.DefaultFlushInterval }},
		{"spend.flushers", func(h *handed) any { return h.spend.Flushers }, func() any { return spend.DefaultFlushers }},
		{"spend.threshold_imps", func(h *handed) any { return h.spend.ThresholdImps }, func() any { return spend.DefaultThresholdImps }},
		{"spend.budget_fraction", func(h *handed) any { return h.spend.BudgetFraction }, func() any { return spend.DefaultBudgetFraction }},
		{"spend.flush_timeout", func(h *handed) any { return h.spend.FlushTimeout }, func() any { return spend.DefaultFlushTimeout }},
		{"spend.exposure_window", func(h *handed) any { return h.budgets.ExposureWindow }, func() any { return spend.DefaultExposureWindow }},
		{"spend.win_rate_floor", func(h *handed) any { return h.budgets.WinRateFloor }, func() any { return spend.DefaultWinRateFloor }},
		{"spend.journal_max_pending", func(h *handed) any { return h.journal.MaxPending }, func() any { return journal.DefaultMaxPending }},
		// catalog: the remote client, and the embedded index
		{"catalog.conns_per_node", func(h *handed) any { return h.remote.ConnsPerNode }, func() any { return remote.DefaultConnsPerNode }},
		{"catalog.refresh_interval", func(h *handed) any { return h.remote.RefreshInterval }, func() any { return remote.DefaultRefreshInterval }},
		{"catalog.call_timeout", func(h *handed) any { return h.remote.CallTimeout }, func() any { return remote.DefaultCallTimeout }},
		{"catalog.near_cache_bytes", func(h *handed) any { return h.remote.NearCacheBytes }, off},
		{"catalog.near_cache_grace", func(h *handed) any { return h.remote.NearCacheGrace }, func() any { return remote.DefaultNearCacheGrace }},
		{"catalog.near_cache_max_age", func(h *handed) any { return h.remote.NearCacheMaxAge }, func() any { return remote.DefaultNearCacheMaxAge }},
		{"catalog.watch_interval", func(h *handed) any { return h.remote.VersionInterval }, func() any { return remote.DefaultVersionInterval }},
		{"catalog.max_ids", func(h *handed) any { return h.remote.MaxIDs }, func() any { return remote.DefaultMaxIDs }},
		{"catalog.block_cache_mb", func(h *handed) any { return h.local.BlockCacheBytes >> 20 }, own},
		{"catalog.hot_cache_entries", func(h *handed) any { return h.local.HotCacheEntries }, own},
		// fraud lists (their key prefix is redis.prefix + "fraud:")
		{"redis.prefix", func(h *handed) any { return strings.TrimSuffix(h.fraud.Prefix, "fraud:") }, func() any { return strings.TrimSuffix(fraud.DefaultPrefix, "fraud:") }},
		{"fraud.check_interval", func(h *handed) any { return h.fraud.CheckInterval }, func() any { return fraud.DefaultCheckInterval }},
		{"fraud.reload_interval", func(h *handed) any { return h.fraud.ReloadInterval }, func() any { return fraud.DefaultReloadInterval }},
		// the user store
		{"bidder.user_cache_mb", func(h *handed) any { return h.user.blockCacheMB }, own},
		{"user.max_groups", func(h *handed) any { return h.user.maxGroups }, own},
		{"user.max_products_per_group", func(h *handed) any { return h.user.maxViewed }, own},
		{"user.ttl", func(h *handed) any { return h.userTTL[0] }, own},
		{"user.match_ttl", func(h *handed) any { return h.userTTL[1] }, own},
		// campaigns from PostgreSQL
		{"campaigns.refresh_interval", func(h *handed) any { return h.pg }, off},
		// records
		{"records.buffer_bytes", func(h *handed) any { return h.recorder.BufferBytes }, func() any { return records.DefaultBufferBytes }},
		{"records.nobid_sample", func(h *handed) any { return h.recorder.NoBidSample }, off},
		{"records.roll_interval", func(h *handed) any { return h.filesink.RollInterval }, func() any { return filesink.DefaultRollInterval }},
		{"records.roll_bytes", func(h *handed) any { return h.filesink.RollBytes }, func() any { return filesink.DefaultRollBytes }},
		{"records.retention", func(h *handed) any { return h.filesink.Retention }, func() any { return filesink.DefaultRetention }},
		{"records.view_retention", func(h *handed) any { return h.filesink.ViewRetention }, own},
		{"records.kafka.topic_prefix", func(h *handed) any { return h.kafka.topicPrefix }, off},
		{"records.kafka.delivery_timeout", func(h *handed) any { return h.kafka.deliveryTimeout }, own},
	}
	return rows
}

// startReads are the keys Start reads itself rather than handing to a
// package's Options (listen addresses, paths, choices of store or mode,
// the servers' timeouts, the lease, readiness), and the keys of the
// other modes. Their defaults are held by configs' own tests and the
// reference table (TestDocsReference).
var startReads = []string{
	"mode", "log.*", "admin.*",
	"catalog.data", "catalog.target", "catalog.tls.*",
	// the catalog node's (mode catalog)
	"catalog.grpc_listen", "catalog.graceful_timeout", "catalog.max_concurrent_streams", "catalog.max_conns",
	"catalog.max_conns_per_addr", "catalog.handshake_timeout", "catalog.max_conn_age", "catalog.max_conn_age_grace",
	"catalog.keepalive_min_time", "catalog.max_call_time", "catalog.max_conn_unread_bytes",
	"bidder.http_listen", "bidder.public_listen", "bidder.public_max_conns", "bidder.public_max_conns_per_addr",
	"bidder.public_first_byte_timeout", "bidder.data_dir", "bidder.campaigns", "bidder.token_keys",
	"bidder.fx_rates", "bidder.fx_file", "bidder.fx_refresh_interval", "bidder.fx_max_age", "bidder.gc_floor_mb",
	"bidder.write_timeout", "bidder.idle_timeout", "bidder.shutdown_timeout", "bidder.shutdown_delay",
	"spend.store", "spend.startup_read_timeout", "spend.journal_dir", "spend.instance_id", "spend.instance_lease",
	"user.store", "redis.addr", "aerospike.*", "supply.*", "notice.price_keys.*", "shading.refresh_interval",
	"shading.fleet_interval",
	"campaigns.source", "campaigns.file", "campaigns.postgres.dsn",
	"records.files", "records.dir", "records.charge_max_pending", "records.kafka.brokers",
}

func readByStart(key string) bool {
	for _, p := range startReads {
		if p == key || strings.HasSuffix(p, ".*") && strings.HasPrefix(key, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

// TestDefaultsAgree: every setting has one default. For each key of
// configs/rtbd.yaml that reaches a package's Options, the value Start
// hands over from the default configuration equals rtbd.yaml's default,
// the package's own default for a zero value is that default too (unless
// zero means off there), and the reference table (configs/README.md)
// shows it. Every key is either such a row or read by Start itself.
func TestDefaultsAgree(t *testing.T) {
	def, err := configs.Default()
	if err != nil {
		t.Fatal(err)
	}
	h := handedFrom(t, def)
	documented := documentedDefaults(t)
	scratch, err := configs.Default()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range defaultRows() {
		if seen[r.key] {
			t.Errorf("%s: two rows", r.key)
		}
		seen[r.key] = true
		want, err := def.Get(r.key)
		if err != nil {
			t.Errorf("%s: not a key of configs.Config: %v", r.key, err)
			continue
		}
		if got := fmt.Sprint(r.handed(h)); got != want {
			t.Errorf("%s: rtbd.yaml's default is %s, Start hands over %s", r.key, want, got)
		}
		if z := r.zero(); z != nil {
			if got := fmt.Sprint(z); got != want {
				t.Errorf("%s: rtbd.yaml's default is %s, the package's Options default a zero value to %s", r.key, want, got)
			}
		}
		if doc, ok := documented[r.key]; !ok {
			t.Errorf("%s: no row in configs/README.md's key table", r.key)
		} else if got := asConfigured(scratch, r.key, doc, want); got != want {
			t.Errorf("%s: rtbd.yaml's default is %s, configs/README.md says %s", r.key, want, doc)
		}
	}
	for _, k := range def.Keys() {
		if !seen[k] && !readByStart(k) {
			t.Errorf("%s: neither a row of defaultRows (the Options it reaches) nor in startReads", k)
		}
		if seen[k] && readByStart(k) {
			t.Errorf("%s: both a row of defaultRows and in startReads", k)
		}
	}
}

// asConfigured is a default as the reference table writes it ("1h",
// "[a, b]", `""`), as configs.Config.Get writes it: set into c, read,
// and c's key set back to def.
func asConfigured(c *configs.Config, key, doc, def string) string {
	defer c.Set(key, def)
	v := doc
	if v == `""` {
		v = ""
	}
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		v = strings.ReplaceAll(strings.Trim(v, "[]"), ", ", ",")
	}
	if err := c.Set(key, v); err != nil {
		return "unreadable (" + err.Error() + ")"
	}
	got, _ := c.Get(key)
	return got
}

// documentedDefaults reads the default column of configs/README.md's key
// table: key -> the default without its backticks.
func documentedDefaults(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(l), "| `") {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		out[key] = strings.Trim(strings.TrimSpace(cells[2]), "`")
	}
	return out
}

func joined[T any](xs []T) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ",")
}

// fleetOf is the shading fleet's options Start hands over (none when
// shading.fleet_interval turns the sharing off).
func fleetOf(h *handed) shading.FleetOptions {
	if h.shading.Fleet == nil {
		return shading.FleetOptions{}
	}
	return *h.shading.Fleet
}
