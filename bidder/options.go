package bidder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/notice"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/usersync"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/overload"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// ProductStore reads ad product masters: the local index (*catalog.Local)
// or remote catalog nodes (*remote.Client), through the same code path.
// The returned products are shared and must not be modified. It must honour
// ctx: return soon after its deadline passes (both implementations do),
// since the bidder calls it on the request's goroutine. A store that
// answers lookups in batches (catalog.BatchGetter, catalog.CachedGetter:
// the remote client) is asked in batches (see catalog.Fetcher).
type ProductStore interface {
	GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// UserStore holds the retargeting profiles (user.store: *pebblestore.Store, the
// embedded Pebble keyspace; *redisstore.Store; *aerostore.Store; all
// pass bidder/user/usertest). Get decodes into the caller's reused Profile
// and never renews the profile's expiry; it must honour ctx like
// ProductStore, since a slow store must cost a no-bid, not a stall.
type UserStore interface {
	Get(ctx context.Context, uid string, p *user.Profile) (found bool, err error)
	RecordView(ctx context.Context, uid string, group, pid int64) error
}

// CampaignSource gives the current campaigns (*campaign.Watcher, which
// reloads the campaigns file). Current is called once per request and must
// be cheap (an atomic load).
type CampaignSource interface {
	Current() *campaign.Set
}

// Options configure a Bidder. Products, Users, Campaigns and Keys are
// required; every other zero value takes the default noted (the defaults of
// configs/rtbd.yaml).
type Options struct {
	Products  ProductStore
	Users     UserStore
	Campaigns CampaignSource
	// Keys sign the win, bill and click tokens, and verify signed uids.
	Keys *token.Keys

	// Exchanges are the exchanges served by name, at PathBid + "/" + Name
	// (404 for any other name); exchange.Default (PathBid) always exists
	// and may be listed to give it settings.
	Exchanges []exchange.Exchange
	// UserID configures rtbd's uid cookie and the uid rules of /event,
	// /usersync and /match (package usersync).
	UserID usersync.Options

	// PublicURL is the base of nurl, burl and click URLs
	// (http(s)://host[:port], no trailing slash). Default http://127.0.0.1:8080.
	PublicURL string
	// SecurePublicURL is the base of those URLs for secure imps
	// (imp.secure=1): https://host[:port], may equal PublicURL. Default:
	// PublicURL when it is https; else none, and a secure imp is a no-bid
	// (nbr 509).
	SecurePublicURL string
	// NoticeURL is the base of the server-to-server notice URLs (nurl,
	// burl, lurl: /win, /bill, /loss), on secure imps too: the exchange
	// listener's URL when browsers are served apart (bidder.public_listen).
	// Default: PublicURL (SecurePublicURL on a secure imp).
	NoticeURL string
	// ImageResizeURL is an optional image resize service's URL template
	// (creative.ParseResizeURL: {w}, {h}, {url}) that serves native image
	// sizes the catalog lacks; "" serves the product images as they are.
	ImageResizeURL string
	// DemoImages serves the demo catalog's images (package
	// bidder/demoimg) at demoimg.PathPrefix.
	DemoImages bool
	// Seat is seatbid.seat for campaigns without a seat. Default "rtbd".
	Seat string
	// Currency of bids (bidresponse.cur), an ISO 4217 code in any case
	// (written in upper case). Default "USD".
	Currency string
	// Rates convert campaign bids and floors, and charges into campaign
	// currencies. Default: USD only. SetRates replaces them.
	Rates money.Rates
	// DefaultTMax (no tmax in the request) default 100ms; MaxTMax caps tmax,
	// default 500ms; TMaxMargin is subtracted, default 20ms; MinBudget is the
	// least budget worth bidding with, default 3ms.
	DefaultTMax, MaxTMax, TMaxMargin, MinBudget time.Duration
	// TMaxMarginRatio caps TMaxMargin at this fraction of the deadline
	// before the margin (min(tmax or DefaultTMax, MaxTMax)): the margin is
	// the smaller of the two. The zero value turns the cap off (TMaxMargin
	// alone); rtbd always hands over bidder.tmax_margin_ratio, whose
	// default in configs/rtbd.yaml caps it. At most 0.9.
	TMaxMarginRatio float64
	// MaxBodyBytes bounds the body, compressed and decompressed. Default 512 KiB.
	MaxBodyBytes int
	// MaxDrainBytes is how much of a body over the server's backstop (see
	// NewServer) is read and discarded after the 413, before the connection
	// closes, so the client reads the 413 rather than a reset. Default
	// overload.DefaultMaxDrainBytes; negative: none, closed at once.
	MaxDrainBytes int
	// DrainTimeout bounds that draining. Default 5s (rtbd: bidder.read_timeout).
	DrainTimeout time.Duration
	// MaxInFlight bounds concurrent bid requests; the excess is shed.
	// Default 1024.
	MaxInFlight int
	// Admission, when set, sheds bid requests before decoding them
	// while a queue stands in front of the handler (see Admission).
	Admission *overload.Admission
	// Overload503 answers shed requests 503 instead of a no-bid (nbr 507).
	Overload503 bool
	// NBRBody answers no-bids 200 {"id":..,"nbr":N} instead of 204.
	NBRBody bool
	// GzipMinBytes: gzip responses at least this long when accepted; 0
	// never (the zero value: tests see plain bodies unless they ask).
	GzipMinBytes int
	// GDPRVendorID is rtbd's TCF vendor id; 0 checks purposes only.
	GDPRVendorID uint16
	// AbsoluteClicks gives every product link of a banner its full
	// /click?t=TOKEN.PRODUCT URL. By default (false) a banner carries the
	// click token once, in its <base href> (PublicURL/click/TOKEN/), and
	// each product link is relative to it (the product id): the token is
	// about 200 characters, so that is most of the markup of a big banner.
	AbsoluteClicks bool
	// BannerImpPixel puts a 1x1 /imp impression pixel in every banner;
	// banners to an exchange whose Billing is token.BillingRender carry
	// it regardless. Native and video ads always carry their /imp tracker.
	BannerImpPixel bool
	// NoticeTTL is the validity of win/bill tokens (default 1h), ClickTTL of
	// click tokens (default 720h).
	NoticeTTL, ClickTTL time.Duration
	// EventTimeout bounds the store write of /event and the product lookup
	// of /click. Default 50ms.
	EventTimeout time.Duration
	// AccessLogSample logs one bid request in N; 0 none.
	AccessLogSample int
	// CellCache is how many products' rendered banner cells to keep
	// (creative.CellCache, keyed by the *catalogpb.Product pointer): set
	// it only when Products hands out the same immutable Product for a
	// product every time, as the local index's hot cache does (Start sets
	// it to catalog.hot_cache_entries with the local index, and with remote
	// nodes when catalog.near_cache_bytes turns the near cache on, 0
	// otherwise). 0 renders every cell.
	CellCache int
	// Notices serves /win and /bill instead of the built-in handler (see
	// package notice); with neither Notices nor Spend, notices are answered 204
	// and counted in rtbd_bidder_notices_unhandled_total.
	Notices fasthttp.RequestHandler
	// Spend, when set, makes the Bidder serve /win and /bill itself:
	// verify, count and charge billing notices to Spend (the bidder does
	// not own it: Close it after the server stops).
	Spend *spend.Writer
	// Budgets, when set, is asked before bidding for a campaign: budgets
	// and pacing (nbr 501 when nothing else is left) and the user's
	// frequency cap (nbr 502). In memory, no allocation.
	Budgets *spend.Budgets
	// Supply holds the supply-path files campaigns with a supply setting
	// check requests against; nil: none (no chain is authorized).
	Supply *supply.Store
	// DSADomain is the domain of bid.ext.dsa.transparency (the party that
	// decided on the ad's personalisation); "": no transparency entry.
	DSADomain string
	// Fraud, when set, is checked at the start of every bid request (site
	// domain, app bundle, device IP, IFA, user); a hit is a no-bid with
	// its reason. *fraud.Lists implements it.
	Fraud FraudChecker
	// ReplayWindow is how long accepted notices are remembered to answer a
	// replay 204 without charging (per process). Default 24h.
	// ReplayMaxEntries bounds that memory. Default 10,000,000 (about
	// 50 bytes each).
	ReplayWindow     time.Duration
	ReplayMaxEntries int
	// Journal, when set, makes every accepted billing notice durable
	// before it is answered (see package notice); *journal.Journal implements
	// it. The bidder does not own it.
	Journal notice.Journal
	// Records, when set, receives the log-level records of bids, sampled
	// no-bids, notices, clicks and views (see records.go); charge records
	// go through the Journal's export log. The bidder does not own it.
	Records *records.Recorder
	// NoticeClockSkew is added to a bill token's expiry to make its
	// notice's store expiry (spend.Notice.Expires). Default 5m
	// (notice.clock_skew).
	NoticeClockSkew time.Duration
	// PriceEncryptionKey and PriceIntegrityKey (raw bytes) decrypt
	// Google-style encrypted clearing prices; nil: plain prices only.
	PriceEncryptionKey, PriceIntegrityKey []byte
	// Logger; nil logs nothing.
	Logger *zap.Logger
	// Registerer receives the rtbd_bidder_* metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock of campaign flights, dayparts, tokens and the
	// per-source rate limits (tests); nil is time.Now. Deadlines always
	// use the real clock.
	Now func() time.Time
	// MaxConns bounds the connections a server from NewServer holds (see
	// NewServer). Default overload.DefaultMaxConns.
	MaxConns int
	// RateLimits bound /event, /usersync and /match per source. The zero
	// value limits nothing.
	RateLimits RateLimitOptions
	// Shading, when set, shades first-price bids (package bidder/shading,
	// see shading.go; its Exchanges are taken from Exchanges); nil bids
	// every auction at the campaign's value. Its Refresh is the caller's
	// to run (Bidder.Shader; Start runs it).
	Shading *shading.Options

	realClock bool // Now is time.Now: the bid path reuses its clock reads
}

// ErrOptions is wrapped by New's errors.
var ErrOptions = errors.New("bidder: invalid options")

func (o *Options) ensureDefaults() error {
	var errs []error
	if o.Products == nil {
		errs = append(errs, errors.New("Products is nil"))
	}
	if o.Users == nil {
		errs = append(errs, errors.New("Users is nil"))
	}
	if o.Campaigns == nil {
		errs = append(errs, errors.New("Campaigns is nil"))
	}
	if o.Keys == nil {
		errs = append(errs, errors.New("Keys is nil"))
	}
	if o.PublicURL == "" {
		o.PublicURL = "http://127.0.0.1:8080"
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	if !creative.IsHTTPURL(o.PublicURL) || strings.ContainsAny(o.PublicURL, "?#\"'<>&") {
		errs = append(errs, fmt.Errorf("PublicURL %q: want http(s)://host[:port][/path]", o.PublicURL))
	}
	if o.ImageResizeURL != "" {
		if _, err := creative.ParseResizeURL(o.ImageResizeURL); err != nil {
			errs = append(errs, fmt.Errorf("ImageResizeURL: %w", err))
		}
	}
	o.SecurePublicURL = strings.TrimRight(o.SecurePublicURL, "/")
	if o.SecurePublicURL == "" && creative.IsHTTPSURL(o.PublicURL) {
		o.SecurePublicURL = o.PublicURL
	}
	if o.SecurePublicURL != "" && (!creative.IsHTTPSURL(o.SecurePublicURL) || strings.ContainsAny(o.SecurePublicURL, "?#\"'<>&")) {
		errs = append(errs, fmt.Errorf("SecurePublicURL %q: want https://host[:port][/path]", o.SecurePublicURL))
	}
	o.NoticeURL = strings.TrimRight(o.NoticeURL, "/")
	if o.NoticeURL != "" && (!creative.IsHTTPURL(o.NoticeURL) || strings.ContainsAny(o.NoticeURL, "?#\"'<>&")) {
		errs = append(errs, fmt.Errorf("NoticeURL %q: want http(s)://host[:port][/path]", o.NoticeURL))
	}
	if o.Seat == "" {
		o.Seat = "rtbd"
	}
	if o.Currency == "" {
		o.Currency = "USD"
	}
	if code, ok := money.Code(o.Currency); ok {
		o.Currency = code // any case in, upper case in responses and tokens
	}
	if !o.Rates.Known(o.Currency) {
		errs = append(errs, fmt.Errorf("Currency %q has no rate", o.Currency))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.DefaultTMax, 100*time.Millisecond)
	def(&o.MaxTMax, 500*time.Millisecond)
	def(&o.TMaxMargin, 20*time.Millisecond)
	def(&o.MinBudget, 3*time.Millisecond)
	if o.TMaxMarginRatio > 0.9 || o.TMaxMarginRatio != o.TMaxMarginRatio {
		errs = append(errs, fmt.Errorf("TMaxMarginRatio %v: want 0 to 0.9", o.TMaxMarginRatio))
	}
	def(&o.NoticeTTL, time.Hour)
	def(&o.ClickTTL, 720*time.Hour)
	def(&o.EventTimeout, 50*time.Millisecond)
	def(&o.ReplayWindow, notice.DefaultReplayWindow)
	def(&o.NoticeClockSkew, notice.DefaultClockSkew)
	if o.ReplayMaxEntries <= 0 {
		o.ReplayMaxEntries = notice.DefaultReplayMaxEntries
	}
	if (len(o.PriceEncryptionKey) == 0) != (len(o.PriceIntegrityKey) == 0) {
		errs = append(errs, errors.New("PriceEncryptionKey and PriceIntegrityKey go together"))
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = rtb.DefaultMaxBodyBytes
	}
	if o.MaxDrainBytes == 0 {
		o.MaxDrainBytes = overload.DefaultMaxDrainBytes
	}
	def(&o.DrainTimeout, 5*time.Second)
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = overload.DefaultMaxInFlight
	}
	if err := o.UserID.EnsureDefaults(); err != nil {
		errs = append(errs, err)
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.MaxConns <= 0 {
		o.MaxConns = overload.DefaultMaxConns
	}
	if o.Now == nil {
		o.realClock = true
		o.Now = time.Now
	}
	if _, xerrs := exchange.NewSet(o.Exchanges); len(xerrs) > 0 {
		errs = append(errs, xerrs...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrOptions, errors.Join(errs...))
	}
	return nil
}

// MatchStore is the match table (/match, through usersync.Matches): an
// exchange's own user id -> rtbd's uid. The user stores of rtbd implement
// it (*pebblestore.Store, *redisstore.Store, *aerostore.Store); a
// UserStore without it serves /match 503 and resolves no bid through it.
type MatchStore interface {
	// PutMatch stores key (user.MatchKey) -> uid.
	PutMatch(ctx context.Context, key, uid string) error
	// GetMatched resolves key to rtbd's uid, else to fallback, appends it
	// to dst and reads its profile into p, in one store round trip where
	// the store allows. It must honour ctx like UserStore.Get.
	GetMatched(ctx context.Context, key, fallback string, dst []byte, p *user.Profile) (uid []byte, found bool, err error)
}
