package bidder

import (
	"bytes"
	"compress/gzip"
	crand "crypto/rand"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/prebid/openrtb/v20/openrtb2"
	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/creative"
	"github.com/rtbd/rtbd/bidder/explain"
	"github.com/rtbd/rtbd/bidder/fx"
	"github.com/rtbd/rtbd/bidder/internal/ascii"
	"github.com/rtbd/rtbd/bidder/internal/deadline"
	"github.com/rtbd/rtbd/bidder/token"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb"
	"github.com/rtbd/rtbd/rtb/money"
)

// reqState is everything one bid request needs, pooled and reused so that
// the hot path allocates only what the decoder and the stores do. It is
// owned by one request at a time; nothing in it outlives the handler's
// return except through the pool.
type reqState struct {
	b *Bidder
	m *metrics

	exchange int    // index in b.exchanges (0: exchange.Default)
	matchKey []byte // user.MatchKey of a request without user.buyeruid
	uidBuf   []byte // the uid resolved through the match table

	req      openrtb2.BidRequest
	a        round    // the auction's request-level values
	exts     rtb.Exts // req's ext members, filled with req by the decoder
	profile  user.Profile
	deadline time.Time
	dctx     deadline.Ctx
	now      time.Time
	// decided is when the auction ended (zero before): respond's clock.
	decided time.Time

	matched []*campaign.Campaign
	cands   []candidate // every imp's, st.plans[i] saying where
	plans   []impPlan   // per imp
	// lookups are the request's product lookups (b.products) and their
	// products; q is the query being asked.
	lookups catalog.Lookups
	q       catalog.Query

	native    creative.NativeRequest
	nativeImp int // index of the imp parsed into native, -1 none
	nativeErr error
	banner    creative.Banner
	nat       creative.Native
	vast      creative.VAST

	resp     openrtb2.BidResponse
	seatbids []openrtb2.SeatBid
	bids     []openrtb2.Bid
	seats    []string // seat of bids[i]
	grouped  []openrtb2.Bid

	arena []byte // bid ids, URLs, markup: strings of the response point here
	out   []byte // encoded response
	enc   rtb.Encoder
	// safeAdM holds the adms known to be JSON-safe (creative.AppendBanner
	// documents), by their data pointer: enc writes them unescaped.
	safeAdM []*byte
	gzOut   []byte

	body []byte // decompressed request body
	br   bytes.Reader
	gz   *gzip.Reader
	lim  io.LimitedReader

	tok  token.Token
	link link // what click URLs are built for
	// urls: the URL prefixes of the imp being bid on (&b.urls, or
	// &b.secureURLs on a secure imp).
	urls *publicURLs
	// secure holds the products a secure creative may show (httpsOnly).
	secure []*catalogpb.Product

	clickIDs []int64 // the products of the bid being signed that get a click link

	// rng draws the bids' nonces: seeded from crypto/rand once per state,
	// so no two states share a stream. The nonces need to be unique, not
	// secret (the tokens carrying them are signed).
	rng   *rand.ChaCha8
	nonce [16]byte // of the bid being made: every token of the bid carries it

	fxOwn *money.Rates    // rtbd's rates for this request (Bidder.rates)
	fxReq fx.RequestRates // the request's own (ext.prebid.currency)

	path pathState // supply-path verdict (supplycheck.go)
}

// round holds what one request's auction fixes before any imp is bid on
// (Bidder.auction sets it): every step of the auction reads it from the
// request state instead of taking it as parameters.
type round struct {
	set *campaign.Set    // the campaigns: one CampaignSource.Current per request
	cur string           // the response currency
	uid string           // the user (resolved through the match table)
	ex  *explain.Explain // the debug run's trace; nil on the bid path
}

// Buffers above these capacities are dropped when a state returns to the
// pool, so that one huge request does not pin memory.
const (
	maxKeptBuffer = 1 << 20
	maxKeptSlice  = 256
)

func newReqState(b *Bidder) *reqState {
	st := &reqState{
		b: b, m: b.m,
		urls:      &b.urls,
		arena:     make([]byte, 0, 16<<10),
		out:       make([]byte, 0, 16<<10),
		nativeImp: -1,
	}
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (crypto/rand's contract since Go 1.24)
	st.rng = rand.NewChaCha8(seed)
	st.enc.SafeAdM = st.isSafeAdM
	st.lookups.Observe = st.observeCatalog
	return st
}

// newNonce draws the nonce of the next bid into st.nonce.
func (st *reqState) newNonce() {
	binary.LittleEndian.PutUint64(st.nonce[:8], st.rng.Uint64())
	binary.LittleEndian.PutUint64(st.nonce[8:], st.rng.Uint64())
}

// isSafeAdM reports whether b's adm is one of st.safeAdM.
func (st *reqState) isSafeAdM(b *openrtb2.Bid) bool {
	p := unsafe.StringData(b.AdM)
	for _, q := range st.safeAdM {
		if p == q {
			return true
		}
	}
	return false
}

func (b *Bidder) getState() *reqState {
	st := b.pool.Get().(*reqState)
	st.reset()
	return st
}

func (b *Bidder) putState(st *reqState) {
	if cap(st.arena) > maxKeptBuffer {
		st.arena = make([]byte, 0, 16<<10)
	}
	if cap(st.out) > maxKeptBuffer {
		st.out = make([]byte, 0, 16<<10)
	}
	if cap(st.gzOut) > maxKeptBuffer {
		st.gzOut = nil
	}
	if cap(st.body) > maxKeptBuffer {
		st.body = nil
	}
	st.br.Reset(nil)
	st.dctx.Reset(time.Time{}) // cancels a derived standard context, if any
	b.pool.Put(st)
}

// reset prepares st for a new request.
func (st *reqState) reset() {
	st.m = st.b.m
	st.exchange = 0
	st.a = round{}
	clear(st.matched)
	st.matched = st.matched[:0]
	st.cands = st.cands[:0]
	st.plans = st.plans[:0]
	st.lookups.Reset()
	st.q = catalog.Query{}
	clear(st.bids)
	st.bids = st.bids[:0]
	clear(st.safeAdM)
	st.safeAdM = st.safeAdM[:0]
	clear(st.grouped)
	st.grouped = st.grouped[:0]
	clear(st.seats)
	st.seats = st.seats[:0]
	clear(st.seatbids)
	st.seatbids = st.seatbids[:0]
	st.resp = openrtb2.BidResponse{}
	st.arena = st.arena[:0]
	st.nativeImp, st.nativeErr = -1, nil
	st.banner, st.nat, st.vast = creative.Banner{}, creative.Native{}, creative.VAST{}
	st.link = link{}
	st.urls = &st.b.urls
	clear(st.secure)
	st.secure = st.secure[:0]
	if cap(st.secure) > maxKeptSlice {
		st.secure = nil
	}
	st.deadline, st.decided = time.Time{}, time.Time{}
	st.fxOwn = nil
	st.path.reset()
	st.fxReq.Reset()
}

// readBody returns the request body, decompressed if gzip-encoded, or the
// rejection (rej*) to answer; -1 means none. Memory stays bounded by
// MaxBodyBytes whatever the compression ratio: decompression stops one
// byte past the limit.
func (b *Bidder) readBody(rc *fasthttp.RequestCtx, st *reqState) ([]byte, int) {
	raw := rc.PostBody()
	limit := b.opts.MaxBodyBytes
	if len(raw) > limit {
		return nil, rejTooLarge
	}
	enc := bytes.TrimSpace(rc.Request.Header.ContentEncoding())
	switch {
	case len(enc) == 0 || ascii.EqualLower(enc, "identity"):
		return raw, -1
	case ascii.EqualLower(enc, "gzip") || ascii.EqualLower(enc, "x-gzip"):
	default:
		return nil, rejEncoding
	}
	st.br.Reset(raw)
	var err error
	if st.gz == nil {
		st.gz, err = gzip.NewReader(&st.br)
	} else {
		err = st.gz.Reset(&st.br)
	}
	if err != nil {
		return nil, rejCorrupt
	}
	st.lim = io.LimitedReader{R: st.gz, N: int64(limit) + 1}
	buf := st.body[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := st.lim.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			st.body = buf
			return nil, rejCorrupt
		}
	}
	st.body = buf
	if len(buf) > limit {
		return nil, rejTooLarge
	}
	return buf, -1
}
