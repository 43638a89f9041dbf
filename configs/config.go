package configs

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/rtb/money"
)

//go:embed rtbd.yaml
var defaultYAML []byte

// Modes a process can run in (Config.Mode).
const (
	// ModeBidder serves bid requests over HTTP, with the embedded catalog
	// index or a remote one (Catalog.Target).
	ModeBidder = "bidder"
	// ModeCatalog serves the product index over gRPC.
	ModeCatalog = "catalog"
)

// EnvPrefix starts the name of every environment variable that overrides a
// setting: the setting "catalog.block_cache_mb" is RTBD_CATALOG_BLOCK_CACHE_MB.
const EnvPrefix = "RTBD_"

// EnvConfigPath is the one RTBD_* environment variable that is not a setting:
// main may read the path of the config file from it. Load ignores it.
const EnvConfigPath = "RTBD_CONFIG"

// Errors returned by Load and Set, wrapped with the key and value; test with
// errors.Is.
var (
	// ErrUnknownKey: a file key, environment variable or Set key names no
	// setting.
	ErrUnknownKey = errors.New("configs: unknown key")
	// ErrInvalidValue: a value cannot be parsed as its setting's type.
	ErrInvalidValue = errors.New("configs: invalid value")
)

// Config is the whole configuration of an rtbd process. Each section is a
// sub-struct with yaml tags; its defaults are in rtbd.yaml. The zero Config is
// not useful: get one from Load or Default.
//
// A Config is a plain value: it is not safe to Set while another goroutine
// reads it. Load a new one to reload.
//
// Adding a section (see the package documentation): a field here with a yaml
// tag, its defaults with a comment on each key in rtbd.yaml, and a
// Validate(*Problems) method on the section type. Loading, environment
// overrides, Set and YAML then work without further code.
type Config struct {
	// Mode is what this process serves: ModeBidder or ModeCatalog.
	Mode string `yaml:"mode"`
	// Log configures the process logger (see NewLogger).
	Log Log `yaml:"log"`
	// Admin configures the admin HTTP listener (package admin).
	Admin Admin `yaml:"admin"`
	// Catalog configures the product index, its gRPC server and client.
	Catalog Catalog `yaml:"catalog"`
	// Bidder configures the bid server (mode bidder).
	Bidder Bidder `yaml:"bidder"`
	// Spend configures the spend writer, budgets and the spend store choice.
	Spend Spend `yaml:"spend"`
	// User configures the user profile store: which store, caps and expiry.
	User User `yaml:"user"`
	// Redis is the shared Redis of a fleet (user profiles, spend, frequency,
	// notice keys, fraud lists).
	Redis Redis `yaml:"redis"`
	// Aerospike is the shared Aerospike cluster of a fleet (spend, users).
	Aerospike Aerospike `yaml:"aerospike"`
	// Fraud configures the sync of the fraud block lists from Redis.
	Fraud Fraud `yaml:"fraud"`
	// Supply configures the supply-path files (sellers.json, ads.txt,
	// app-ads.txt) campaigns check requests against.
	Supply Supply `yaml:"supply"`
	// Notice configures the /win and /bill notice handler.
	Notice Notice `yaml:"notice"`
	// Shading configures first-price bid shading (package bidder/shading).
	Shading Shading `yaml:"shading"`
	// Campaigns configures where the bidder's campaigns come from.
	Campaigns Campaigns `yaml:"campaigns"`
	// Exchanges lists the exchanges (SSPs) this bidder serves, by name
	// (see Exchanges). The exchange DefaultExchange always exists.
	Exchanges Exchanges `yaml:"exchanges,omitempty"`
	// Records configures the log-level records (package records): Parquet
	// files and Kafka.
	Records Records `yaml:"records"`
}

// Records configures the log-level records (package records).
type Records struct {
	// Files writes Parquet files under Dir (records/filesink).
	Files bool `yaml:"files"`
	// Dir is the root of the Hive partitions; "" is bidder.data_dir/records.
	Dir string `yaml:"dir"`
	// RollInterval completes an open file this long after it was opened.
	RollInterval time.Duration `yaml:"roll_interval"`
	// RollBytes completes an open file once it has this many bytes.
	RollBytes int64 `yaml:"roll_bytes"`
	// Retention deletes hour partitions that ended longer ago than this.
	Retention time.Duration `yaml:"retention"`
	// ViewRetention keeps kind=view partitions this long (at least
	// Retention): the window recommendations read views over.
	ViewRetention time.Duration `yaml:"view_retention"`
	// BufferBytes bounds each sink's buffer of records not yet written;
	// past it, records other than charges are dropped and counted.
	BufferBytes int64 `yaml:"buffer_bytes"`
	// NoBidSample keeps one no-bid record in this many; 0 keeps none.
	NoBidSample int64 `yaml:"nobid_sample"`
	// ChargeMaxPending is the most charge records the journal keeps for
	// export; past it a charge record is dropped and counted (the notice is
	// still charged: an export outage never refuses a billing notice).
	ChargeMaxPending int64 `yaml:"charge_max_pending"`
	// Kafka sends every record to Kafka too, when Kafka.Brokers is set.
	Kafka RecordsKafka `yaml:"kafka"`
}

// RecordsKafka configures the Kafka sink of the records.
type RecordsKafka struct {
	// Brokers is "host:port[,host:port...]"; "" sends nothing to Kafka.
	Brokers string `yaml:"brokers"`
	// TopicPrefix is prepended to the kind to name each kind's topic
	// (rtbd.records.bid, ...).
	TopicPrefix string `yaml:"topic_prefix"`
	// DeliveryTimeout is how long a record may wait for the brokers: then
	// a record other than a charge is dropped (counted), and a charge is
	// sent again.
	DeliveryTimeout time.Duration `yaml:"delivery_timeout"`
}

// Validate reports the problems of the records section.
func (r Records) Validate(p *Problems) {
	if r.Dir != strings.TrimSpace(r.Dir) {
		p.Addf("dir", "must not start or end with spaces, got %q", r.Dir)
	}
	p.Positive("roll_interval", r.RollInterval)
	p.Range("roll_bytes", r.RollBytes, 1<<10, 1<<40)
	p.Positive("retention", r.Retention)
	if r.ViewRetention < r.Retention {
		p.Addf("view_retention", "must be at least records.retention (%s), got %s", r.Retention, r.ViewRetention)
	}
	p.Range("buffer_bytes", r.BufferBytes, 64<<10, 1<<40)
	p.Range("nobid_sample", r.NoBidSample, 0, 1<<40)
	p.Range("charge_max_pending", r.ChargeMaxPending, 1, 1<<40)
	p.Positive("kafka.delivery_timeout", r.Kafka.DeliveryTimeout)
	for _, b := range strings.Split(r.Kafka.Brokers, ",") {
		if r.Kafka.Brokers != "" {
			p.HostPort("kafka.brokers", strings.TrimSpace(b))
		}
	}
	for _, c := range r.Kafka.TopicPrefix {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '-') {
			p.Addf("kafka.topic_prefix", "must be of [0-9A-Za-z._-], got %q", r.Kafka.TopicPrefix)
			break
		}
	}
}

// RecordsDir is records.dir, or bidder.data_dir/records when unset.
func (c *Config) RecordsDir() string {
	if c.Records.Dir != "" {
		return c.Records.Dir
	}
	return filepath.Join(c.Bidder.DataDir, "records")
}

// Shading configures first-price bid shading (package bidder/shading):
// per segment of the bid landscape, the estimate of the win probability
// by price that prices first-price bids.
type Shading struct {
	// HalfLife is the half-life of the observations (a landscape that
	// moves is learned again within a few).
	HalfLife time.Duration `yaml:"half_life"`
	// MaxSegments bounds the segments held (about 8 KiB each); the least
	// recently bid on go first.
	MaxSegments int `yaml:"max_segments"`
	// MinObservations is the decayed observations a segment needs before
	// its estimate prices bids (else a coarser segment's does).
	MinObservations float64 `yaml:"min_observations"`
	// Explore is the fraction of shaded bids whose price is moved at random
	// (never above the value nor below the floor).
	Explore float64 `yaml:"explore"`
	// ExploreCold is the fraction of first-price bids of a segment without
	// data (at every level) priced at random between 30% of the value and
	// the value; the others bid the value.
	ExploreCold float64 `yaml:"explore_cold"`
	// RefreshInterval is how often the estimates are rebuilt from the
	// observations.
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// FleetInterval is how often a bidder flushes its settled counts to
	// the spend store and reads the fleet's counts of its segments; 0: not
	// shared (each bidder learns alone, a restart starts empty).
	FleetInterval time.Duration `yaml:"fleet_interval"`
	// FleetSlot is the width of the store's time slots (whole seconds).
	FleetSlot time.Duration `yaml:"fleet_slot"`
	// FleetHorizon is how far back the fleet's counts are read and how
	// long the store keeps a slot; at least two slots.
	FleetHorizon time.Duration `yaml:"fleet_horizon"`
}

// Validate reports the problems of the shading section.
func (s Shading) Validate(p *Problems) {
	p.Positive("half_life", s.HalfLife)
	p.Range("max_segments", int64(s.MaxSegments), 16, 1<<20)
	if !(s.MinObservations >= 1 && s.MinObservations <= 1e6) {
		p.Addf("min_observations", "must be between 1 and 1000000, got %v", s.MinObservations)
	}
	if !(s.Explore >= 0 && s.Explore <= 0.5) {
		p.Addf("explore", "must be between 0 and 0.5, got %v", s.Explore)
	}
	if !(s.ExploreCold >= 0 && s.ExploreCold <= 1) {
		p.Addf("explore_cold", "must be between 0 and 1, got %v", s.ExploreCold)
	}
	p.Positive("refresh_interval", s.RefreshInterval)
	if s.FleetInterval < 0 {
		p.Addf("fleet_interval", "must be >= 0 (0: not shared), got %s", s.FleetInterval)
	}
	if s.FleetSlot < time.Second || s.FleetSlot%time.Second != 0 {
		p.Addf("fleet_slot", "must be whole seconds, at least 1s, got %s", s.FleetSlot)
	}
	if s.FleetHorizon < 2*s.FleetSlot {
		p.Addf("fleet_horizon", "must be at least two fleet_slot (%s), got %s", 2*s.FleetSlot, s.FleetHorizon)
	}
}

// Campaign sources (Campaigns.Source).
const (
	// CampaignsFile reads the campaigns file (Config.CampaignsFile).
	CampaignsFile = "file"
	// CampaignsPostgres reads the campaigns table of Campaigns.Postgres.DSN.
	CampaignsPostgres = "postgres"
)

// Campaigns configures where the bidder's campaigns come from.
type Campaigns struct {
	// Source is CampaignsFile or CampaignsPostgres.
	Source string `yaml:"source"`
	// File is the campaigns file of source file; empty: bidder.campaigns
	// (see Config.CampaignsFile).
	File string `yaml:"file"`
	// RefreshInterval is how often source postgres reads the whole table.
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// Postgres is the database of source postgres.
	Postgres CampaignsDB `yaml:"postgres"`
}

// CampaignsDB is the database of campaigns.source postgres.
type CampaignsDB struct {
	// DSN is the connection string (postgres://user:pass@host:5432/db or
	// "host=... dbname=..."); a secret.
	DSN string `yaml:"dsn" secret:"true"`
}

// Validate reports the problems of the campaigns section.
func (c Campaigns) Validate(p *Problems) {
	p.OneOf("source", c.Source, CampaignsFile, CampaignsPostgres)
	p.Positive("refresh_interval", c.RefreshInterval)
	if c.Source == CampaignsPostgres && strings.TrimSpace(c.Postgres.DSN) == "" {
		p.Addf("postgres.dsn", "must be set when source is postgres (RTBD_CAMPAIGNS_POSTGRES_DSN or postgres.dsn_file)")
	}
}

// CampaignsFile is the campaigns file of source file: campaigns.file, or
// its alias bidder.campaigns when campaigns.file is empty.
func (c *Config) CampaignsFile() string {
	if c.Campaigns.File != "" {
		return c.Campaigns.File
	}
	return c.Bidder.Campaigns
}

// Bidder configures the bid server (package bidder). Durations are in the
// units Go durations carry; money is in currency units as written ("2.5").
type Bidder struct {
	// HTTPListen is the host:port of the SSP-facing HTTP server.
	HTTPListen string `yaml:"http_listen"`
	// PublicListen is the host:port of the browser-facing HTTP server
	// (/event, /click, /imp, /usersync, /match, demo images); "": the
	// HTTPListen server serves them too.
	PublicListen string `yaml:"public_listen"`
	// NoticeURL is the base of the server-to-server notice URLs (nurl,
	// burl, lurl) in bids; "": PublicURL.
	NoticeURL string `yaml:"notice_url"`
	// PublicMaxConns bounds the connections of the PublicListen server.
	PublicMaxConns int `yaml:"public_max_conns"`
	// PublicMaxConnsPerAddr bounds its connections from one address
	// (rate_limits.trusted_proxies exempt).
	PublicMaxConnsPerAddr int `yaml:"public_max_conns_per_addr"`
	// PublicFirstByteTimeout closes a new connection of the PublicListen
	// server that sends no byte within it.
	PublicFirstByteTimeout time.Duration `yaml:"public_first_byte_timeout"`
	// PublicURL is the scheme://host[:port] at which SSPs and browsers reach
	// this bidder: the base of the nurl, burl and click URLs in bids.
	PublicURL string `yaml:"public_url"`
	// SecurePublicURL is the https:// base of rtbd's URLs in bids on
	// secure imps (imp.secure=1); it may equal PublicURL. Empty: an https
	// PublicURL serves secure imps too, an http one makes them a no-bid
	// (nbr 509).
	SecurePublicURL string `yaml:"secure_public_url"`
	// DataDir is the bidder's own data directory (the user profile store
	// lives in DataDir/users).
	DataDir string `yaml:"data_dir"`
	// DemoImages serves the demo catalog's product images (GET
	// /demo/img/<group>/<id>.svg), which `rtbd gen -demo` points its feed
	// at, so the demo's ads render with no network. Off outside the demo.
	DemoImages bool `yaml:"demo_images"`
	// Campaigns is the path of the campaigns file, reloaded on change: an
	// alias of campaigns.file, used when that is empty.
	Campaigns string `yaml:"campaigns"`
	// ImageResizeURL is an optional image resize service's URL template,
	// such as https://img.example/resize?w={w}&h={h}&u={url}: it serves the
	// native image sizes the catalog lacks ({url} is the product image's
	// URL, percent-encoded). Empty: product images as they are.
	ImageResizeURL string `yaml:"image_resize_url"`
	// Seat is the seatbid.seat of bids whose campaign names no seat.
	Seat string `yaml:"seat"`
	// DSADomain is the domain bids name in bid.ext.dsa.transparency as
	// the party that decided on the ad's personalisation (EU Digital
	// Services Act); "": no transparency entry. At most 100 bytes.
	DSADomain string `yaml:"dsa_domain"`
	// Currency is the ISO 4217 code bids are made in (bidresponse.cur).
	Currency string `yaml:"currency"`
	// FXRates are "CUR=rate" entries, rate = USD per one unit of CUR
	// ("JPY=0.0067"); USD is 1. Used to convert bids and floors.
	FXRates []string `yaml:"fx_rates"`
	// FXFile is the path of a currency file in Prebid's format
	// ({"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0.92}}}); its
	// rates replace those of FXRates for the currencies it converts to
	// USD. "" is none.
	FXFile string `yaml:"fx_file"`
	// FXRefreshInterval is how often FXFile is read again (a failed read
	// keeps the last good rates).
	FXRefreshInterval time.Duration `yaml:"fx_refresh_interval"`
	// FXMaxAge: FXFile rates older than this (by dataAsOf) are used with a
	// warning.
	FXMaxAge time.Duration `yaml:"fx_max_age"`
	// DefaultTMax is the deadline assumed when a request has no tmax.
	DefaultTMax time.Duration `yaml:"default_tmax"`
	// MaxTMax caps a request's tmax.
	MaxTMax time.Duration `yaml:"max_tmax"`
	// TMaxMargin is subtracted from the deadline for the network back to
	// the SSP.
	TMaxMargin time.Duration `yaml:"tmax_margin"`
	// TMaxMarginRatio caps the margin at this fraction of the deadline
	// (min(tmax or default_tmax, max_tmax)), so a short tmax keeps most of
	// its time: the margin is min(tmax_margin, ratio x tmax). 0 turns the
	// cap off (the margin is tmax_margin whatever the tmax); 0 to 0.9.
	TMaxMarginRatio float64 `yaml:"tmax_margin_ratio"`
	// MinBudget is the least time left after the margin worth starting a
	// bid; less is an immediate no-bid (nbr 508).
	MinBudget time.Duration `yaml:"min_budget"`
	// MaxBodyBytes bounds a request body, compressed and decompressed.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// MaxDrainBytes: after a 413 for a body far over MaxBodyBytes, how
	// much of the rest is read and discarded (within ReadTimeout) before
	// the connection closes, so the client reads the 413; 0 closes at once.
	MaxDrainBytes int `yaml:"max_drain_bytes"`
	// MaxInFlight bounds the bid requests being processed at once; more are
	// shed at once.
	MaxInFlight int `yaml:"max_in_flight"`
	// AdmissionLatency turns on admission control by queueing delay
	// (overload.Admission): a bid request may wait (arrival to handler) the
	// larger of this and 1/16 of its tmax-derived budget; once the
	// requests' average wait has stayed above what they may for
	// AdmissionInterval, those that waited longer are shed before
	// decoding. 0 disables it.
	AdmissionLatency time.Duration `yaml:"admission_latency"`
	// AdmissionInterval: how long the waits must stay above what they may
	// before shedding; the step of the share of young requests shed.
	AdmissionInterval time.Duration `yaml:"admission_interval"`
	// GCFloorMB is deprecated and has no effect: a config that sets it
	// still loads, and the bidder logs a warning naming the key.
	GCFloorMB int `yaml:"gc_floor_mb"`
	// OverloadResponse is how a shed request is answered: "nobid" (a
	// no-bid with nbr 507, see NBRBody) or "503".
	OverloadResponse string `yaml:"overload_response"`
	// NBRBody: no-bids are 200 with a body {"id":..,"nbr":N} (OpenRTB's
	// no-bid response) instead of 204 No Content (which has no body).
	NBRBody bool `yaml:"nbr_body"`
	// GzipMinBytes: responses at least this long are gzipped when the SSP
	// accepts gzip; 0 never gzips.
	GzipMinBytes int `yaml:"gzip_min_bytes"`
	// GDPRVendorID is rtbd's IAB TCF vendor id; 0 checks purpose consent
	// only.
	GDPRVendorID int `yaml:"gdpr_vendor_id"`
	// TokenKeys are the secrets that sign win, bill and click tokens: the
	// first signs, all verify (rotation). Empty: a random key per process.
	TokenKeys []string `yaml:"token_keys" secret:"true"`
	// NoticeTTL is how long win and bill tokens stay valid.
	NoticeTTL time.Duration `yaml:"notice_ttl"`
	// ClickTTL is how long click tokens stay valid.
	ClickTTL time.Duration `yaml:"click_ttl"`
	// ClickLinks is how a banner links its products: "base" (the click
	// token once, in the document's <base href>, each link relative to it)
	// or "absolute" (a full /click URL per product, for SSPs that rewrite
	// or wrap the links in a creative).
	ClickLinks string `yaml:"click_links"`
	// BannerImpPixel puts a 1x1 impression pixel (the bid's /imp URL) in
	// every banner's markup; banners to an exchange with billing render
	// carry it whatever this says.
	BannerImpPixel bool `yaml:"banner_imp_pixel"`
	// EventTimeout bounds the store write of a /event pixel and the catalog
	// lookup of a /click.
	EventTimeout time.Duration `yaml:"event_timeout"`
	// AccessLogSample logs one request in N (0: no access log).
	AccessLogSample int `yaml:"access_log_sample"`
	// ReadTimeout bounds reading one request from an SSP connection.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing one response.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout is how long an idle keep-alive connection is kept.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// ShutdownDelay is how long, on SIGTERM, /readyz answers 503 while the
	// bidder still serves bids and notices, before it drains: the time the
	// load balancer needs to stop sending it traffic. 0: drain at once.
	ShutdownDelay time.Duration `yaml:"shutdown_delay"`
	// UserCacheMB is the Pebble block cache of the user store, in MiB.
	UserCacheMB int `yaml:"user_cache_mb"`
	// MaxConns bounds the connections the SSP- and browser-facing server
	// holds open (idle keep-alive ones included); a connection beyond it
	// is answered 503 and closed.
	MaxConns int `yaml:"max_conns"`
	// RateLimits bound /event, /usersync and /match per source address.
	RateLimits RateLimits `yaml:"rate_limits"`
}

// RateLimits are the per-source limits of the endpoints that write the
// user store: a source over its endpoint's limit is answered 429, and
// nothing is written.
type RateLimits struct {
	// Event, UserSync and Match are the limits of /event, /usersync and
	// /match, each counted on its own.
	Event    RateLimit `yaml:"event"`
	UserSync RateLimit `yaml:"usersync"`
	Match    RateLimit `yaml:"match"`
	// Sources is how many source addresses the limits remember (a fixed
	// table, about 25 bytes a source and endpoint); when it is full, the
	// source seen least recently is forgotten.
	Sources int `yaml:"sources"`
	// TrustedProxies are the addresses or CIDR prefixes of proxies (a
	// load balancer) whose X-Forwarded-For names the source: the
	// rightmost address in it that is not itself a trusted proxy. Empty:
	// X-Forwarded-For is ignored and the source is the peer address.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// Validate reports the problems of the rate_limits subsection.
func (r RateLimits) Validate(p *Problems) {
	p.Range("sources", int64(r.Sources), 1024, 1<<24)
	for i, s := range r.TrustedProxies {
		if _, err := netip.ParsePrefix(s); err != nil {
			if _, err := netip.ParseAddr(s); err != nil {
				p.Addf(fmt.Sprintf("trusted_proxies[%d]", i), "want an IP address or a CIDR prefix (10.0.0.0/8), got %q", s)
			}
		}
	}
}

// RateLimit is a token bucket per source: Rate requests a second on
// average, Burst at once.
type RateLimit struct {
	// Rate is the requests a second one source may make on average; 0:
	// no limit.
	Rate float64 `yaml:"rate"`
	// Burst is how many requests one source may make at once (the
	// bucket's size).
	Burst int `yaml:"burst"`
}

// Validate reports the problems of one endpoint's limit.
func (r RateLimit) Validate(p *Problems) {
	if !(r.Rate >= 0 && r.Rate <= 1e6) {
		p.Addf("rate", "must be between 0 (no limit) and 1e6 requests a second, got %v", r.Rate)
	}
	if r.Rate > 0 {
		p.Range("burst", int64(r.Burst), 1, 1e6)
	}
}

// Validate reports the problems of the bidder section.
func (b Bidder) Validate(p *Problems) {
	p.HostPort("http_listen", b.HTTPListen)
	if b.PublicListen != "" {
		p.HostPort("public_listen", b.PublicListen)
		if b.PublicListen == b.HTTPListen && !strings.HasSuffix(b.PublicListen, ":0") {
			p.Addf("public_listen", "must differ from http_listen (%s), or be empty to serve browsers on it", b.HTTPListen)
		}
	}
	if b.NoticeURL != "" {
		if msg := checkPublicURL(b.NoticeURL); msg != "" {
			p.Addf("notice_url", "%s, got %q", msg, b.NoticeURL)
		}
	}
	p.Range("public_max_conns", int64(b.PublicMaxConns), 1, 1<<20)
	p.Range("public_max_conns_per_addr", int64(b.PublicMaxConnsPerAddr), 1, 1<<20)
	p.Positive("public_first_byte_timeout", b.PublicFirstByteTimeout)
	if msg := checkPublicURL(b.PublicURL); msg != "" {
		p.Addf("public_url", "%s, got %q", msg, b.PublicURL)
	}
	if b.SecurePublicURL != "" {
		if msg := checkPublicURL(b.SecurePublicURL); msg != "" {
			p.Addf("secure_public_url", "%s, got %q", msg, b.SecurePublicURL)
		} else if !strings.HasPrefix(b.SecurePublicURL, "https://") {
			p.Addf("secure_public_url", "must start with https:// (or be empty), got %q", b.SecurePublicURL)
		}
	}
	p.NonEmpty("data_dir", b.DataDir)
	p.NonEmpty("campaigns", b.Campaigns)
	if msg := checkResizeURL(b.ImageResizeURL); msg != "" {
		p.Addf("image_resize_url", "%s, got %q", msg, b.ImageResizeURL)
	}
	if msg := checkDomain(b.DSADomain, 100); b.DSADomain != "" && msg != "" {
		p.Addf("dsa_domain", "%s, got %q", msg, b.DSADomain)
	}
	if b.Seat == "" || len(b.Seat) > 64 || strings.ContainsAny(b.Seat, "\"\\\x00\n\r\t") {
		p.Addf("seat", "must be 1-64 characters without quotes, backslashes or control characters, got %q", b.Seat)
	}
	currency, currencyOK := money.Code(b.Currency)
	if !currencyOK {
		p.Addf("currency", "must be a 3-letter ISO 4217 code (any case), got %q", b.Currency)
	}
	rates := map[string]bool{"USD": true}
	for i, kv := range b.FXRates {
		key := fmt.Sprintf("fx_rates[%d]", i)
		cur, rate, _ := strings.Cut(kv, "=")
		cur, rate = strings.TrimSpace(cur), strings.TrimSpace(rate)
		code, _, err := money.ParseRate(kv)
		switch {
		case errors.Is(err, money.ErrRateSyntax):
			p.Addf(key, "want CUR=rate (USD per unit, e.g. JPY=0.0067), got %q", kv)
		case errors.Is(err, money.ErrRateCode):
			p.Addf(key, "currency must be a 3-letter code from ISO 4217 (any case), got %q", cur)
		case errors.Is(err, money.ErrRateValue):
			p.Addf(key, "rate must be a number > 0 and <= 1e9, got %q", rate)
		case errors.Is(err, money.ErrRateUSD):
			p.Addf(key, "USD is the base (rate 1) and cannot be set")
		case rates[code]:
			p.Addf(key, "%s listed twice", code)
		default:
			rates[code] = true
		}
	}
	if currencyOK && !rates[currency] && b.FXFile == "" { // else checked when the file loads
		p.Addf("currency", "%s has no rate in fx_rates", currency)
	}
	if b.FXFile != "" {
		p.Positive("fx_refresh_interval", b.FXRefreshInterval)
		p.Positive("fx_max_age", b.FXMaxAge)
	}
	p.Positive("default_tmax", b.DefaultTMax)
	p.Positive("max_tmax", b.MaxTMax)
	p.Positive("tmax_margin", b.TMaxMargin)
	if !(b.TMaxMarginRatio >= 0 && b.TMaxMarginRatio <= 0.9) {
		p.Addf("tmax_margin_ratio", "must be between 0 (off) and 0.9, got %v", b.TMaxMarginRatio)
	}
	p.Positive("min_budget", b.MinBudget)
	if b.MaxTMax > 0 && b.TMaxMargin+b.MinBudget > b.MaxTMax {
		p.Addf("tmax_margin", "tmax_margin (%s) + min_budget (%s) leaves no time within max_tmax (%s)", b.TMaxMargin, b.MinBudget, b.MaxTMax)
	}
	p.Range("max_body_bytes", int64(b.MaxBodyBytes), 1024, 16<<20)
	p.Range("max_drain_bytes", int64(b.MaxDrainBytes), 0, 1<<30)
	p.Range("max_in_flight", int64(b.MaxInFlight), 1, 1_000_000)
	if b.AdmissionLatency < 0 || b.AdmissionLatency > 10*time.Second {
		p.Addf("admission_latency", "must be between 0 (off) and 10s, got %s", b.AdmissionLatency)
	}
	if b.AdmissionInterval < time.Millisecond || b.AdmissionInterval > time.Minute {
		p.Addf("admission_interval", "must be between 1ms and 1m, got %s", b.AdmissionInterval)
	}
	p.Range("gc_floor_mb", int64(b.GCFloorMB), 0, 1<<20)
	p.OneOf("overload_response", b.OverloadResponse, "nobid", "503")
	p.Range("gzip_min_bytes", int64(b.GzipMinBytes), 0, 1<<30)
	p.Range("gdpr_vendor_id", int64(b.GDPRVendorID), 0, 65535)
	for i, k := range b.TokenKeys {
		if len(k) < 16 {
			p.Addf(fmt.Sprintf("token_keys[%d]", i), "must be at least 16 bytes, got %d", len(k))
		}
	}
	p.Positive("notice_ttl", b.NoticeTTL)
	p.Positive("click_ttl", b.ClickTTL)
	p.OneOf("click_links", b.ClickLinks, "base", "absolute")
	p.Positive("event_timeout", b.EventTimeout)
	p.Range("access_log_sample", int64(b.AccessLogSample), 0, 1<<30)
	p.Positive("read_timeout", b.ReadTimeout)
	p.Positive("write_timeout", b.WriteTimeout)
	p.Positive("idle_timeout", b.IdleTimeout)
	p.Positive("shutdown_timeout", b.ShutdownTimeout)
	if b.ShutdownDelay < 0 || b.ShutdownDelay > 10*time.Minute {
		p.Addf("shutdown_delay", "must be between 0 and 10m, got %s", b.ShutdownDelay)
	}
	p.Range("user_cache_mb", int64(b.UserCacheMB), 1, 65536)
	p.Range("max_conns", int64(b.MaxConns), 1, 1<<20)
}

// Spend store choices (spend.store).
const (
	SpendStoreAuto      = "auto"
	SpendStorePebble    = "pebble"
	SpendStoreRedis     = "redis"
	SpendStoreAerospike = "aerospike"
)

// Spend configures the spend writer (package bidder/spend): buffered
// per-campaign spend and per-user frequency counts, flushed in batches.
type Spend struct {
	// Store is where spend is flushed: "auto" (aerospike when
	// aerospike.hosts is set, else redis when redis.addr is set, else the
	// embedded Pebble store in bidder.data_dir/spend), or one of "pebble",
	// "redis", "aerospike" explicitly.
	Store string `yaml:"store"`
	// FlushInterval is the timer flush of every campaign with unflushed counts.
	FlushInterval time.Duration `yaml:"flush_interval"`
	// Flushers is the most store flushes running at once.
	Flushers int `yaml:"flushers"`
	// ThresholdImps flushes a campaign once it has this many unflushed impressions.
	ThresholdImps int64 `yaml:"threshold_imps"`
	// BudgetFraction flushes a campaign once its unflushed spend passes this
	// fraction of its (daily or total) budget.
	BudgetFraction float64 `yaml:"budget_fraction"`
	// FlushTimeout bounds one store flush.
	FlushTimeout time.Duration `yaml:"flush_timeout"`
	// StartupReadTimeout is how long /readyz waits at start for the fleet
	// totals of the budgeted campaigns (budgeted campaigns never bid before
	// their totals are read, whatever this says).
	StartupReadTimeout time.Duration `yaml:"startup_read_timeout"`
	// ExposureWindow is how long an unbilled bid counts as exposure in the
	// budget check.
	ExposureWindow time.Duration `yaml:"exposure_window"`
	// WinRateFloor is the lowest win rate the exposure assumes.
	WinRateFloor float64 `yaml:"win_rate_floor"`
	// JournalDir holds the local journal of accepted notices (package
	// bidder/spend/journal); "" is bidder.data_dir/journal.
	JournalDir string `yaml:"journal_dir"`
	// JournalMaxPending is the most notices the journal keeps waiting for
	// the store; past it, billing notices are answered 503.
	JournalMaxPending int64 `yaml:"journal_max_pending"`
	// InstanceID names this bidder in the store's records: stable across
	// restarts, unique in the fleet; "" is the host name.
	InstanceID string `yaml:"instance_id"`
	// InstanceLease is the lease a bidder holds on its InstanceID in a
	// shared spend store (Redis, Aerospike), renewed every third of it: a
	// second live bidder with the same id refuses to start after waiting
	// this long and a third more; a restart after a crash takes the lease
	// over within that wait.
	InstanceLease time.Duration `yaml:"instance_lease"`
}

// Validate reports the problems of the spend section.
func (s Spend) Validate(p *Problems) {
	p.OneOf("store", s.Store, SpendStoreAuto, SpendStorePebble, SpendStoreRedis, SpendStoreAerospike)
	p.Positive("flush_interval", s.FlushInterval)
	p.Range("flushers", int64(s.Flushers), 1, 256)
	p.Range("threshold_imps", s.ThresholdImps, 1, 1<<40)
	if !(s.BudgetFraction >= 0 && s.BudgetFraction <= 1) {
		p.Addf("budget_fraction", "must be between 0 and 1, got %v", s.BudgetFraction)
	}
	p.Positive("flush_timeout", s.FlushTimeout)
	p.Positive("startup_read_timeout", s.StartupReadTimeout)
	p.Positive("exposure_window", s.ExposureWindow)
	if !(s.WinRateFloor > 0 && s.WinRateFloor <= 1) {
		p.Addf("win_rate_floor", "must be > 0 and <= 1, got %v", s.WinRateFloor)
	}
	if s.JournalDir != strings.TrimSpace(s.JournalDir) {
		p.Addf("journal_dir", "must not start or end with spaces, got %q", s.JournalDir)
	}
	p.Range("journal_max_pending", s.JournalMaxPending, 1, 1<<40)
	if s.InstanceLease < time.Second || s.InstanceLease > 10*time.Minute {
		p.Addf("instance_lease", "must be between 1s and 10m, got %s", s.InstanceLease)
	}
	if s.InstanceID != "" && !ValidInstanceID(s.InstanceID) {
		p.Addf("instance_id", "must be 1-32 of [0-9A-Za-z._-], got %q", s.InstanceID)
	}
}

// ValidInstanceID reports whether id is a valid spend.instance_id: 1-32
// of [0-9A-Za-z._-].
func ValidInstanceID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// JournalDir is spend.journal_dir, or bidder.data_dir/journal when unset.
func (c *Config) JournalDir() string {
	if c.Spend.JournalDir != "" {
		return c.Spend.JournalDir
	}
	return filepath.Join(c.Bidder.DataDir, "journal")
}

// User store choices (user.store).
const (
	UserStoreAuto      = "auto"
	UserStorePebble    = "pebble"
	UserStoreRedis     = "redis"
	UserStoreAerospike = "aerospike"
)

// User configures the user profile store (packages bidder/user,
// bidder/user/pebblestore, bidder/user/redisstore, bidder/user/aerostore).
type User struct {
	// Store holds the profiles: "auto" (aerospike when aerospike.hosts is
	// set, else redis when redis.addr is set, else the embedded Pebble
	// store in bidder.data_dir/users), or one of "pebble", "redis",
	// "aerospike" explicitly.
	Store string `yaml:"store"`
	// MaxGroups is the most product groups a profile keeps (the group viewed
	// longest ago is dropped).
	MaxGroups int `yaml:"max_groups"`
	// MaxProductsPerGroup is the most viewed products kept per group (the
	// oldest dropped).
	MaxProductsPerGroup int `yaml:"max_products_per_group"`
	// TTL is how long a profile lives after its last write (a /event view
	// or a load); bid reads never renew it.
	TTL time.Duration `yaml:"ttl"`
	// Cookie is rtbd's own uid cookie, read and set by /event, /usersync
	// and /match.
	Cookie Cookie `yaml:"cookie"`
	// TrustQueryUID accepts an unsigned uid= in the query of /event and
	// /match (a uid signed with bidder.token_keys is always accepted).
	TrustQueryUID bool `yaml:"trust_query_uid"`
	// SyncRedirectHosts are the hosts /usersync and /match may redirect
	// to: "host" (https only) or "http://host" (http allowed too), each an
	// exact host[:port] match after URL parsing.
	SyncRedirectHosts []string `yaml:"sync_redirect_hosts"`
	// MatchTTL is how long a /match entry (exchange id -> rtbd uid) lives
	// after its last write.
	MatchTTL time.Duration `yaml:"match_ttl"`
}

// Cookie is rtbd's uid cookie. It is always SameSite=None; Secure
// (third-party context), HttpOnly.
type Cookie struct {
	// Name is the cookie's name.
	Name string `yaml:"name"`
	// Domain is its Domain attribute; "": the host that set it.
	Domain string `yaml:"domain"`
	// MaxAge is its Max-Age, renewed whenever rtbd sets it.
	MaxAge time.Duration `yaml:"max_age"`
}

// Validate reports the problems of the cookie subsection.
func (c Cookie) Validate(p *Problems) {
	if !isToken(c.Name, 64) {
		p.Addf("name", "must be 1-64 letters, digits, '_' or '-', got %q", c.Name)
	}
	if c.Domain != "" && (len(c.Domain) > 253 || strings.ContainsAny(c.Domain, " ;,/:\\\"'=") ||
		strings.ContainsFunc(c.Domain, func(r rune) bool { return r < 0x20 || r >= 0x7f })) {
		p.Addf("domain", "must be a host name (or empty), got %q", c.Domain)
	}
	if c.MaxAge < time.Second {
		p.Addf("max_age", "must be at least 1s, got %v", c.MaxAge)
	}
}

// Validate reports the problems of the user section.
func (u User) Validate(p *Problems) {
	p.OneOf("store", u.Store, UserStoreAuto, UserStorePebble, UserStoreRedis, UserStoreAerospike)
	p.Range("max_groups", int64(u.MaxGroups), 1, 1000)
	p.Range("max_products_per_group", int64(u.MaxProductsPerGroup), 1, 10000)
	if u.TTL < time.Second {
		p.Addf("ttl", "must be at least 1s (Aerospike counts whole seconds), got %v", u.TTL)
	}
	if u.MatchTTL < time.Second {
		p.Addf("match_ttl", "must be at least 1s (Aerospike counts whole seconds), got %v", u.MatchTTL)
	}
	for i, h := range u.SyncRedirectHosts {
		if msg := CheckRedirectHost(h); msg != "" {
			p.Addf(fmt.Sprintf("sync_redirect_hosts[%d]", i), "%s, got %q", msg, h)
		}
	}
}

// CheckRedirectHost returns "" when h is an entry of
// user.sync_redirect_hosts ("host[:port]" or "http://host[:port]": a
// lower-case host name or IP literal, nothing else), else what is wrong.
func CheckRedirectHost(h string) string {
	host := strings.TrimPrefix(h, "http://")
	switch {
	case host == "":
		return "must name a host"
	case strings.ContainsFunc(host, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == ':' || r == '[' || r == ']')
	}):
		return "must be host[:port] or http://host[:port] in lower case, without scheme (https is implied), path or userinfo"
	}
	return ""
}

// isToken reports whether s is 1 to max ASCII letters, digits, '_' or '-'.
func isToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// DefaultExchange is the exchange of POST /openrtb2/bid (no name in the
// path); it exists whether or not exchanges lists it.
const DefaultExchange = "default"

// DefaultUIDMacro is the uid macro of an exchange that sets none.
const DefaultUIDMacro = "$UID"

// MaxExchanges bounds the exchanges map (each is a metric label value).
const MaxExchanges = 64

// Exchanges maps an exchange's name to its settings. A name is 1-32
// lower-case letters, digits, '_' or '-': it is the path of
// POST /openrtb2/bid/{name}, the x= of /match and a metric label value.
// Entries are set in the file only (no environment variable or flag names
// them).
type Exchanges map[string]Exchange

// Exchange is one exchange's settings.
type Exchange struct {
	// UIDMacro is the text /usersync replaces with rtbd's uid in the
	// exchange's redirect URL; "": DefaultUIDMacro.
	UIDMacro string `yaml:"uid_macro"`
	// Billing says which notice charges a bid's impression: "burl" (the
	// billing notice, /bill), "nurl" (the win notice, /win, as well, for
	// exchanges that never fire burl) or "render" (the creative's own
	// impression tracker, /imp, as well); "": burl.
	Billing string `yaml:"billing"`
	// PriceKeys decrypt the exchange's encrypted clearing prices; empty:
	// notice.price_keys.
	PriceKeys PriceKeys `yaml:"price_keys"`
	// Domain is the exchange's advertising system domain, as its
	// sellers.json and the publishers' ads.txt name it: the last node of
	// a supply chain it sends must be it (campaigns with
	// supply.authorized_only); "": not checked.
	Domain string `yaml:"domain"`
	// AllowCIDRs are the addresses or CIDR prefixes the exchange's bid
	// requests and server-to-server notices come from; a request from
	// outside is refused (403). Empty: any source.
	AllowCIDRs []string `yaml:"allow_cidrs,omitempty"`
	// LossNotices says the exchange fires the lurl of lost bids; without
	// them (false, Prebid Server's way) a first-price bid with no win
	// notice within NoticeWait counts as lost for bid shading.
	LossNotices bool `yaml:"loss_notices"`
	// NoticeWait is how long after a bid its win notice may still arrive;
	// bid shading learns only from bids older than that. 0: 60s.
	NoticeWait time.Duration `yaml:"notice_wait"`
}

// Prefixes returns AllowCIDRs parsed (validated: each is a prefix or an
// address, an address being its own /32 or /128).
func (e Exchange) Prefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range e.AllowCIDRs {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out
}

// Macro returns the uid macro in force: UIDMacro or DefaultUIDMacro.
func (e Exchange) Macro() string {
	if e.UIDMacro == "" {
		return DefaultUIDMacro
	}
	return e.UIDMacro
}

// Validate reports the problems of one exchange's settings.
func (e Exchange) Validate(p *Problems) {
	if len(e.UIDMacro) > 64 || strings.ContainsFunc(e.UIDMacro, func(r rune) bool { return r <= 0x20 || r >= 0x7f }) {
		p.Addf("uid_macro", "must be at most 64 printable ASCII characters without spaces, got %q", e.UIDMacro)
	}
	if e.Billing != "" {
		p.OneOf("billing", e.Billing, "burl", "nurl", "render")
	}
	if msg := checkDomain(e.Domain, 253); e.Domain != "" && msg != "" {
		p.Addf("domain", "%s, got %q", msg, e.Domain)
	}
	for i, s := range e.AllowCIDRs {
		if _, err := netip.ParsePrefix(s); err != nil {
			if _, err := netip.ParseAddr(s); err != nil {
				p.Addf(fmt.Sprintf("allow_cidrs[%d]", i), "want an IP address or a CIDR prefix (203.0.113.0/24), got %q", s)
			}
		}
	}
	if e.NoticeWait < 0 || e.NoticeWait > time.Hour {
		p.Addf("notice_wait", "must be between 0 (60s) and 1h, got %v", e.NoticeWait)
	}
}

// Validate reports the problems of the exchanges map: its names (each
// entry's settings validate themselves, as exchanges.NAME).
func (x Exchanges) Validate(p *Problems) {
	if len(x) > MaxExchanges {
		p.Addf("", "at most %d exchanges, got %d", MaxExchanges, len(x))
	}
	for _, name := range sortedKeys(x) {
		if !ValidExchangeName(name) {
			p.Addf(name, "an exchange name must be 1-32 lower-case letters, digits, '_' or '-'")
		}
	}
}

// ValidExchangeName reports whether name is a valid exchange name.
func ValidExchangeName(name string) bool {
	return isToken(name, 32) && strings.ToLower(name) == name
}

// Names returns the exchanges' names, sorted, DefaultExchange included
// (first).
func (x Exchanges) Names() []string {
	names := []string{DefaultExchange}
	for _, n := range sortedKeys(x) {
		if n != DefaultExchange {
			names = append(names, n)
		}
	}
	return names
}

// Get returns the settings of exchange name and whether it exists
// (DefaultExchange always does).
func (x Exchanges) Get(name string) (Exchange, bool) {
	e, ok := x[name]
	return e, ok || name == DefaultExchange
}

// UserStoreKind resolves user.store: auto is aerospike when
// aerospike.hosts is set, else redis when redis.addr is set, else pebble.
func (c *Config) UserStoreKind() string {
	switch {
	case c.User.Store != "" && c.User.Store != UserStoreAuto:
		return c.User.Store
	case c.Aerospike.Hosts != "":
		return UserStoreAerospike
	case c.Redis.Addr != "":
		return UserStoreRedis
	}
	return UserStorePebble
}

// Redis is a Redis server shared by a fleet of bidders.
type Redis struct {
	// Addr is host:port; "" means no Redis.
	Addr string `yaml:"addr"`
	// Prefix starts every key rtbd writes or reads.
	Prefix string `yaml:"prefix"`
}

// Validate reports the problems of the redis section.
func (r Redis) Validate(p *Problems) {
	if r.Addr != "" {
		p.HostPort("addr", r.Addr)
	}
	if r.Prefix == "" || len(r.Prefix) > 64 || strings.ContainsAny(r.Prefix, " \t\r\n{}") {
		p.Addf("prefix", "must be 1-64 characters without spaces, control characters or braces, got %q", r.Prefix)
	}
}

// Aerospike is an Aerospike cluster shared by a fleet of bidders.
type Aerospike struct {
	// Hosts is "host[:port][,host[:port]...]" (port default 3000); ""
	// means no Aerospike.
	Hosts string `yaml:"hosts"`
	// Namespace holds rtbd's sets.
	Namespace string `yaml:"namespace"`
}

// Validate reports the problems of the aerospike section.
func (a Aerospike) Validate(p *Problems) {
	for _, h := range strings.Split(a.Hosts, ",") {
		h = strings.TrimSpace(h)
		if a.Hosts != "" && (h == "" || strings.ContainsAny(h, " /")) {
			p.Addf("hosts", "want host[:port][,host[:port]...], got %q", a.Hosts)
			break
		}
	}
	p.NonEmpty("namespace", a.Namespace)
}

// Fraud configures the in-memory copy of the fraud block lists kept in
// Redis (package bidder/fraud); used only when redis.addr is set.
type Fraud struct {
	// CheckInterval is how often the lists' version key is read.
	CheckInterval time.Duration `yaml:"check_interval"`
	// ReloadInterval forces a full reload even without a version change.
	ReloadInterval time.Duration `yaml:"reload_interval"`
}

// Validate reports the problems of the fraud section.
func (f Fraud) Validate(p *Problems) {
	p.Positive("check_interval", f.CheckInterval)
	p.Positive("reload_interval", f.ReloadInterval)
}

// Supply configures the supply-path files of package bidder/supply.
type Supply struct {
	// Dir holds sellers/<advertising system domain>.json,
	// ads/<domain>.txt and app-ads/<domain>.txt; "": no files (campaigns
	// with supply.authorized_only then bid on nothing).
	Dir string `yaml:"dir"`
	// RefreshInterval is how often Dir is read again (changed files
	// only; an unreadable file keeps its last good version).
	RefreshInterval time.Duration `yaml:"refresh_interval"`
}

// Validate reports the problems of the supply section.
func (s Supply) Validate(p *Problems) {
	p.Positive("refresh_interval", s.RefreshInterval)
}

// checkDomain returns why d is not a lower-case domain name of at most max
// bytes (letters, digits, '-', '.', with a dot), "" when it is.
func checkDomain(d string, max int) string {
	if len(d) == 0 || len(d) > max || !strings.Contains(d, ".") || d[0] == '.' || d[len(d)-1] == '.' {
		return fmt.Sprintf("must be a domain name of at most %d bytes", max)
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return fmt.Sprintf("must be a lower-case domain name of at most %d bytes", max)
		}
	}
	return ""
}

// Notice configures the win (/win) and billing (/bill) notice handler.
type Notice struct {
	// ReplayWindow is how long a notice (auction, imp, kind) is remembered
	// to reject a replay; per bidder process.
	ReplayWindow time.Duration `yaml:"replay_window"`
	// ClockSkew is added to a notice token's expiry to make the expiry of
	// its charge-once key in the store (bidders' clocks differ).
	ClockSkew time.Duration `yaml:"clock_skew"`
	// PriceKeys decrypt Google-style encrypted clearing prices.
	PriceKeys PriceKeys `yaml:"price_keys"`
}

// Validate reports the problems of the notice section.
func (n Notice) Validate(p *Problems) {
	p.Positive("replay_window", n.ReplayWindow)
	if n.ClockSkew < 0 || n.ClockSkew > 24*time.Hour {
		p.Addf("clock_skew", "must be between 0 and 24h, got %v", n.ClockSkew)
	}
}

// PriceKeys are the exchange's price encryption and integrity keys, web-safe
// (or standard) base64 as exchanges hand them out. Both empty: plain
// decimal prices only.
type PriceKeys struct {
	// Encryption is the encryption key (base64).
	Encryption string `yaml:"encryption" secret:"true"`
	// Integrity is the integrity key (base64).
	Integrity string `yaml:"integrity" secret:"true"`
}

// Validate reports the problems of the price_keys subsection.
func (k PriceKeys) Validate(p *Problems) {
	if (k.Encryption == "") != (k.Integrity == "") {
		p.Addf("encryption", "encryption and integrity must be set together")
		return
	}
	if _, err := DecodeKey(k.Encryption); err != nil {
		p.Addf("encryption", "%v", err)
	}
	if _, err := DecodeKey(k.Integrity); err != nil {
		p.Addf("integrity", "%v", err)
	}
}

// DecodeKey decodes a base64 key in any of the four alphabets (standard or
// web-safe, padded or not); "" gives nil.
func DecodeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.RawURLEncoding, base64.StdEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) > 0 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("must be base64, got %d characters that do not decode", len(s))
}

// checkPublicURL returns "" if u is http(s)://host[:port][/path] with no
// query or fragment, else what is wrong.
func checkPublicURL(u string) string {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "https://")
	}
	switch {
	case !ok:
		return "must start with http:// or https://"
	case rest == "" || rest[0] == '/':
		return "must name a host"
	case strings.ContainsAny(rest, "?#\"' <>\\") || strings.ContainsFunc(rest, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "must have no query, fragment, quotes, spaces or control characters"
	}
	return ""
}

// Log configures the process logger.
type Log struct {
	// Level is the minimum level logged: debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is json, console or auto (console on a terminal, else json).
	Format string `yaml:"format"`
}

// Log formats (Log.Format).
const (
	LogFormatAuto    = "auto"
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// Validate reports the problems of the log section.
func (l Log) Validate(p *Problems) {
	p.OneOf("level", l.Level, "debug", "info", "warn", "error")
	p.OneOf("format", l.Format, LogFormatAuto, LogFormatJSON, LogFormatConsole)
}

// Admin configures the admin HTTP listener (health, readiness, metrics,
// pprof, mode-specific admin endpoints).
type Admin struct {
	// Listen is the host:port of the admin listener; empty: the mode's
	// default (DefaultBidderAdminListen, DefaultCatalogAdminListen), so a
	// bidder and a catalog node with default settings run on one host.
	// Config.AdminListen resolves it.
	Listen string `yaml:"listen"`
	// Pprof serves /debug/pprof/ on the admin listener.
	Pprof bool `yaml:"pprof"`
	// ReadyCatalogGrace is how long a bidder on a remote catalog may reach
	// no catalog node before /readyz turns 503. Default 5s.
	ReadyCatalogGrace time.Duration `yaml:"ready_catalog_grace"`
}

// Default admin listeners, per mode.
const (
	DefaultBidderAdminListen  = "127.0.0.1:9091"
	DefaultCatalogAdminListen = "127.0.0.1:9092"
)

// AdminListen is admin.listen, or the default of c.Mode when it is empty.
func (c *Config) AdminListen() string {
	switch {
	case c.Admin.Listen != "":
		return c.Admin.Listen
	case c.Mode == ModeCatalog:
		return DefaultCatalogAdminListen
	}
	return DefaultBidderAdminListen
}

// Validate reports the problems of the admin section.
func (a Admin) Validate(p *Problems) {
	if a.Listen != "" {
		p.HostPort("listen", a.Listen)
	}
	p.Positive("ready_catalog_grace", a.ReadyCatalogGrace)
}

// Catalog configures the product index (embedded or served by catalog
// nodes), the catalog gRPC server and the client bidders use.
type Catalog struct {
	// Data is the index data directory (its versions live below it).
	Data string `yaml:"data"`
	// Target is the gRPC target of remote catalog nodes (static:///,
	// dns:/// or file:///); "" means the embedded local index.
	Target string `yaml:"target"`
	// GRPCListen is the host:port of the gRPC server in catalog mode.
	GRPCListen string `yaml:"grpc_listen"`
	// BlockCacheMB is the Pebble block cache size, in MiB.
	BlockCacheMB int `yaml:"block_cache_mb"`
	// HotCacheEntries is the size of the in-memory hot-product cache, in
	// entries; 0 disables it.
	HotCacheEntries int `yaml:"hot_cache_entries"`
	// MaxIDs is the most product ids accepted in one lookup.
	MaxIDs int `yaml:"max_ids"`
	// RefreshInterval is how often a remote client re-resolves its target.
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// ConnsPerNode is the number of gRPC connections a client keeps to each
	// node.
	ConnsPerNode int `yaml:"conns_per_node"`
	// CallTimeout is the deadline of a call whose context has none.
	CallTimeout time.Duration `yaml:"call_timeout"`
	// NearCacheBytes bounds, in bytes, the remote client's near cache of
	// catalog products (absences included); 0 turns it off.
	NearCacheBytes int64 `yaml:"near_cache_bytes"`
	// NearCacheGrace is how long near-cache entries of an older index
	// version are still served once the client has seen a newer one.
	NearCacheGrace time.Duration `yaml:"near_cache_grace"`
	// NearCacheMaxAge is the longest any near-cache entry is served.
	NearCacheMaxAge time.Duration `yaml:"near_cache_max_age"`
	// WatchInterval is how often a serving process checks Data for a newly
	// published index version, and how often a remote client with the near
	// cache asks a node for its index version.
	WatchInterval time.Duration `yaml:"watch_interval"`
	// TLS of the gRPC link; all empty = cleartext h2c.
	TLS TLS `yaml:"tls"`
	// GracefulTimeout is how long a node drains in-flight calls on shutdown.
	GracefulTimeout time.Duration `yaml:"graceful_timeout"`
	// MaxConcurrentStreams is the most calls a node runs at once on one
	// HTTP/2 connection; the client's further streams are refused.
	MaxConcurrentStreams uint32 `yaml:"max_concurrent_streams"`
	// MaxConns is the most client connections a node holds; one more is
	// closed as soon as it is accepted (and counted).
	MaxConns int `yaml:"max_conns"`
	// MaxConnsPerAddr is the most client connections a node holds from one
	// IP address; one more is closed as soon as it is accepted (and
	// counted).
	MaxConnsPerAddr int `yaml:"max_conns_per_addr"`
	// HandshakeTimeout is how long a node waits for a new connection's
	// HTTP/2 preface (and TLS handshake) before closing it.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// MaxConnAge is how long a node keeps a client connection before it
	// asks the client (GOAWAY) to open a new one.
	MaxConnAge time.Duration `yaml:"max_conn_age"`
	// MaxConnAgeGrace is how long calls on a connection past MaxConnAge may
	// still take before the connection is closed.
	MaxConnAgeGrace time.Duration `yaml:"max_conn_age_grace"`
	// KeepaliveMinTime is the shortest interval between a client's keepalive
	// pings a node accepts; a client pinging faster is disconnected.
	KeepaliveMinTime time.Duration `yaml:"keepalive_min_time"`
	// MaxCallTime is the deadline a node gives a call whose client gave none.
	MaxCallTime time.Duration `yaml:"max_call_time"`
	// MaxConnUnreadBytes is the most bytes of answers a node holds for one
	// connection whose client has not read them; a call over it is
	// refused (RESOURCE_EXHAUSTED).
	MaxConnUnreadBytes int `yaml:"max_conn_unread_bytes"`
}

// Validate reports the problems of the catalog section. Its tls subsection
// validates itself (TLS.Validate).
func (c Catalog) Validate(p *Problems) {
	p.NonEmpty("data", c.Data)
	if c.Target != "" {
		if msg := checkTarget(c.Target); msg != "" {
			p.Addf("target", "%s, got %q", msg, c.Target)
		}
	}
	p.HostPort("grpc_listen", c.GRPCListen)
	p.Range("block_cache_mb", int64(c.BlockCacheMB), 8, 65536)
	p.Range("hot_cache_entries", int64(c.HotCacheEntries), 0, 100_000_000)
	p.Range("max_ids", int64(c.MaxIDs), 1, 100_000)
	p.Positive("refresh_interval", c.RefreshInterval)
	p.Range("conns_per_node", int64(c.ConnsPerNode), 1, 64)
	p.Positive("call_timeout", c.CallTimeout)
	p.Range("near_cache_bytes", c.NearCacheBytes, 0, 1<<40)
	p.Positive("near_cache_grace", c.NearCacheGrace)
	p.Positive("near_cache_max_age", c.NearCacheMaxAge)
	if c.NearCacheGrace > 0 && c.NearCacheMaxAge > 0 && c.NearCacheGrace > c.NearCacheMaxAge {
		p.Addf("near_cache_grace", "must be at most near_cache_max_age (%s), got %s", c.NearCacheMaxAge, c.NearCacheGrace)
	}
	p.Positive("watch_interval", c.WatchInterval)
	p.Positive("graceful_timeout", c.GracefulTimeout)
	p.Range("max_concurrent_streams", int64(c.MaxConcurrentStreams), 1, 1<<20)
	p.Range("max_conns", int64(c.MaxConns), 1, 1_000_000)
	p.Range("max_conns_per_addr", int64(c.MaxConnsPerAddr), 1, 1_000_000)
	p.Positive("handshake_timeout", c.HandshakeTimeout)
	p.Positive("max_conn_age", c.MaxConnAge)
	p.Positive("max_conn_age_grace", c.MaxConnAgeGrace)
	p.Positive("keepalive_min_time", c.KeepaliveMinTime)
	p.Positive("max_call_time", c.MaxCallTime)
	p.Range("max_conn_unread_bytes", int64(c.MaxConnUnreadBytes), 64<<10, 1<<30)
}

// checkTarget returns "" if target is a well-formed catalog target, else what
// is wrong with it.
func checkTarget(target string) string {
	scheme, rest := "", ""
	for _, s := range []string{"static:///", "dns:///", "file:///"} {
		if r, ok := strings.CutPrefix(target, s); ok {
			scheme, rest = s, r
			break
		}
	}
	if scheme == "" {
		return "must start with static:///, dns:/// or file:///"
	}
	if strings.TrimSpace(rest) == "" {
		return "must name nodes after " + scheme
	}
	switch scheme {
	case "static:///":
		for _, addr := range strings.Split(rest, ",") {
			if msg := checkHostPort(strings.TrimSpace(addr)); msg != "" {
				return "static:/// wants a comma-separated list of host:port: " + msg
			}
		}
	case "dns:///":
		if strings.ContainsAny(rest, " \t/,") {
			return "dns:/// wants one name[:port]"
		}
	}
	return ""
}

// TLS holds the PEM files of a TLS link. All empty = no TLS.
type TLS struct {
	// CertFile is the PEM certificate (chain) of this side.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM private key of CertFile.
	KeyFile string `yaml:"key_file"`
	// CAFile is the PEM CA bundle used to verify the peer.
	CAFile string `yaml:"ca_file"`
}

// Enabled reports whether TLS is configured (a certificate and key are set).
func (t TLS) Enabled() bool { return t.CertFile != "" && t.KeyFile != "" }

// Validate reports the problems of a TLS subsection: the certificate and the
// key go together. It does not read the files.
func (t TLS) Validate(p *Problems) {
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		p.Addf("key_file", "must be set when cert_file is set (%q)", t.CertFile)
	case t.CertFile == "" && t.KeyFile != "":
		p.Addf("cert_file", "must be set when key_file is set (%q)", t.KeyFile)
	}
}

// Default returns the defaults of rtbd.yaml, with no file and no environment
// applied. The error is non-nil only if the embedded file is broken.
func Default() (*Config, error) {
	c := new(Config)
	if err := c.decode("rtbd.yaml (embedded)", defaultYAML); err != nil {
		return nil, err
	}
	return c, nil
}

// Load returns the configuration: the embedded defaults, then the YAML file
// at path (skipped if path is ""), then the RTBD_* environment variables.
// Every problem of the file (unknown key, bad value) or of the environment is
// reported at once, each naming its key. Load does not Validate: callers
// apply flags with Set and then call Validate.
func Load(path string) (*Config, error) {
	return load(path, os.Environ())
}

// load is Load with the environment given as "NAME=value" entries.
func load(path string, environ []string) (*Config, error) {
	c, err := Default()
	if err != nil {
		return nil, err
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("configs: %w", err)
		}
		if err := c.decode(path, data); err != nil {
			return nil, err
		}
	}
	if err := c.applyEnv(environ); err != nil {
		return nil, err
	}
	return c, nil
}

// decode applies a YAML document on top of c. Keys absent from the document
// keep their value.
func (c *Config) decode(name string, data []byte) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file: nothing to override
		}
		return fmt.Errorf("configs: %s: %w", name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("configs: %s: want one YAML document, found more", name)
	}
	if len(doc.Content) == 0 {
		return nil // comments only
	}
	// Check every key and value first so that all problems are reported,
	// each with its full dotted key; the decoder would stop at the first.
	var fe FileError
	var files []secretFile
	checkNode(&fe, name, doc.Content[0], typeOfConfig, "", &files)
	if len(fe.Problems) > 0 {
		return &fe
	}
	if len(files) > 0 {
		// Decode what is left without the <key>_file entries (not fields),
		// then read each file into its secret.
		b, err := yaml.Marshal(&doc)
		if err != nil {
			return fmt.Errorf("configs: %s: %w", name, err)
		}
		data = b
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(c); err != nil {
		return fmt.Errorf("configs: %s: %w", name, err)
	}
	var errs []error
	for _, f := range files {
		if err := c.setFromFile(f.key, fmt.Sprintf("%s:%d: %s%s", name, f.line, f.key, FileSuffix), f.file); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FileError lists every problem of a config file (unknown keys, values of
// the wrong type), each as "file:line: key: problem".
type FileError struct {
	Problems []string
	kinds    []error // ErrUnknownKey or ErrInvalidValue, one per problem
}

// Error returns the problems, one per line, each prefixed "configs: ".
func (e *FileError) Error() string {
	return "configs: " + strings.Join(e.Problems, "\nconfigs: ")
}

// Unwrap makes errors.Is(err, ErrUnknownKey) and errors.Is(err,
// ErrInvalidValue) report whether the file has such a problem.
func (e *FileError) Unwrap() []error { return e.kinds }

func (e *FileError) add(kind error, format string, args ...any) {
	e.Problems = append(e.Problems, fmt.Sprintf(format, args...))
	e.kinds = append(e.kinds, kind)
}

// Set sets one setting from its string form, as a command-line flag does.
// key is the dotted YAML path ("catalog.block_cache_mb",
// "catalog.tls.cert_file"). Values: decimal integers, booleans
// (true/false/1/0), durations ("50ms", "30s"), floats, strings as they are,
// and lists of strings comma-separated ("a, b" = [a b]; "" = []). An
// unknown key wraps ErrUnknownKey, a bad value ErrInvalidValue; both errors
// name the key, and c is unchanged then.
func (c *Config) Set(key, value string) error {
	if base, ok := secretFileKey(key); ok {
		return c.setFromFile(base, key, value)
	}
	v, err := lookup(c, key)
	if err != nil {
		return err
	}
	if why := setString(v, value); why != "" {
		return fmt.Errorf("%w for %s: %q (%s)", ErrInvalidValue, key, value, why)
	}
	return nil
}

// Get returns the string form of one setting (as Set accepts it), or an error
// wrapping ErrUnknownKey.
func (c *Config) Get(key string) (string, error) {
	v, err := lookup(c, key)
	if err != nil {
		return "", err
	}
	return formatValue(v), nil
}

// Keys returns the dotted key of every setting, in declaration order.
func (c *Config) Keys() []string {
	var keys []string
	walkLeaves(valueOf(c), "", func(path string, _ reflect.Value) { keys = append(keys, path) })
	return keys
}

// EnvName returns the environment variable that overrides the setting key.
func EnvName(key string) string { return envName(key) }

// envName returns the environment variable that overrides the setting key:
// "catalog.block_cache_mb" -> "RTBD_CATALOG_BLOCK_CACHE_MB".
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// applyEnv applies every RTBD_* variable of environ ("NAME=value" entries).
// A variable that names no setting is an error (a typo must not be silently
// ignored), except EnvConfigPath.
func (c *Config) applyEnv(environ []string) error {
	vars := make(map[string]string)
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(name, EnvPrefix) && name != EnvConfigPath {
			vars[name] = value
		}
	}
	if len(vars) == 0 {
		return nil
	}
	var errs []error
	for _, key := range SecretKeys() {
		if strings.Contains(key, AnyName) {
			continue // inside a map of sections: set in the file only
		}
		name := envName(key + FileSuffix)
		if file, ok := vars[name]; ok {
			delete(vars, name)
			if err := c.setFromFile(key, key+FileSuffix+" (environment variable "+name+")", file); err != nil {
				errs = append(errs, err)
			}
		}
	}
	walkLeaves(valueOf(c), "", func(path string, fv reflect.Value) {
		name := envName(path)
		value, ok := vars[name]
		if !ok {
			return
		}
		delete(vars, name)
		if why := setString(fv, value); why != "" {
			errs = append(errs, fmt.Errorf("%w for %s (environment variable %s): %q (%s)",
				ErrInvalidValue, path, name, value, why))
		}
	})
	for _, name := range sortedKeys(vars) {
		errs = append(errs, fmt.Errorf("%w: environment variable %s names no setting", ErrUnknownKey, name))
	}
	return errors.Join(errs...)
}

// Validate checks every setting and returns nil or a *ValidationError that
// lists every problem found, each naming its dotted key. Each section checks
// itself through its Validate(*Problems) method.
func (c *Config) Validate() error {
	var p Problems
	p.OneOf("mode", c.Mode, ModeBidder, ModeCatalog)
	checkNotMasked(c, &p)
	validateSections(valueOf(c), &p)
	if len(p.List()) == 0 {
		return nil
	}
	return &ValidationError{Problems: p.List()}
}

// ValidationError lists every problem Validate found, each like
// "catalog.block_cache_mb: must be >= 8, got 2".
type ValidationError struct {
	Problems []string
}

// Error returns the problems, one per line.
func (e *ValidationError) Error() string { return strings.Join(e.Problems, "\n") }

// YAML returns the configuration as a YAML document, with the comments of
// rtbd.yaml on each key: what `rtbd config print` shows, and a valid config
// file to start from.
//
// Secret settings show as Mask (see Masked): the output is for people and
// logs; secrets are given by environment or <key>_file.
func (c *Config) YAML() ([]byte, error) {
	var root yaml.Node
	if err := root.Encode(c.Masked()); err != nil {
		return nil, fmt.Errorf("configs: encode: %w", err)
	}
	var defaults yaml.Node
	if err := yaml.Unmarshal(defaultYAML, &defaults); err != nil {
		return nil, fmt.Errorf("configs: rtbd.yaml (embedded): %w", err)
	}
	if len(defaults.Content) > 0 {
		copyComments(&root, defaults.Content[0])
	}
	doc := &yaml.Node{
		Kind:        yaml.DocumentNode,
		HeadComment: "rtbd configuration (defaults with the config file, environment and flags applied).",
		Content:     []*yaml.Node{&root},
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("configs: encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("configs: encode: %w", err)
	}
	return buf.Bytes(), nil
}

// copyComments copies the comments of the keys of from (the embedded
// defaults) onto the same keys of to, recursively.
func copyComments(to, from *yaml.Node) {
	if to.Kind != yaml.MappingNode || from.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(to.Content); i += 2 {
		for j := 0; j+1 < len(from.Content); j += 2 {
			if to.Content[i].Value != from.Content[j].Value {
				continue
			}
			tk, fk := to.Content[i], from.Content[j]
			tk.HeadComment, tk.LineComment, tk.FootComment = fk.HeadComment, fk.LineComment, fk.FootComment
			to.Content[i+1].LineComment = from.Content[j+1].LineComment
			copyComments(to.Content[i+1], from.Content[j+1])
			break
		}
	}
}

// checkResizeURL returns "" if u is empty or an image resize URL template:
// an absolute http(s) URL with {w} and {h}, {url} once, no other braces,
// and no spaces, quotes, backslashes, < > or non-ASCII characters (the
// rules of the bidder's creative.ParseResizeURL), else what is wrong.
func checkResizeURL(u string) string {
	if u == "" {
		return ""
	}
	if msg := checkPublicURL(strings.SplitN(u, "?", 2)[0]); msg != "" && !strings.HasPrefix(msg, "must have no query") {
		return msg
	}
	if strings.ContainsAny(u, "\"'<>\\` ") || strings.ContainsFunc(u, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
		return "must have no spaces, quotes, backslashes, < > or control or non-ASCII characters"
	}
	rest := strings.NewReplacer("{w}", "", "{h}", "", "{url}", "").Replace(u)
	if strings.ContainsAny(rest, "{}") {
		return "only {w}, {h} and {url} may be in braces"
	}
	if !strings.Contains(u, "{w}") || !strings.Contains(u, "{h}") || strings.Count(u, "{url}") != 1 {
		return "must have {w} and {h}, and {url} once"
	}
	return ""
}
