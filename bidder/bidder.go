package bidder

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/overload"
	"github.com/rtbd/rtbd/overload/arrival"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// ProductStore reads ad product masters: the local index (*catalog.Local)
// or remote catalog nodes (*remote.Client), through the same code path.
// The returned products are shared and must not be modified. It must honour
// ctx: return soon after its deadline passes (both implementations do),
// since the bidder calls it on the request's goroutine.
type ProductStore interface {
	GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// BatchProductStore is a ProductStore that answers several lookups at once
// (the remote client, *remote.Client). With one, the bidder makes one call
// per bid request: the lookups of every imp's candidates, collected after
// candidate selection. A ProductStore that is not one (the local index) is
// asked lookup by lookup, as the auction reaches each candidate.
type BatchProductStore interface {
	// GetProductMastersBatch answers every request of reqs, resps[i] for
	// reqs[i] (len(resps) == len(reqs)), in one round trip where it can.
	// A non-nil resps[i] (kept by the caller from an earlier batch) is
	// filled in place or replaced by one the store does not keep; the
	// caller may then empty its lists for the next batch. The products in
	// them are shared and must not be modified.
	GetProductMastersBatch(ctx context.Context, reqs []*catalogpb.ProductMastersRequest, resps []*catalogpb.ProductMastersResponse) error
}

// CachedProductStore is a BatchProductStore with a cache in front of its
// round trips (the remote client with its near cache on). The bidder asks
// its cache lookup by lookup, as the auction reaches each candidate (as it
// asks the local index), and makes the request's one batch call, for every
// lookup not answered yet, at the first lookup the cache cannot answer:
// a bid whose products are cached then looks up only the candidates it
// tries, and a request still makes at most one call.
type CachedProductStore interface {
	BatchProductStore
	// GetProductMastersCached answers req into resp (its lists reset and
	// reused) from the cache alone, with GetProductMasters' rules, or
	// reports false, having asked no node.
	GetProductMastersCached(req *catalogpb.ProductMastersRequest, resp *catalogpb.ProductMastersResponse) bool
}

// UserStore holds the retargeting profiles (user.store: *pebblestore.Store, the
// embedded Pebble keyspace; *redisstore.Store; *aerostore.UserStore; all
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

// Paths served by Handler.
const (
	PathBid   = "/openrtb2/bid"
	PathEvent = "/event"
	PathClick = "/click"
	// PathClickBase prefixes the path form of a click URL,
	// /click/TOKEN/PRODUCT: a banner's <base href> is PublicURL +
	// PathClickBase + TOKEN + "/", and its links are the product ids.
	PathClickBase = PathClick + "/"
	PathWin       = "/win"
	PathBill      = "/bill"
	// PathImp is the creative's own impression tracker (native
	// eventtrackers/imptrackers, VAST <Impression>, the banner pixel).
	PathImp = "/imp"
	// PathLoss is the loss notice (lurl).
	PathLoss = "/loss"
)

// HeaderNoticeOutcome is the response header of /win, /bill, /imp and
// /loss naming the notice's outcome: one of rtbd_notices_total's outcome
// labels (accepted, estimated_price, replay, forged, expired, over_price,
// bad_price, bad_request, unavailable, test), or "unhandled" when the
// bidder has no spend writer. It
// tells an operator with curl, and the bench harness, what a 204 meant.
const HeaderNoticeOutcome = "X-Rtbd-Notice"

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
	// (404 for any other name); DefaultExchange (PathBid) always exists
	// and may be listed to give it settings.
	Exchanges []Exchange
	// UserID configures rtbd's uid cookie and the uid rules of /event,
	// /usersync and /match.
	UserID UserIDOptions

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
	// notices.go); with neither Notices nor Spend, notices are answered 204
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
	// before it is answered (see notices.go); *journal.Journal implements
	// it. The bidder does not own it.
	Journal NoticeJournal
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
	def(&o.ReplayWindow, DefaultReplayWindow)
	def(&o.NoticeClockSkew, DefaultNoticeClockSkew)
	if o.ReplayMaxEntries <= 0 {
		o.ReplayMaxEntries = DefaultReplayMaxEntries
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
	if o.UserID.CookieName == "" {
		o.UserID.CookieName = "rtbd_uid"
	}
	if o.UserID.CookieMaxAge <= 0 {
		o.UserID.CookieMaxAge = 8760 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.MaxConns <= 0 {
		o.MaxConns = overload.DefaultMaxConns
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if _, xerrs := newExchangeSet(o.Exchanges); len(xerrs) > 0 {
		errs = append(errs, xerrs...)
	}
	if _, herrs := newRedirectHosts(o.UserID.SyncRedirectHosts); len(herrs) > 0 {
		errs = append(errs, herrs...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrOptions, errors.Join(errs...))
	}
	return nil
}

// Bidder answers OpenRTB 2.6 bid requests with dynamic retargeting ads
// (see the package documentation). It is safe for concurrent use: the
// handler runs on many fasthttp goroutines at once. It owns none of the
// stores given in Options (Close them after the server is stopped).
type Bidder struct {
	opts  Options
	m     *metrics // registered
	dbgM  *metrics // unregistered: the debug endpoint's runs
	dec   rtb.Decoder
	pool  sync.Pool // *reqState
	small sync.Pool // *smallState (/event, /click)

	nm      *noticeMetrics
	notices sync.Pool           // *noticeState
	cells   *creative.CellCache // nil without Options.CellCache
	replays *replaySet
	budgets atomic.Pointer[budgetCache]

	batch  BatchProductStore  // Options.Products when it is one; nil: lookups one by one
	cached CachedProductStore // Options.Products when it is one

	exchanges  exchangeSet
	redirects  redirectHosts
	matchStore MatchStore // Options.Users' match table; nil: none

	inFlight *overload.InFlight // also read by the rtbd_bidder_in_flight gauge
	bidSeq   atomic.Uint64
	logSeq   atomic.Uint64

	// urls are the prefixes of the URLs bids carry: from PublicURL, and
	// for secure imps from SecurePublicURL (secureURLs.ok false: none).
	urls, secureURLs publicURLs
	bidIDPrefix      string // random per process
	exp              int64  // bid.exp, seconds

	resize *creative.ResizeURL // Options.ImageResizeURL; nil: none

	fx  atomic.Pointer[money.Rates] // rtbd's own rates: Options.Rates, then SetRates
	fxm *fxMetrics

	lm *lossMetrics

	shader *shading.Shader // nil: no bid shading
	sm     *shadingMetrics

	srv    atomic.Pointer[fasthttp.Server] // the latest NewServer's, for the connection metrics
	limits rateLimits
	src    *sourceGuard // exchanges.NAME.allow_cidrs (sources.go)
}

// publicURLs are the prefixes of rtbd's URLs in a bid, built once from
// one public base. A URL rtbd writes into a bid starts with one of them,
// or with base: on a secure imp those of Bidder.secureURLs.
type publicURLs struct {
	ok               bool   // a base is configured
	base             string // PublicURL or SecurePublicURL
	win, bill, click string // base + "/win?t=", "/bill?t=", "/click?t="
	imp, loss        string // base + "/imp?t=", "/loss?t="
	clickBase        string // base + "/click/"
}

func newPublicURLs(base, notices string) publicURLs {
	if base == "" {
		return publicURLs{}
	}
	if notices == "" {
		notices = base
	}
	return publicURLs{ok: true, base: base,
		win: notices + PathWin + "?t=", bill: notices + PathBill + "?t=", click: base + PathClick + "?t=",
		imp: base + PathImp + "?t=", loss: notices + PathLoss + "?t=", clickBase: base + PathClickBase}
}

// New returns a Bidder. Errors wrap ErrOptions (a missing store, a bad
// PublicURL or Currency) or come from metric registration.
func New(opts Options) (*Bidder, error) {
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	inFlight := overload.NewInFlight(opts.MaxInFlight)
	xs, _ := newExchangeSet(opts.Exchanges)
	redirects, _ := newRedirectHosts(opts.UserID.SyncRedirectHosts)
	m, err := newMetrics(opts.Registerer, func() float64 { return float64(inFlight.N()) }, xs.names())
	if err != nil {
		return nil, err
	}
	nm, err := newNoticeMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	lm, err := newLossMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	dbg, _ := newMetrics(nil, nil, xs.names())
	cells := creative.NewCellCache(opts.CellCache)
	if err := registerCellMetrics(opts.Registerer, cells); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	limits, err := newRateLimits(opts.RateLimits, opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	src, err := newSourceGuard(xs, opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	b := &Bidder{
		opts:        opts,
		inFlight:    inFlight,
		m:           m,
		dbgM:        dbg,
		nm:          nm,
		cells:       cells,
		replays:     newReplaySet(opts.ReplayWindow, opts.ReplayMaxEntries),
		dec:         rtb.Decoder{Limits: rtb.Limits{MaxBodyBytes: opts.MaxBodyBytes}},
		urls:        newPublicURLs(opts.PublicURL, opts.NoticeURL),
		secureURLs:  newPublicURLs(opts.SecurePublicURL, opts.NoticeURL),
		bidIDPrefix: hex.EncodeToString(rnd[:]) + "-",
		exp:         int64(opts.NoticeTTL / time.Second),
		exchanges:   xs,
		redirects:   redirects,
		limits:      limits,
		src:         src,
	}
	b.batch, _ = opts.Products.(BatchProductStore)
	b.cached, _ = opts.Products.(CachedProductStore)
	if err := overload.RegisterConnMetrics(opts.Registerer, &b.srv); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	if b.fxm, err = newFXMetrics(opts.Registerer); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	rates := opts.Rates
	b.fx.Store(&rates)
	b.lm = lm
	b.shader = newShader(opts.Shading, xs)
	if b.sm, err = newShadingMetrics(opts.Registerer, b.shader); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	b.matchStore, _ = opts.Users.(MatchStore)
	if opts.ImageResizeURL != "" {
		b.resize, _ = creative.ParseResizeURL(opts.ImageResizeURL) // checked by ensureDefaults
	}
	b.pool.New = func() any { return newReqState(b) }
	b.small.New = newSmallState
	b.notices.New = func() any { return &noticeState{buf: make([]byte, 0, 512)} }
	if opts.Registerer != nil && opts.Budgets != nil {
		if err := opts.Registerer.Register(campaignSpendCollector{b}); err != nil {
			return nil, fmt.Errorf("bidder: metrics: %w", err)
		}
	}
	return b, nil
}

// Handler returns the fasthttp handler of the SSP- and browser-facing
// routes: POST /openrtb2/bid and /openrtb2/bid/{exchange}, GET /event,
// GET /click, GET /usersync, GET /match, and /win and /bill
// (Options.Notices). Other paths are 404.
func (b *Bidder) Handler() fasthttp.RequestHandler { return b.serveHTTP }

// NewServer returns a fasthttp.Server for Handler: ErrorHandler wired,
// fasthttp's own log lines sent to the Logger at debug level. Callers set
// timeouts and Serve it.
//
// The handler enforces Options.MaxBodyBytes itself (413), on a body read in
// full, so the SSP reliably gets its 413 on a connection in a sane state;
// fasthttp's own MaxRequestBodySize is a backstop at 4x that (at least
// 1 MiB), where it answers 413 and closes the connection; on a connection
// from Listen the close first reads and discards up to MaxDrainBytes of
// what the client still sends (within DrainTimeout), so the client reads
// the 413 instead of a TCP reset. A request with Expect: 100-continue that
// declares a body over MaxBodyBytes gets 413 and no 100 Continue.
//
// Serve it on a listener from Listen, so that bid requests carry their
// arrival time. Its write buffer holds a typical bid response whole: on a
// connection that is not a *net.TCPConn (Listen's) fasthttp cannot write
// header and body with one writev, and a response over the buffer would
// take two writes (two TCP segments).
//
// It holds at most Options.MaxConns connections (idle keep-alive ones
// included); one more is answered 503 and closed, counted in
// rtbd_bidder_conns_rejected_total. An idle connection hands its buffers
// back until its next request (fasthttp's ReduceMemoryUsage; see conns.go).
func (b *Bidder) NewServer() *fasthttp.Server {
	s := &fasthttp.Server{
		WriteBufferSize:    16 << 10,
		Handler:            b.Handler(),
		ErrorHandler:       b.ErrorHandler,
		Name:               "rtbd",
		MaxRequestBodySize: max(4*b.opts.MaxBodyBytes, 1<<20),
		ExpectHandler:      b.expect,
		Logger:             fasthttpLogger{b.opts.Logger.Named("http")},
	}
	overload.LimitConns(s, b.opts.MaxConns)
	b.srv.Store(s)
	return s
}

// Listen wraps a listener for the bid server so that each request's
// arrival time is known (overload/arrival; on Linux TCP) and a connection
// closed after a 413 is drained first (see NewServer).
func Listen(ln net.Listener) net.Listener { return overload.Drain(arrival.Listen(ln)) }

// ErrorHandler is the fasthttp.Server.ErrorHandler to pair with Handler
// (NewServer sets it): fasthttp calls it for requests it cannot read. A
// body over MaxRequestBodySize is 413 (counted as a too_large rejection),
// oversized headers 431, a read timeout 408, anything else 400.
func (b *Bidder) ErrorHandler(rc *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		b.m.rejected[rejTooLarge].Inc()
		b.drainOnClose(rc)
		rc.Error("request body too large", fasthttp.StatusRequestEntityTooLarge)
	case errors.As(err, &small):
		rc.Error("request headers too large", fasthttp.StatusRequestHeaderFieldsTooLarge)
	case errors.As(err, &ne) && ne.Timeout():
		rc.Error("request timeout", fasthttp.StatusRequestTimeout)
	default:
		rc.Error("malformed HTTP request", fasthttp.StatusBadRequest)
	}
}

var (
	headerOpenRTB = "x-openrtb-version"
	openRTBVer    = "2.6"
	contentJSON   = "application/json"
)

// serveBid is POST /openrtb2/bid (exchange 0, DefaultExchange) and POST
// /openrtb2/bid/{name} (exchange ex of b.exchanges).
//
// Its clock starts when the request arrived, if the connection knows
// (overload/arrival: the kernel's receive time), else at the handler's
// start: the deadline, the total latency and the access log count the
// time the request waited in the socket and for the CPU, as the SSP's
// tmax does.
func (b *Bidder) serveBid(rc *fasthttp.RequestCtx, ex int) {
	now := time.Now()
	start, queued := now, time.Duration(-1)
	if at, ok := arrival.Time(rc.Conn()); ok {
		if q := now.Sub(at); q >= 0 && q < maxQueued {
			start, queued = at, q
		}
	}
	m := b.m
	m.requests[ex].Inc()
	rc.Response.Header.Set(headerOpenRTB, openRTBVer)
	if !rc.IsPost() {
		m.rejected[rejMethod].Inc()
		rc.Response.Header.Set(fasthttp.HeaderAllow, fasthttp.MethodPost)
		rc.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return
	}
	admitted := b.inFlight.Enter()
	defer b.inFlight.Leave()
	if !admitted {
		m.shed.Inc()
		b.shed(rc, start)
		return
	}
	if queued >= 0 {
		m.queue.Observe(queued.Seconds())
		if a := b.opts.Admission; a != nil {
			var budget time.Duration // within Target every budget allows the wait
			if queued > a.Target() {
				budget = b.budget(peekTMax(rc))
			}
			if a.Shed(queued, budget, now) {
				m.shedQueue.Inc()
				b.shed(rc, start)
				return
			}
		}
	}
	st := b.getState()
	defer b.putState(st)
	st.exchange = ex
	body, rej := b.readBody(rc, st)
	if rej >= 0 {
		m.rejected[rej].Inc()
		switch rej {
		case rejTooLarge:
			rc.SetStatusCode(fasthttp.StatusRequestEntityTooLarge)
		case rejEncoding:
			rc.SetStatusCode(fasthttp.StatusUnsupportedMediaType)
		default:
			rc.SetStatusCode(fasthttp.StatusBadRequest)
		}
		rc.SetConnectionClose() // the rest of a bad stream is not worth reading
		return
	}
	err := b.dec.DecodeRequestExts(body, &st.req, &st.exts)
	m.stage[stageDecode].Observe(time.Since(now).Seconds()) // body decompression included
	var nbr rtb.NoBidReason
	switch {
	case err != nil:
		nbr = rtb.NoBidInvalidRequest
	default:
		nbr = b.run(st, start, nil)
	}
	b.respond(rc, st, nbr, start)
}

// maxQueued bounds a believable queueing delay: a larger one (the wall
// clock stepped between the kernel's stamp and the handler) is ignored.
const maxQueued = 10 * time.Second

// shed answers a request at once, without decoding it: beyond
// MaxInFlight, or shed by the admission control.
func (b *Bidder) shed(rc *fasthttp.RequestCtx, start time.Time) {
	defer func() { b.m.total.Observe(time.Since(start).Seconds()) }()
	if b.opts.Overload503 {
		rc.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return
	}
	b.m.nobid(rtb.NoBidOverloaded)
	id := ""
	if b.opts.NBRBody && len(rc.Request.Header.ContentEncoding()) == 0 {
		id = rtb.PeekID(rc.PostBody()) // cheap: "id" is usually the first key
	}
	b.writeNoBid(rc, id, rtb.NoBidOverloaded, nil)
}

// budget is a request's time to answer, counted from its arrival:
// d - margin(d), d = min(tmax, or DefaultTMax when tmax <= 0, MaxTMax).
// The admission control and the deadline both use it.
func (b *Bidder) budget(tmaxMs int64) time.Duration {
	d := b.tmax(tmaxMs)
	return d - b.margin(d)
}

// tmax is a request's deadline before the margin: min(tmax, or
// DefaultTMax when tmax <= 0, MaxTMax).
func (b *Bidder) tmax(tmaxMs int64) time.Duration {
	d := b.opts.DefaultTMax
	if tmaxMs > 0 {
		d = time.Duration(tmaxMs) * time.Millisecond
	}
	return min(d, b.opts.MaxTMax)
}

// margin is the time kept back from a deadline d (min(tmax, MaxTMax))
// for the network back to the exchange: TMaxMargin, or TMaxMarginRatio
// of d when that is smaller.
func (b *Bidder) margin(d time.Duration) time.Duration {
	m := b.opts.TMaxMargin
	if r := b.opts.TMaxMarginRatio; r > 0 {
		m = min(m, time.Duration(float64(d)*r))
	}
	return m
}

// peekTMax reads the top-level tmax of a bid request's body before it is
// decoded (a scan that allocates nothing), for the admission control; 0
// (the default) when the body is compressed or has none.
func peekTMax(rc *fasthttp.RequestCtx) int64 {
	if len(rc.Request.Header.ContentEncoding()) != 0 {
		return 0
	}
	return rtb.PeekTMax(rc.PostBody())
}

// run computes the deadline and runs the auction for a decoded request.
func (b *Bidder) run(st *reqState, start time.Time, ex *Explain) rtb.NoBidReason {
	budget := b.budget(st.req.TMax)
	if budget < b.opts.MinBudget {
		st.m.misses[missTMax].Inc()
		if ex != nil {
			ex.note("tmax leaves %s after the margin, less than min_budget %s", budget, b.opts.MinBudget)
		}
		return rtb.NoBidDeadline
	}
	st.deadline = start.Add(budget)
	if left := time.Until(st.deadline); left < b.opts.MinBudget {
		// The request waited (in the socket, for the CPU) most of its
		// budget away before it got here.
		st.m.misses[missQueue].Inc()
		if ex != nil {
			ex.note("the request arrived %s ago: %s of its %s budget left, less than min_budget %s",
				time.Since(start), left, budget, b.opts.MinBudget)
		}
		return rtb.NoBidDeadline
	}
	st.dctx.reset(st.deadline)
	if ex != nil {
		ex.note("deadline in %s (tmax %dms, max %s, margin %s)", budget, st.req.TMax, b.opts.MaxTMax, b.margin(b.tmax(st.req.TMax)))
	}
	return b.auction(st, b.opts.Now(), ex)
}

// respond writes the bid response in st (nbr < 0) or the no-bid nbr.
func (b *Bidder) respond(rc *fasthttp.RequestCtx, st *reqState, nbr rtb.NoBidReason, start time.Time) {
	m := b.m
	t := time.Now() // one clock read per stage boundary: a bid reads it often
	if nbr == bidMade && t.After(st.deadline) {
		m.misses[missDecide].Inc()
		nbr = rtb.NoBidDeadline
	}
	if nbr == bidMade {
		out, err := st.enc.AppendResponse(st.out[:0], &st.resp)
		if err != nil {
			b.opts.Logger.Error("bidder: encoding the bid response", zap.Error(err))
			nbr = rtb.NoBidTechnicalError
		} else {
			st.out = out
			body := out
			if b.opts.GzipMinBytes > 0 && len(out) >= b.opts.GzipMinBytes && rc.Request.Header.HasAcceptEncoding("gzip") {
				st.gzOut = fasthttp.AppendGzipBytesLevel(st.gzOut[:0], out, fasthttp.CompressBestSpeed)
				body = st.gzOut
				rc.Response.Header.SetContentEncoding("gzip")
				rc.Response.Header.Set(fasthttp.HeaderVary, fasthttp.HeaderAcceptEncoding)
			}
			rc.SetContentType(contentJSON)
			rc.SetStatusCode(fasthttp.StatusOK)
			rc.Response.SetBody(body)
			m.bids[st.exchange].Add(float64(len(st.bids)))
			end := time.Now()
			m.stage[stageEncode].Observe(end.Sub(t).Seconds())
			t = end
		}
	}
	if nbr != bidMade {
		m.nobid(nbr)
		b.recordNoBid(st, nbr)
		b.writeNoBid(rc, st.req.ID, nbr, st)
		t = time.Now()
	}
	took := t.Sub(start)
	m.total.Observe(took.Seconds())
	if n := b.opts.AccessLogSample; n > 0 && b.logSeq.Add(1)%uint64(n) == 0 {
		b.opts.Logger.Info("bid request (sampled)",
			zap.String("id", st.req.ID), zap.Int("imps", len(st.req.Imp)), zap.Int("bids", len(st.bids)),
			zap.Int("nbr", int(max(nbr, 0))), zap.String("reason", nbrLabel(nbr)), zap.Duration("took", took),
			zap.String("remote", rc.RemoteIP().String()))
	}
}

func nbrLabel(n rtb.NoBidReason) string {
	if n == bidMade {
		return "bid"
	}
	return n.String()
}

// writeNoBid answers a no-bid: 204, or 200 {"id":..,"nbr":N} with NBRBody.
func (b *Bidder) writeNoBid(rc *fasthttp.RequestCtx, id string, nbr rtb.NoBidReason, st *reqState) {
	if !b.opts.NBRBody {
		rc.SetStatusCode(fasthttp.StatusNoContent)
		return
	}
	var buf []byte
	if st != nil {
		st.out = rtb.AppendNoBid(st.out[:0], id, nbr)
		buf = st.out
	} else {
		buf = rtb.AppendNoBid(make([]byte, 0, 64+len(id)), id, nbr)
	}
	rc.SetContentType(contentJSON)
	rc.SetStatusCode(fasthttp.StatusOK)
	rc.Response.SetBody(buf)
}

// bidMade is the "reason" auction returns when it made at least one bid.
const bidMade rtb.NoBidReason = -1
