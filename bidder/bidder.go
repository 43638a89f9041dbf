package bidder

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/explain"
	"github.com/rtbd/rtbd/bidder/fx"
	"github.com/rtbd/rtbd/bidder/notice"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/usersync"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/overload"
	"github.com/rtbd/rtbd/overload/arrival"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

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
	// PathUserSync and PathMatch are rtbd's user id endpoints (package
	// usersync).
	PathUserSync = "/usersync"
	PathMatch    = "/match"
)

// HeaderNoticeOutcome is the response header of /win, /bill, /imp and
// /loss naming the notice's outcome (notice.HeaderOutcome).
const HeaderNoticeOutcome = notice.HeaderOutcome

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

	notices *notice.Handler     // /win, /bill, /imp, /loss
	cells   *creative.CellCache // nil without Options.CellCache
	budgets *spend.BudgetCache

	products *catalog.Fetcher // Options.Products, asked as it allows (plain, batched, near-cached)

	exchanges  exchange.Set
	matchStore MatchStore        // Options.Users' match table; nil: none
	usersync   *usersync.Handler // /usersync, /match; the uid of /event

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
	fxm *fx.Metrics

	shader *shading.Shader // nil: no bid shading
	sm     *shading.Metrics

	srv    atomic.Pointer[fasthttp.Server] // the latest NewServer's, for the connection metrics
	limits rateLimits
	src    *exchange.Guard // exchanges.NAME.allow_cidrs (sources.go)
}

// New returns a Bidder. Errors wrap ErrOptions (a missing store, a bad
// PublicURL or Currency) or come from metric registration.
func New(opts Options) (*Bidder, error) {
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	inFlight := overload.NewInFlight(opts.MaxInFlight)
	xs, _ := exchange.NewSet(opts.Exchanges)
	m, err := newMetrics(opts.Registerer, func() float64 { return float64(inFlight.N()) }, xs.Names())
	if err != nil {
		return nil, err
	}
	dbg, _ := newMetrics(nil, nil, xs.Names())
	cells := creative.NewCellCache(opts.CellCache)
	if err := registerCellMetrics(opts.Registerer, cells); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	limits, err := newRateLimits(opts.RateLimits, opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	src, err := exchange.NewGuard(xs, opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	b := &Bidder{
		opts:        opts,
		budgets:     spend.NewBudgetCache(opts.Spend),
		inFlight:    inFlight,
		m:           m,
		dbgM:        dbg,
		cells:       cells,
		dec:         rtb.Decoder{Limits: rtb.Limits{MaxBodyBytes: opts.MaxBodyBytes}},
		urls:        newPublicURLs(opts.PublicURL, opts.NoticeURL),
		secureURLs:  newPublicURLs(opts.SecurePublicURL, opts.NoticeURL),
		bidIDPrefix: hex.EncodeToString(rnd[:]) + "-",
		exp:         int64(opts.NoticeTTL / time.Second),
		exchanges:   xs,
		limits:      limits,
		src:         src,
	}
	b.products = catalog.NewFetcher(opts.Products)
	if err := overload.RegisterConnMetrics(opts.Registerer, &b.srv); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	if b.fxm, err = fx.NewMetrics(opts.Registerer); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	rates := opts.Rates
	b.fx.Store(&rates)
	b.shader = newShader(opts.Shading, xs)
	if b.sm, err = shading.NewMetrics(opts.Registerer, b.shader); err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	b.notices, err = notice.New(notice.Options{Keys: opts.Keys, Now: opts.Now, Spend: opts.Spend, Journal: opts.Journal,
		Records: opts.Records, Campaigns: opts.Campaigns, Rates: &b.fx, Exchanges: xs,
		PriceEncryptionKey: opts.PriceEncryptionKey, PriceIntegrityKey: opts.PriceIntegrityKey, ClockSkew: opts.NoticeClockSkew,
		ReplayWindow: opts.ReplayWindow, ReplayMaxEntries: opts.ReplayMaxEntries, Shader: b.shader, ShadingMetrics: b.sm,
		Logger: opts.Logger, Registerer: opts.Registerer})
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	b.matchStore, _ = opts.Users.(MatchStore)
	b.usersync, err = usersync.New(opts.UserID, usersync.Deps{Keys: opts.Keys, Now: opts.Now, GDPRVendorID: opts.GDPRVendorID,
		Exchanges: xs, Matches: b.matchStore, Timeout: opts.EventTimeout, Registerer: opts.Registerer})
	if err != nil {
		return nil, fmt.Errorf("bidder: metrics: %w", err)
	}
	if opts.ImageResizeURL != "" {
		b.resize, _ = creative.ParseResizeURL(opts.ImageResizeURL) // checked by ensureDefaults
	}
	b.pool.New = func() any { return newReqState(b) }
	b.small.New = newSmallState
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

// serveBid is POST /openrtb2/bid (exchange 0, exchange.Default) and POST
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
	decoded := time.Now()
	m.stage[stageDecode].Observe(decoded.Sub(now).Seconds()) // body decompression included
	var nbr rtb.NoBidReason
	switch {
	case err != nil:
		nbr = rtb.NoBidInvalidRequest
	default:
		nbr = b.run(st, start, decoded, nil)
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

// run computes the deadline and runs the auction for a decoded request,
// decoded at now (a clock read the bid path reuses).
func (b *Bidder) run(st *reqState, start, now time.Time, ex *explain.Explain) rtb.NoBidReason {
	budget := b.budget(st.req.TMax)
	if budget < b.opts.MinBudget {
		st.m.misses[missTMax].Inc()
		if ex != nil {
			ex.Note("tmax leaves %s after the margin, less than min_budget %s", budget, b.opts.MinBudget)
		}
		return rtb.NoBidDeadline
	}
	st.deadline = start.Add(budget)
	if left := st.deadline.Sub(now); left < b.opts.MinBudget {
		// The request waited (in the socket, for the CPU) most of its
		// budget away before it got here.
		st.m.misses[missQueue].Inc()
		if ex != nil {
			ex.Note("the request arrived %s ago: %s of its %s budget left, less than min_budget %s",
				time.Since(start), left, budget, b.opts.MinBudget)
		}
		return rtb.NoBidDeadline
	}
	st.dctx.Reset(st.deadline)
	if ex != nil {
		ex.Note("deadline in %s (tmax %dms, max %s, margin %s)", budget, st.req.TMax, b.opts.MaxTMax, b.margin(b.tmax(st.req.TMax)))
	}
	if !b.opts.realClock {
		now = b.opts.Now()
	}
	return b.auction(st, now, ex)
}

// respond writes the bid response in st (nbr < 0) or the no-bid nbr.
func (b *Bidder) respond(rc *fasthttp.RequestCtx, st *reqState, nbr rtb.NoBidReason, start time.Time) {
	m := b.m
	t := st.decided // the auction's last clock read: one per stage boundary
	if t.IsZero() {
		t = time.Now()
	}
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

// rates returns rtbd's own rates (Options.Rates, or what SetRates last
// set). The value is immutable: hold the pointer for a whole request.
func (b *Bidder) rates() *money.Rates { return b.fx.Load() }

// SetRates replaces rtbd's own conversion rates (bidder.fx_rates with
// bidder.fx_file's), atomically: a request in flight finishes with the
// rates it started with. Options.Currency must keep a rate. Safe for
// concurrent use.
func (b *Bidder) SetRates(r money.Rates) error {
	if !r.Known(b.opts.Currency) {
		return fmt.Errorf("%w: bidder currency %s has no rate", ErrOptions, b.opts.Currency)
	}
	b.fx.Store(&r)
	return nil
}
