package bidder

import (
	"errors"
	"hash/maphash"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// Win, billing and impression notices (GET /win, GET /bill, GET /imp),
// served by the Bidder itself when Options.Spend is set (and
// Options.Notices is nil).
//
// A notice carries t, the signed token the bid put in its nurl and burl
// (the bid's token.AudienceExchange token, for /win and /bill) or in its
// creative (the token.AudienceMarkup token, for /imp, the creative's own
// impression tracker), and p, the clearing
// price the SSP substituted for ${AUCTION_PRICE}: a plain decimal CPM
// ("1.25", money.Parse) or, when it is not one and price keys are
// configured, a Google-style encrypted price (rtb.DecryptPrice) decrypted
// with the keys of the token's exchange (Exchange.PriceEncryptionKey/
// PriceIntegrityKey), else Options.PriceEncryptionKey/PriceIntegrityKey.
// Either way the price is CPM in micros of the bid currency (the token's
// Currency). A p that is missing or still the literal ${AUCTION_PRICE}
// (a renderer firing a tracker knows no price) is the token's bid price,
// an estimate: the highest the clearing price can be.
//
// Answers and outcomes (rtbd_notices_total{kind, outcome}, kind win, bill
// or imp):
//
//	accepted        204; charges spend when its kind charges (see below)
//	estimated_price 204, charged at the token's bid price: p was missing
//	                or the unfilled macro
//	replay          204, not charged again: the same (bid nonce, kind)
//	                was accepted within Options.ReplayWindow, or the
//	                impression was charged already through another of the
//	                bid's notices
//	forged          400: bad signature, malformed token, or a token of the
//	                other audience (the markup token on /win or /bill)
//	expired         410: the token verified but is past its expiry
//	over_price      400: the clearing price is above the token's bid price
//	bad_price       400: p not a price, or an encrypted price that does not
//	                decrypt (or no keys to decrypt it)
//	bad_request     400 (405 for a method other than GET/HEAD): no t
//	unavailable     503: verified but not charged: the journal could not write
//	                it (full, disk error) or the spend Writer is closed (shutdown)
//	test            204: the notice of a test bid (the request had test: 1;
//	                the token's Test bit): verified (forged, expired, over_price
//	                and bad_price still apply), never charged, never counted in
//	                frequency, wins or the replay set
//
// A refused notice is never charged and never enters the replay set.
// A verified notice the journal cannot write, or the spend Writer refuses
// because it is closing (shutdown), is answered 503 and not remembered, so
// the SSP's retry to another bidder charges it; that is the outcome
// "unavailable".
//
// # Who bills
//
// Every token of a bid carries its exchange's billing mode
// (Exchange.Billing, token.Billing, config exchanges.NAME.billing) and,
// for an exchange other than DefaultExchange, the exchange's name (for
// its price keys), both signed. The mode decides which notices charge:
//
//	burl (default)  /bill
//	nurl            /win and /bill, for exchanges that never fire burl
//	render          /imp and /bill: the creative's own tracker (native
//	                eventtrackers or imptrackers, VAST <Impression>, the
//	                banner pixel) charges when the ad renders
//
// /bill always charges: the exchange says the impression is billable. A
// notice of a kind that does not charge is verified and counted (accepted,
// replay, ...) and charges nothing. Every charging notice of a bid
// shares one charge-once key, the bid's nonce with spend.NoticeCharge, so
// the impression is charged once whichever of its notices arrive, in any
// order, at any bidder of the fleet: the first one charged sets the price
// (an /imp without p: the bid price, estimated_price), and later ones never
// adjust it. Within one process such a later notice answers replay (the
// replay set remembers each charged bid by its nonce); at another bidder it
// is accepted and the store applies the key once.
//
// # What is charged, once
//
// A charging notice builds a spend.Notice: the token's nonce with kind NoticeCharge (the notice's
// idempotency key; a token signed without a nonce gets one derived from
// its campaign, auction, imp and issue time), the user, the charge, now,
// and the token's expiry plus Options.NoticeClockSkew (when the store may
// forget the key). With Options.Journal set, the notice is written to the
// bidder's local journal with fsync before anything else (a failed write
// is "unavailable": never acknowledged and lost); then
// spend.Writer.AddNotice records the spend and one impression for the
// user's frequency count, and the store applies the key once. The journal
// drops the record once the store has it (spend.Options.Confirmed); the
// records left at start are replayed into the Writer before the bidder
// serves, so a SIGTERM, kill -9 or crash during a store outage loses no
// acknowledged notice.
//
// Units: p and the token's bid price are CPM (price per thousand
// impressions) in micros; one notice is one impression, so the charge is
// CPM/1000 micros, rounded half up to a whole micro (p 1.5 = 1,500,000
// micros CPM charges 1,500 micros = 0.0015 of the currency). When the
// campaign's currency (its budgets) differs from the bid currency, the
// charge is converted with the bidder's rates (Options.Rates, or what
// SetRates last set).
//
// # Replays
//
// This process answers a replay from memory: the set of accepted (bid
// nonce, kind) lives in this process's memory (a 128-bit hash of each, in
// 16 lock shards, two generations rotated every ReplayWindow, so an entry
// is remembered for between one and two windows), bounded by
// Options.ReplayMaxEntries (a generation that fills up rotates early, which
// shortens the memory under a flood rather than growing without bound). A
// replay sent to another bidder of a fleet, or after a restart, is not in
// that set, but it carries the same nonce and kind: the store applies
// each notice key once, so it is not charged again; the same holds for
// the journal's replay at start of a notice the store already had. Tokens
// expire after bidder.notice_ttl (1h by default), and the store keeps a
// key until that expiry plus notice.clock_skew.

// # Wins
//
// The first accepted win or billing notice of a bid (by its nonce, in the
// replay set below) counts one win of its campaign (spend.CountWins,
// flushed with the spend): a bid whose SSP fires both notices, or only one
// of them, is one win. Win rate in /admin/campaigns is wins per bid
// (spend.CountBids, counted as bids are made). A bid whose two notices go
// to two bidders of a fleet counts a win on each.

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

const (
	noticeWin = iota
	noticeBill
	noticeImp
	noticeLoss
	numNoticeKinds
)

var noticeKindNames = [numNoticeKinds]string{"win", "bill", "imp", "loss"}

// noticeTokenKinds are the token kinds of /win, /bill, /imp and /loss.
var noticeTokenKinds = [numNoticeKinds]token.Kind{token.KindWin, token.KindBill, token.KindImp, token.KindLoss}

// chargeKey is the replay set's kind for "this impression was charged",
// shared by every notice kind (see charges).
const chargeKey = numNoticeKinds

// replayWon is the replay set's kind for "this bid was won" (keyed by the
// bid's nonce): the first accepted win, billing or impression notice of a
// bid counts one win (spend.CountWins), whichever comes, once per process.
const replayWon = numNoticeKinds + 1

// charges reports whether a notice of kind charges a bid of billing mode
// m: /bill always (the exchange says the impression is billable), /win
// with BillingNurl, /imp with BillingRender.
func charges(kind int, m token.Billing) bool {
	switch kind {
	case noticeBill:
		return true
	case noticeWin:
		return m == token.BillingNurl
	case noticeImp:
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
	DefaultNoticeClockSkew  = 5 * time.Minute
)

// NoticeJournal makes accepted notices durable before they are answered
// (Options.Journal; package bidder/spend/journal).
type NoticeJournal interface {
	// Append writes n durably and sets n.Seq; only after it returns nil may
	// the notice be acknowledged.
	Append(campaign string, n *spend.Notice) error
	// Confirm drops the records of seqs.
	Confirm(seqs []uint64)
}

type noticeMetrics struct {
	out [numNoticeKinds][numOutcomes]prometheus.Counter
}

func newNoticeMetrics(reg prometheus.Registerer) (*noticeMetrics, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_notices_total",
		Help: "Win (/win), billing (/bill), impression (/imp) and loss (/loss) notices by outcome: accepted, replay, forged, expired, over_price, bad_price, bad_request, unavailable, estimated_price, test."},
		[]string{"kind", "outcome"})
	m := &noticeMetrics{}
	for k, kn := range noticeKindNames {
		for o, on := range outcomeNames {
			m.out[k][o] = vec.WithLabelValues(kn, on)
		}
	}
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// noticeState is the pooled scratch of one notice.
type noticeState struct {
	tok token.Token
	buf []byte
}

// serveNotice is GET /win (kind noticeWin), GET /bill (noticeBill) and
// GET /imp (noticeImp).
func (b *Bidder) serveNotice(rc *fasthttp.RequestCtx, kind int) {
	b.answerNotice(rc, kind, b.notice(rc, kind))
}

// answerNotice counts a notice's outcome and answers it: the outcome
// header and the status (204 accepted or replay, 410 expired, 503 store
// readNotice checks a notice request's method and verifies its token (t)
// of kind want into ns.tok; ok false: out is the outcome to answer
// (bad_request, expired, forged).
func (b *Bidder) readNotice(rc *fasthttp.RequestCtx, want token.Kind, ns *noticeState, now time.Time) (out int, ok bool) {
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
	ns.buf, err = b.opts.Keys.Parse(&ns.tok, t, want, now, ns.buf[:0])
	switch {
	case errors.Is(err, token.ErrExpired):
		return outExpired, false
	case err != nil: // ErrMalformed, ErrSignature, ErrKind
		return outForged, false
	}
	return 0, true
}

// unavailable, 400 otherwise; a 405 set by notice stays).
func (b *Bidder) answerNotice(rc *fasthttp.RequestCtx, kind, out int) {
	b.nm.out[kind][out].Inc()
	rc.Response.Header.Set(HeaderNoticeOutcome, outcomeNames[out])
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

func (b *Bidder) notice(rc *fasthttp.RequestCtx, kind int) int {
	ns := b.notices.Get().(*noticeState)
	defer b.notices.Put(ns)
	now := b.opts.Now()
	if out, ok := b.readNotice(rc, noticeTokenKinds[kind], ns, now); !ok {
		return out
	}
	args := rc.QueryArgs()
	tok := &ns.tok
	price, estimated, ok := b.clearingPrice(args.Peek("p"), tok)
	if !ok {
		return outBadPrice
	}
	if price > tok.PriceMicros {
		return outOverPrice
	}
	if tok.Test {
		return outTest // a test bid's notice: verified, never charged nor counted
	}
	if !b.replays.firstNotice(kind, tok, now) {
		return outReplay
	}
	b.countWin(tok, now)
	b.recordNotice(kind, tok, price, now)
	if !charges(kind, tok.Billing) {
		return outAccepted
	}
	if !b.replays.firstNotice(chargeKey, tok, now) {
		return outReplay // charged already, through another of its notices
	}
	charge := money.PerImpression(price)
	if set := b.opts.Campaigns.Current(); set != nil && tok.Currency != "" {
		if c, found := set.Get(tok.Campaign); found && c.Currency != "" && c.Currency != tok.Currency {
			if v, ok := b.rates().Convert(charge, tok.Currency, c.Currency); ok {
				charge = v
			}
		}
	}
	n := spend.Notice{Nonce: tok.NoticeNonce(), Kind: spend.NoticeCharge, User: tok.User, Micros: charge, At: now,
		Expires: tok.Expires.Add(b.opts.NoticeClockSkew)}
	if j := b.opts.Journal; j != nil {
		if err := b.appendCharge(j, tok, &n, price); err != nil {
			b.replays.forgetNotice(kind, tok)
			b.replays.forgetNotice(chargeKey, tok)
			return b.notCharged(err)
		}
	}
	if err := b.opts.Spend.AddNotice(tok.Campaign, &n); err != nil {
		b.replays.forgetNotice(kind, tok)
		b.replays.forgetNotice(chargeKey, tok)
		if n.Seq != 0 { // refused, so not acknowledged: not to be replayed either
			b.dropCharge(n.Seq)
		}
		return b.notCharged(err)
	}
	b.learnWin(tok, args.Peek("m"), now) // bid shading: the bid's charging notice is its win
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
func (b *Bidder) notCharged(err error) int {
	if errors.Is(err, spend.ErrInvalid) {
		b.opts.Logger.Warn("bidder: billing notice not charged", zap.Error(err))
		return outBadRequest
	}
	return outUnavailable
}

// clearingPrice parses p: a plain decimal, else an encrypted price when
// keys are configured (the token's exchange's, else Options'). A p that
// is missing or still the price macro is the token's bid price
// (estimated).
func (b *Bidder) clearingPrice(p []byte, tok *token.Token) (price int64, estimated, ok bool) {
	if len(p) == 0 || string(p) == auctionPriceMacro {
		return tok.PriceMicros, true, true
	}
	if v, err := money.Parse(p); err == nil {
		return v, false, true
	}
	enc, integ := b.opts.PriceEncryptionKey, b.opts.PriceIntegrityKey
	name := tok.Exchange
	if name == "" {
		name = DefaultExchange
	}
	if i, found := b.exchanges.index[name]; found && len(b.exchanges.list[i].PriceEncryptionKey) > 0 {
		enc, integ = b.exchanges.list[i].PriceEncryptionKey, b.exchanges.list[i].PriceIntegrityKey
	}
	if len(enc) == 0 {
		return 0, false, false
	}
	v, err := rtb.DecryptPrice(enc, integ, str(p))
	return v, false, err == nil
}

// replaySet remembers accepted notices (see the notice documentation):
// sharded, two generations per shard, 128-bit keys.
type replaySet struct {
	seed1, seed2 maphash.Seed
	window       time.Duration
	maxPerShard  int
	shards       [16]replayShard
}

type replayKey [2]uint64

type replayShard struct {
	mu        sync.Mutex
	cur, prev map[replayKey]struct{}
	start     time.Time // of cur
}

func newReplaySet(window time.Duration, maxEntries int) *replaySet {
	r := &replaySet{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), window: window,
		maxPerShard: max(1, maxEntries/2/16)}
	for i := range r.shards {
		r.shards[i].cur = make(map[replayKey]struct{})
	}
	return r
}

func (r *replaySet) key(kind int, auction, imp string) replayKey {
	var k replayKey
	for i, seed := range []maphash.Seed{r.seed1, r.seed2} {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteByte(byte(kind))
		h.WriteString(auction)
		h.WriteByte(0)
		h.WriteString(imp)
		k[i] = h.Sum64()
	}
	return k
}

// firstTime records the notice and reports whether it was not already
// recorded within the window.
func (r *replaySet) firstTime(kind int, auction, imp string, now time.Time) bool {
	k := r.key(kind, auction, imp)
	sh := &r.shards[k[0]%uint64(len(r.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.start.IsZero() {
		sh.start = now
	}
	if now.Sub(sh.start) >= r.window || len(sh.cur) >= r.maxPerShard {
		if now.Sub(sh.start) >= 2*r.window {
			sh.prev = nil // both generations are older than a window
		} else {
			sh.prev = sh.cur
		}
		sh.cur = make(map[replayKey]struct{}, len(sh.prev))
		sh.start = now
	}
	if _, ok := sh.cur[k]; ok {
		return false
	}
	if _, ok := sh.prev[k]; ok {
		return false
	}
	sh.cur[k] = struct{}{}
	return true
}

// forget removes a notice recorded by firstTime (its charge failed).
func (r *replaySet) forget(kind int, auction, imp string) {
	k := r.key(kind, auction, imp)
	sh := &r.shards[k[0]%uint64(len(r.shards))]
	sh.mu.Lock()
	delete(sh.cur, k)
	delete(sh.prev, k)
	sh.mu.Unlock()
}

// budgetOf returns c's CampaignBudget (spend.BudgetCache).
func (b *Bidder) budgetOf(set *campaign.Set, c *campaign.Campaign) *spend.CampaignBudget {
	return b.budgets.Of(set, c)
}

// budgetCheck is bg.Check, except for a test request (test: 1), which is
// never billed: it skips budgets and pacing, so it bids even for a campaign
// out of budget.
func budgetCheck(bg *spend.Budgets, cb *spend.CampaignBudget, test bool, now time.Time) (bool, spend.Reason) {
	if test {
		return true, spend.ReasonNone
	}
	return bg.Check(*cb, now)
}

// countWin counts tok's bid as won, once per bid in this process.
func (b *Bidder) countWin(tok *token.Token, now time.Time) {
	if b.opts.Spend == nil {
		return
	}
	nonce := tok.NoticeNonce()
	if b.replays.firstTime(replayWon, unsafe.String(&nonce[0], len(nonce)), "", now) {
		_ = b.opts.Spend.Count(tok.Campaign, spend.CountWins)
	}
}
