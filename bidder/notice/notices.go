package notice

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// HeaderOutcome is the response header of /win, /bill, /imp and /loss
// naming the notice's outcome: one of rtbd_notices_total's outcome labels
// (accepted, estimated_price, replay, forged, expired, over_price,
// bad_price, bad_request, unavailable, test), or "unhandled" when the
// bidder has no spend writer. It tells an operator with curl, and the
// bench harness, what a 204 meant.
const HeaderOutcome = "X-Rtbd-Notice"

// Notice outcomes, the outcome label of rtbd_notices_total.
const (
	outAccepted = iota
	outReplay
	outForged
	outExpired
	outOverPrice
	outBadPrice
	outBadRequest
	outUnavailable
	outEstimated
	outTest
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"accepted", "replay", "forged", "expired", "over_price", "bad_price", "bad_request", "unavailable",
	"estimated_price", "test"}

// Kind is the kind of a notice: its endpoint.
type Kind int

// Kinds of notices.
const (
	Win  Kind = iota // GET /win (nurl)
	Bill             // GET /bill (burl)
	Imp              // GET /imp (the creative's impression tracker)
	Loss             // GET /loss (lurl)
	numKinds
)

var kindNames = [numKinds]string{"win", "bill", "imp", "loss"}

// tokenKinds are the token kinds of /win, /bill, /imp and /loss.
var tokenKinds = [numKinds]token.Kind{token.KindWin, token.KindBill, token.KindImp, token.KindLoss}

// chargeKey is the replay set's kind for "this impression was charged",
// shared by every notice kind (see charges).
const chargeKey = numKinds

// replayWon is the replay set's kind for "this bid was won" (keyed by the
// bid's nonce): the first accepted win, billing or impression notice of a
// bid counts one win (spend.CountWins), whichever comes, once per process.
const replayWon = numKinds + 1

// charges reports whether a notice of kind charges a bid of billing mode
// m: /bill always (the exchange says the impression is billable), /win
// with BillingNurl, /imp with BillingRender.
func charges(kind Kind, m token.Billing) bool {
	switch kind {
	case Bill:
		return true
	case Win:
		return m == token.BillingNurl
	case Imp:
		return m == token.BillingRender
	}
	return false
}

// auctionPriceMacro is the OpenRTB price macro, left as it is by an SSP or
// a renderer that does not fill it.
const auctionPriceMacro = "${AUCTION_PRICE}"

// Defaults of the notice options.
const (
	DefaultReplayWindow     = 24 * time.Hour
	DefaultReplayMaxEntries = 10_000_000
	DefaultClockSkew        = 5 * time.Minute
)

// Journal makes accepted notices durable before they are answered
// (Options.Journal; package bidder/spend/journal).
type Journal interface {
	// Append writes n durably and sets n.Seq; only after it returns nil may
	// the notice be acknowledged.
	Append(campaign string, n *spend.Notice) error
	// Confirm drops the records of seqs.
	Confirm(seqs []uint64)
}

// Campaigns gives the current campaigns (the bidder's CampaignSource):
// a notice's campaign currency. Current must be cheap (an atomic load).
type Campaigns interface {
	Current() *campaign.Set
}

// Options configure a Handler. Keys, Now, Campaigns, Rates and Logger are
// required (the Bidder hands over its own, defaulted); the others may be
// zero.
type Options struct {
	// Keys verify the notices' tokens.
	Keys *token.Keys
	// Now is the clock of token expiry and of the replay set.
	Now func() time.Time
	// Spend is charged by charging notices and counts wins and losses.
	// Serve needs it; ServeLoss works without (nothing counted per
	// campaign). The Handler does not own it.
	Spend *spend.Writer
	// Journal, when set, makes every accepted billing notice durable
	// before it is answered. The Handler does not own it.
	Journal Journal
	// Records, when set, receives the records of accepted notices (see
	// records.go). The Handler does not own it.
	Records *records.Recorder
	// Campaigns give a charge's campaign currency.
	Campaigns Campaigns
	// Rates are the bidder's own conversion rates, read per notice (the
	// bidder replaces them atomically).
	Rates *atomic.Pointer[money.Rates]
	// Exchanges are the bidder's exchanges: a token's exchange's price
	// keys, and ExchangeOf.
	Exchanges exchange.Set
	// PriceEncryptionKey and PriceIntegrityKey (raw bytes) decrypt
	// Google-style encrypted clearing prices of an exchange without keys
	// of its own; nil: plain prices only.
	PriceEncryptionKey, PriceIntegrityKey []byte
	// ClockSkew is added to a bill token's expiry to make its notice's
	// store expiry (spend.Notice.Expires). Default DefaultClockSkew.
	ClockSkew time.Duration
	// ReplayWindow is how long accepted notices are remembered (per
	// process), ReplayMaxEntries bounds that memory (about 50 bytes each).
	// Defaults DefaultReplayWindow, DefaultReplayMaxEntries.
	ReplayWindow     time.Duration
	ReplayMaxEntries int
	// Shader, when set, learns from wins and losses (see the package
	// documentation), counted in ShadingMetrics.
	Shader         *shading.Shader
	ShadingMetrics *shading.Metrics
	// Logger receives the notices a configuration problem keeps from being
	// charged.
	Logger *zap.Logger
	// Registerer receives rtbd_notices_total and rtbd_loss_total; nil
	// registers none.
	Registerer prometheus.Registerer
}

// Handler serves notices (see the package documentation). It is safe for
// concurrent use.
type Handler struct {
	o       Options
	out     [numKinds][numOutcomes]prometheus.Counter // rtbd_notices_total
	losses  [rtb.NumLossReasons]prometheus.Counter    // rtbd_loss_total
	replays *replaySet
	pool    sync.Pool // *state
}

// New returns a Handler; errors come from metric registration.
func New(o Options) (*Handler, error) {
	if o.ClockSkew <= 0 {
		o.ClockSkew = DefaultClockSkew
	}
	if o.ReplayWindow <= 0 {
		o.ReplayWindow = DefaultReplayWindow
	}
	if o.ReplayMaxEntries <= 0 {
		o.ReplayMaxEntries = DefaultReplayMaxEntries
	}
	h := &Handler{o: o, replays: newReplaySet(o.ReplayWindow, o.ReplayMaxEntries)}
	h.pool.New = func() any { return &state{buf: make([]byte, 0, 512)} }
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_notices_total",
		Help: "Win (/win), billing (/bill), impression (/imp) and loss (/loss) notices by outcome: accepted, replay, forged, expired, over_price, bad_price, bad_request, unavailable, estimated_price, test."},
		[]string{"kind", "outcome"})
	for k, kn := range kindNames {
		for o, on := range outcomeNames {
			h.out[k][o] = vec.WithLabelValues(kn, on)
		}
	}
	losses := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_loss_total",
		Help: "Accepted loss notices (/loss) by OpenRTB 2.6 loss reason (lost_to_higher_bid, below_auction_floor, ..., exchange_specific for 500+, other)."},
		[]string{"reason"})
	for r := range rtb.NumLossReasons {
		h.losses[r] = losses.WithLabelValues(rtb.LossReason(r).String())
	}
	if reg := o.Registerer; reg != nil {
		for _, c := range []prometheus.Collector{vec, losses} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

// state is the pooled scratch of one notice.
type state struct {
	tok token.Token
	buf []byte
}

// Serve is GET /win (kind Win), GET /bill (Bill) and GET /imp (Imp). It
// needs Options.Spend.
func (h *Handler) Serve(rc *fasthttp.RequestCtx, kind Kind) {
	h.answer(rc, kind, h.notice(rc, kind))
}

// ExchangeOf verifies t, the token of a notice of kind, and returns the
// index of its exchange in Options.Exchanges; ok is false when the token
// does not verify or names no exchange of the set.
func (h *Handler) ExchangeOf(t []byte, kind token.Kind) (i int, ok bool) {
	ns := h.pool.Get().(*state)
	defer h.pool.Put(ns)
	var err error
	if ns.buf, err = h.o.Keys.Parse(&ns.tok, t, kind, h.o.Now(), ns.buf[:0]); err != nil {
		return 0, false
	}
	name := ns.tok.Exchange
	if name == "" {
		name = exchange.Default
	}
	i, ok = h.o.Exchanges.Index[name]
	return i, ok
}

// read checks a notice request's method and verifies its token (t)
// of kind want into ns.tok; ok false: out is the outcome to answer
// (bad_request, expired, forged).
func (h *Handler) read(rc *fasthttp.RequestCtx, want token.Kind, ns *state, now time.Time) (out int, ok bool) {
	if !rc.IsGet() && !rc.IsHead() {
		rc.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
		rc.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		return outBadRequest, false
	}
	t := rc.QueryArgs().Peek("t")
	if len(t) == 0 {
		return outBadRequest, false
	}
	var err error
	ns.buf, err = h.o.Keys.Parse(&ns.tok, t, want, now, ns.buf[:0])
	switch {
	case errors.Is(err, token.ErrExpired):
		return outExpired, false
	case err != nil: // ErrMalformed, ErrSignature, ErrKind
		return outForged, false
	}
	return 0, true
}

// answer counts a notice's outcome and answers it: the outcome header and
// the status (204 accepted or replay, 410 expired, 503 store unavailable,
// 400 otherwise; a 405 set by read stays).
func (h *Handler) answer(rc *fasthttp.RequestCtx, kind Kind, out int) {
	h.out[kind][out].Inc()
	rc.Response.Header.Set(HeaderOutcome, outcomeNames[out])
	switch out {
	case outAccepted, outReplay, outEstimated, outTest:
		rc.SetStatusCode(fasthttp.StatusNoContent)
	case outUnavailable:
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
	case outExpired:
		rc.SetStatusCode(fasthttp.StatusGone)
	default:
		if rc.Response.StatusCode() != fasthttp.StatusMethodNotAllowed {
			rc.SetStatusCode(fasthttp.StatusBadRequest)
		}
	}
}

func (h *Handler) notice(rc *fasthttp.RequestCtx, kind Kind) int {
	ns := h.pool.Get().(*state)
	defer h.pool.Put(ns)
	now := h.o.Now()
	if out, ok := h.read(rc, tokenKinds[kind], ns, now); !ok {
		return out
	}
	args := rc.QueryArgs()
	tok := &ns.tok
	price, estimated, ok := h.clearingPrice(args.Peek("p"), tok)
	if !ok {
		return outBadPrice
	}
	if price > tok.PriceMicros {
		return outOverPrice
	}
	if tok.Test {
		return outTest // a test bid's notice: verified, never charged nor counted
	}
	if !h.replays.firstNotice(kind, tok, now) {
		return outReplay
	}
	h.countWin(tok, now)
	h.recordNotice(kind, tok, price, now)
	if !charges(kind, tok.Billing) {
		return outAccepted
	}
	if !h.replays.firstNotice(chargeKey, tok, now) {
		return outReplay // charged already, through another of its notices
	}
	charge := money.PerImpression(price)
	if set := h.o.Campaigns.Current(); set != nil && tok.Currency != "" {
		if c, found := set.Get(tok.Campaign); found && c.Currency != "" && c.Currency != tok.Currency {
			if v, ok := h.o.Rates.Load().Convert(charge, tok.Currency, c.Currency); ok {
				charge = v
			}
		}
	}
	n := spend.Notice{Nonce: tok.NoticeNonce(), Kind: spend.NoticeCharge, User: tok.User, Micros: charge, At: now,
		Expires: tok.Expires.Add(h.o.ClockSkew)}
	if j := h.o.Journal; j != nil {
		if err := h.appendCharge(j, tok, &n, price); err != nil {
			h.replays.forgetNotice(kind, tok)
			h.replays.forgetNotice(chargeKey, tok)
			return h.notCharged(err)
		}
	}
	if err := h.o.Spend.AddNotice(tok.Campaign, &n); err != nil {
		h.replays.forgetNotice(kind, tok)
		h.replays.forgetNotice(chargeKey, tok)
		if n.Seq != 0 { // refused, so not acknowledged: not to be replayed either
			h.dropCharge(n.Seq)
		}
		return h.notCharged(err)
	}
	h.learn(tok, true, args.Peek("m"), now) // bid shading: the bid's charging notice is its win
	if estimated {
		return outEstimated
	}
	return outAccepted
}

// notCharged is the outcome of a billing notice the journal or the spend
// Writer refused: ErrInvalid is an id the spend store cannot key (signed
// by us, so a configuration problem rather than an attack); anything else
// (the Writer closing, the journal full or failing to write) is
// unavailable, so the SSP retries.
func (h *Handler) notCharged(err error) int {
	if errors.Is(err, spend.ErrInvalid) {
		h.o.Logger.Warn("bidder: billing notice not charged", zap.Error(err))
		return outBadRequest
	}
	return outUnavailable
}

// clearingPrice parses p: a plain decimal, else an encrypted price when
// keys are configured (the token's exchange's, else Options'). A p that
// is missing or still the price macro is the token's bid price
// (estimated).
func (h *Handler) clearingPrice(p []byte, tok *token.Token) (price int64, estimated, ok bool) {
	if len(p) == 0 || string(p) == auctionPriceMacro {
		return tok.PriceMicros, true, true
	}
	if v, err := money.Parse(p); err == nil {
		return v, false, true
	}
	enc, integ := h.o.PriceEncryptionKey, h.o.PriceIntegrityKey
	name := tok.Exchange
	if name == "" {
		name = exchange.Default
	}
	xs := &h.o.Exchanges
	if i, found := xs.Index[name]; found && len(xs.List[i].PriceEncryptionKey) > 0 {
		enc, integ = xs.List[i].PriceEncryptionKey, xs.List[i].PriceIntegrityKey
	}
	if len(enc) == 0 {
		return 0, false, false
	}
	v, err := rtb.DecryptPrice(enc, integ, unsafe.String(unsafe.SliceData(p), len(p)))
	return v, false, err == nil
}

// countWin counts tok's bid as won, once per bid in this process.
func (h *Handler) countWin(tok *token.Token, now time.Time) {
	if h.o.Spend == nil {
		return
	}
	if h.replays.firstNotice(replayWon, tok, now) {
		_ = h.o.Spend.Count(tok.Campaign, spend.CountWins)
	}
}

// learn teaches bid shading the win (or loss) of tok's bid, with the
// notice's m. A token without a segment (a bid that was not first price,
// or a token of an older version) teaches nothing.
func (h *Handler) learn(tok *token.Token, win bool, m []byte, now time.Time) {
	seg := shading.SegmentID(tok.Segment)
	if h.o.Shader == nil || seg == 0 {
		return
	}
	v, r := shading.ParseMinToWin(m, tok.PriceMicros, win)
	h.o.ShadingMetrics.Learned(win, r)
	h.o.Shader.Observe(seg, tok.PriceMicros, tok.Issued, win, v, r == shading.MinToWinOK, now)
}
