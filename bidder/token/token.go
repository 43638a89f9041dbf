package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"
	"unsafe"

	"github.com/rtbd/rtbd/rtb/money"
)

// Kind says what a token is for: the route that accepts it. A token of
// version 4 and older serves exactly one kind; a version 5 token serves
// every kind of its Audience (see Audience), so a win token is never a
// click and a click token never a billing notice.
type Kind byte

// Token kinds.
const (
	KindWin   Kind = 1 // nurl: /win
	KindBill  Kind = 2 // burl: /bill
	KindClick Kind = 3 // click URL: /click
	KindLoss  Kind = 4 // lurl: /loss
	KindImp   Kind = 5 // the creative's own impression tracker: /imp
)

// maxKind is the highest kind a token may carry.
const maxKind = KindImp

// String returns "win", "bill", "click", "loss", "imp" or "unknown": a fixed set, usable as
// a metric label.
func (k Kind) String() string {
	switch k {
	case KindWin:
		return "win"
	case KindBill:
		return "bill"
	case KindClick:
		return "click"
	case KindLoss:
		return "loss"
	case KindImp:
		return "imp"
	}
	return "unknown"
}

// Audience says who a version 5 token is handed to, and so which routes
// accept it. The URLs of one bid go to two audiences: the exchange, which
// alone sees the bid response's nurl, burl and lurl and fires them server
// to server, and whoever renders the ad, which sees the impression tracker
// and the click links inside the creative's markup. A token of the markup
// must not open the billing routes: with billing on burl, a page that
// renders the ad could fire /bill ahead of the exchange, charge an
// impression the exchange did not bill, at the bid price rather than the
// clearing price (the first charge of a bid sticks). So both tokens of a
// bid carry one payload and one HMAC, but each shows its own half of it
// (see the package documentation, Format).
type Audience byte

// Audiences.
const (
	// AudienceExchange: /win, /bill and /loss (nurl, burl, lurl).
	AudienceExchange Audience = 0
	// AudienceMarkup: /imp and /click (the creative's impression tracker
	// and product links).
	AudienceMarkup Audience = 1
	maxAudience             = AudienceMarkup
)

// Audience returns the audience whose token k's route accepts.
func (k Kind) Audience() Audience {
	if k == KindImp || k == KindClick {
		return AudienceMarkup
	}
	return AudienceExchange
}

// String returns "exchange", "markup" or "unknown".
func (a Audience) String() string {
	switch a {
	case AudienceExchange:
		return "exchange"
	case AudienceMarkup:
		return "markup"
	}
	return "unknown"
}

// firstKind is the Kind a version 5 token parsed with want 0 reports.
func (a Audience) firstKind() Kind {
	if a == AudienceMarkup {
		return KindImp
	}
	return KindWin
}

// Limits.
const (
	// MinKeyBytes is the shortest key accepted.
	MinKeyBytes = 16
	// MaxFieldBytes bounds each string field of a token.
	MaxFieldBytes = 4096
	// MaxTokenBytes bounds the encoded token Parse reads (longer: ErrMalformed).
	MaxTokenBytes = 12 << 10
	// MACBytes is the length of the truncated HMAC-SHA256.
	MACBytes = 16
	// MaxProducts bounds Token.Products.
	MaxProducts = 1000
)

// version is the format Append and AppendBid write. Parse also reads
// versions 1 to 4, so tokens handed out before an upgrade keep working
// until they expire (see the package documentation, Format).
const (
	version1 = 1
	version2 = 2
	version3 = 3
	version4 = 4
	version  = 5
)

// audienceBytes is what a version 5 token has between its payload and its
// MAC: the audience byte.
const audienceBytes = 1

// Flag bits of a version 4 and 5 token.
const (
	flagTest = 1 << 0
	// flagBilling (2 bits) is the bid's Billing mode.
	flagBillingShift = 1
	flagBilling      = 3 << flagBillingShift
	// flagExchange: the exchange's name follows the flags byte (a uvarint
	// length, then the bytes).
	flagExchange = 1 << 3
	flagsMask    = flagTest | flagBilling | flagExchange // the bits Parse accepts
)

// Billing says which notice of a bid charges its impression (config
// exchanges.NAME.billing). The zero value is BillingBurl, so a token
// without billing bits (version 3 and older, or signed before the flag)
// bills on burl.
type Billing byte

// Billing modes.
const (
	// BillingBurl: the billing notice (burl, /bill) charges.
	BillingBurl Billing = 0
	// BillingNurl: the win notice (nurl, /win) charges too, for exchanges
	// that never fire burl.
	BillingNurl Billing = 1
	// BillingRender: the creative's own impression tracker (/imp) charges
	// too.
	BillingRender Billing = 2
	maxBilling            = BillingRender
)

// String returns "burl", "nurl", "render" or "unknown".
func (b Billing) String() string {
	switch b {
	case BillingBurl:
		return "burl"
	case BillingNurl:
		return "nurl"
	case BillingRender:
		return "render"
	}
	return "unknown"
}

// ParseBilling returns the Billing named s ("burl", "nurl" or "render");
// "" is BillingBurl.
func ParseBilling(s string) (Billing, bool) {
	switch s {
	case "", "burl":
		return BillingBurl, true
	case "nurl":
		return BillingNurl, true
	case "render":
		return BillingRender, true
	}
	return 0, false
}

// Errors of Parse and NewKeys. Compare with errors.Is.
var (
	// ErrMalformed: not a token of this format (bad base64, truncated,
	// unknown version or kind, a field out of bounds).
	ErrMalformed = errors.New("token: malformed")
	// ErrSignature: no key verifies the token: forged, tampered or signed
	// with a key no longer listed.
	ErrSignature = errors.New("token: bad signature")
	// ErrExpired: the token verified but its expiry has passed.
	ErrExpired = errors.New("token: expired")
	// ErrKind: the token verified but is not of the kind asked for.
	ErrKind = errors.New("token: wrong kind")
	// ErrNoKey: NewKeys was given no key.
	ErrNoKey = errors.New("token: no key")
	// ErrShortKey: a key is shorter than MinKeyBytes.
	ErrShortKey = errors.New("token: key too short")
	// ErrField: Append was given a field longer than MaxFieldBytes, a
	// negative price, value or id, or a currency that is not 3 letters.
	ErrField = errors.New("token: field out of range")
)

// Token is the content of a signed token. Money is in micros (millionths
// of the currency unit) of Currency; prices are CPM as in OpenRTB.
type Token struct {
	// Kind is the route the token was parsed for (Parse's want; with want
	// 0, a version 5 token reports KindWin or KindImp, the first kind of
	// its audience). Append signs a token for Kind's audience.
	Kind Kind
	// Issued and Expires are whole seconds (the token stores unix seconds
	// and a TTL); a zero Issued means "now" to Append. Expires is the
	// expiry of the bid's notices (win, bill, loss, imp), ClickExpires the
	// expiry of its click links (a zero ClickExpires means Expires to
	// Append; a token of version 4 or older has one expiry, both fields
	// get it). Parse checks a click against ClickExpires and any other
	// kind against Expires.
	Issued, Expires, ClickExpires time.Time
	// Campaign and Creative are rtbd's ids of the ad; Auction is the bid
	// request id; Imp the imp id; User the user id the bid was for.
	Campaign, Creative, Auction, Imp, User string
	// PriceMicros is the bid price (CPM) in micros of Currency (an ISO 4217
	// code, money.IsCode).
	PriceMicros int64
	Currency    string
	// ValueMicros is the bid's value before shading (CPM, micros of
	// Currency, like PriceMicros); 0 when unknown (and in tokens of
	// version 4 and older).
	ValueMicros int64
	// Segment is the bid's shading segment, a compact id; 0 for none.
	Segment uint32
	// Bucket is the bucket of the bid price in the shading estimator (its
	// meaning is the shading package's); 0 in tokens of version 4 and
	// older.
	Bucket uint16
	// Group and Product identify the product of a click (0 for notices).
	Group, Product int64
	// URL is the landing URL of a click (empty for notices). Version 1
	// click tokens carried it; rtbd now signs one click token per bid,
	// with Products, and looks the landing URL up at click time.
	URL string
	// Nonce is the bid's random 128-bit value (every notice token of one
	// bid carries the same): the impression's part of a notice's
	// idempotency key (spend.Nonce).
	Nonce [16]byte
	// Test marks a token of a test bid (the request had test: 1): its
	// notices are verified and counted but never charge spend or
	// frequency.
	Test bool
	// Billing is the bid's billing mode: which notices charge (flag bits
	// 1-2 of a version 4 and 5 token).
	Billing Billing
	// Exchange is the name of the exchange the bid was made to ("" for
	// the default exchange): its settings (price keys) apply to the bid's
	// notices. At most MaxFieldBytes; carried after the flags byte when
	// not empty.
	Exchange string
	// Products are the product ids (of Group) of a bid's creative: one
	// click token, signed once, serves every product link of the ad (see
	// HasProduct). At most MaxProducts. Parse reuses its capacity.
	Products []int64
}

// HasProduct reports whether id is one of t.Products.
func (t *Token) HasProduct(id int64) bool {
	for _, p := range t.Products {
		if p == id {
			return true
		}
	}
	return false
}

// Keys signs and verifies tokens. It is immutable and safe for concurrent
// use.
type Keys struct {
	macs []*sync.Pool // per key: HMAC-SHA256 hash.Hash values, reset before use
}

// NewKeys returns Keys for the given secrets: the first signs, all verify.
// Each must be at least MinKeyBytes long. The secrets are copied.
func NewKeys(secrets ...[]byte) (*Keys, error) {
	if len(secrets) == 0 {
		return nil, ErrNoKey
	}
	k := &Keys{}
	for i, s := range secrets {
		if len(s) < MinKeyBytes {
			return nil, fmt.Errorf("%w: key %d has %d bytes, want >= %d", ErrShortKey, i, len(s), MinKeyBytes)
		}
		secret := append([]byte(nil), s...)
		// crypto/hmac keeps the hash states after the key pads and
		// restores them on Reset: 3 SHA-256 blocks per short token
		// instead of 5. Pooled, so that signing allocates nothing.
		k.macs = append(k.macs, &sync.Pool{New: func() any { return hmac.New(sha256.New, secret) }})
	}
	return k, nil
}

// Len is the number of keys.
func (k *Keys) Len() int { return len(k.macs) }

var enc = base64.RawURLEncoding

// Append appends the signed token for t to dst (URL-safe, no escaping
// needed) and returns the extended buffer: a version 5 token of the
// audience of t.Kind, good for every route of that audience (AppendBid
// makes both tokens of a bid with one HMAC). A zero t.Issued means now;
// the expiries are t.Expires and t.ClickExpires, which must not be before
// Issued (a zero Expires means Issued + 0: already expiring). On ErrField
// dst is returned unchanged. It makes no allocation when dst has room for
// the token plus its binary form (about twice the token).
func (k *Keys) Append(dst []byte, t *Token) ([]byte, error) {
	if t.Kind < KindWin || t.Kind > maxKind {
		return dst, fmt.Errorf("%w: kind %d", ErrField, t.Kind)
	}
	start := len(dst)
	dst, e, err := k.appendSigned(dst, t)
	if err != nil {
		return dst, err
	}
	var mac [2 * MACBytes]byte
	copy(mac[:], dst[e:])
	dst = appendHalf(dst[:e], &mac, t.Kind.Audience())
	dst = enc.AppendEncode(dst, dst[start:e+audienceBytes+MACBytes])
	n := copy(dst[start:], dst[e+audienceBytes+MACBytes:])
	return dst[:start+n], nil
}

// AppendBid appends the two tokens of one bid to dst, first the
// AudienceExchange token (for its nurl, burl and lurl), then the
// AudienceMarkup token (for its impression tracker and click links), and
// returns the extended buffer and the offset where the second starts:
// dst[len(dst before):mid] is the exchange token, dst[mid:] the markup
// token. Both carry the same payload, signed with one HMAC; t.Kind is
// not used. Errors and allocations are as Append's (room for both tokens
// and the binary form).
func (k *Keys) AppendBid(dst []byte, t *Token) (_ []byte, mid int, err error) {
	start := len(dst)
	dst, e, err := k.appendSigned(dst, t)
	if err != nil {
		return dst, start, err
	}
	var mac [2 * MACBytes]byte
	copy(mac[:], dst[e:])
	raw := e + audienceBytes + MACBytes // end of one binary token
	dst = appendHalf(dst[:e], &mac, AudienceExchange)
	// The tokens differ only after the payload: the base64 of its first
	// whole 3-byte groups (which encode on their own) is made once and
	// copied into the second token.
	shared := start + (e-start)/3*3
	dst = enc.AppendEncode(dst, dst[start:raw])
	exch := len(dst)
	dst[e] = byte(AudienceMarkup)
	copy(dst[e+audienceBytes:raw], mac[MACBytes:])
	dst = append(dst, dst[raw:raw+enc.EncodedLen(shared-start)]...)
	dst = enc.AppendEncode(dst, dst[shared:raw])
	n := copy(dst[start:], dst[raw:])
	return dst[:start+n], start + (exch - raw), nil
}

// appendHalf appends the audience byte and a's half of mac.
func appendHalf(dst []byte, mac *[2 * MACBytes]byte, a Audience) []byte {
	dst = append(dst, byte(a))
	return append(dst, mac[int(a)*MACBytes:int(a+1)*MACBytes]...)
}

// appendSigned appends t's version 5 payload and its full HMAC (32 bytes)
// to dst; e is where the payload ends. On error dst is unchanged.
func (k *Keys) appendSigned(dst []byte, t *Token) (_ []byte, e int, err error) {
	if err := checkFields(t); err != nil {
		return dst, 0, err
	}
	issued := t.Issued
	if issued.IsZero() {
		issued = time.Now()
	}
	ttl, clickTTL := int64(0), int64(0)
	if !t.Expires.IsZero() {
		ttl = t.Expires.Unix() - issued.Unix()
	}
	clickTTL = ttl
	if !t.ClickExpires.IsZero() {
		clickTTL = t.ClickExpires.Unix() - issued.Unix()
	}
	if ttl < 0 || clickTTL < 0 {
		return dst, 0, fmt.Errorf("%w: expires before issued", ErrField)
	}
	start := len(dst) // the binary payload goes here first, then its base64
	dst = append(dst, version)
	dst = binary.AppendUvarint(dst, uint64(issued.Unix()))
	dst = binary.AppendUvarint(dst, uint64(ttl))
	dst = binary.AppendUvarint(dst, uint64(clickTTL))
	dst = binary.AppendUvarint(dst, uint64(t.PriceMicros))
	if t.Currency == "" {
		dst = append(dst, 0, 0, 0)
	} else {
		dst = append(dst, t.Currency...)
	}
	for _, s := range [...]string{t.Campaign, t.Creative, t.Auction, t.Imp, t.User, t.URL} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendUvarint(dst, uint64(t.Group))
	dst = binary.AppendUvarint(dst, uint64(t.Product))
	dst = binary.AppendUvarint(dst, uint64(len(t.Products)))
	for _, id := range t.Products {
		dst = binary.AppendUvarint(dst, uint64(id))
	}
	dst = append(dst, t.Nonce[:]...)
	flags := byte(0)
	if t.Test {
		flags |= flagTest
	}
	flags |= byte(t.Billing) << flagBillingShift
	if t.Exchange != "" {
		flags |= flagExchange
	}
	dst = append(dst, flags)
	if t.Exchange != "" {
		dst = binary.AppendUvarint(dst, uint64(len(t.Exchange)))
		dst = append(dst, t.Exchange...)
	}
	dst = binary.AppendUvarint(dst, uint64(t.ValueMicros))
	dst = binary.AppendUvarint(dst, uint64(t.Segment))
	dst = binary.AppendUvarint(dst, uint64(t.Bucket))
	e = len(dst)
	return k.mac(0, dst, dst[start:e]), e, nil
}

func checkFields(t *Token) error {
	if t.PriceMicros < 0 || t.ValueMicros < 0 || t.Group < 0 || t.Product < 0 {
		return fmt.Errorf("%w: negative price, value or id", ErrField)
	}
	if len(t.Products) > MaxProducts {
		return fmt.Errorf("%w: %d products, more than %d", ErrField, len(t.Products), MaxProducts)
	}
	for _, id := range t.Products {
		if id < 0 {
			return fmt.Errorf("%w: negative product id", ErrField)
		}
	}
	if t.Currency != "" && !money.IsCode(t.Currency) {
		return fmt.Errorf("%w: currency %q", ErrField, t.Currency)
	}
	if t.Billing > maxBilling {
		return fmt.Errorf("%w: billing %d", ErrField, t.Billing)
	}
	for _, s := range [...]string{t.Campaign, t.Creative, t.Auction, t.Imp, t.User, t.URL, t.Exchange} {
		if len(s) > MaxFieldBytes {
			return fmt.Errorf("%w: a field has %d bytes, more than %d", ErrField, len(s), MaxFieldBytes)
		}
	}
	return nil
}

// mac appends HMAC-SHA256(key i, msg) (32 bytes) to dst.
func (k *Keys) mac(i int, dst, msg []byte) []byte {
	h := k.macs[i].Get().(hash.Hash)
	h.Reset()
	h.Write(msg)
	dst = h.Sum(dst)
	k.macs[i].Put(h)
	return dst
}

// Parse checks the token s and fills *t. want is the kind the caller
// accepts (0 accepts any): a token of version 4 or older of that kind, or
// a version 5 token of its audience (then t.Kind is want). now is compared
// with the expiry of that kind (ClickExpires for KindClick, else
// Expires).
//
// It decodes into buf (grown if too small) and returns it: t's string
// fields point into that buffer (no copy) and stay valid until it is
// reused; use strings.Clone to keep one longer. On ErrExpired and ErrKind t
// is filled (the token is authentic); on ErrMalformed and ErrSignature t is
// zeroed. It makes no allocation when buf has room for 32 bytes more than
// the decoded token.
func (k *Keys) Parse(t *Token, s []byte, want Kind, now time.Time, buf []byte) ([]byte, error) {
	prods := t.Products[:0]
	*t = Token{Products: prods}
	if len(s) > MaxTokenBytes || len(s) < 4 {
		return buf, ErrMalformed
	}
	need := enc.DecodedLen(len(s)) + 32
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	n, err := enc.Decode(buf, s)
	if err != nil || n < 2+MACBytes {
		return buf[:0], ErrMalformed
	}
	payload := buf[:n-MACBytes] // what decodePayload reads
	msg := payload              // what the MAC covers
	half := 0                   // which half of the HMAC the token shows
	if buf[0] == version {
		// version | ... | audience | MAC: the audience picks the half, so
		// it is outside the MAC (either half is a 128-bit tag of msg).
		msg = payload[:len(payload)-audienceBytes]
		if a := payload[len(payload)-1]; a <= byte(maxAudience) {
			half = int(a) * MACBytes
		}
	}
	got := buf[n-MACBytes : n]
	ok := false
	for i := range k.macs {
		mac := k.mac(i, buf[:n], msg)[n:] // into buf's spare room
		if subtle.ConstantTimeCompare(mac[half:half+MACBytes], got) == 1 {
			ok = true
			break
		}
	}
	if !ok {
		// Only now look at the payload: a bad signature says nothing
		// about its content.
		return buf[:0], ErrSignature
	}
	if err := decodePayload(t, payload); err != nil {
		*t = Token{Products: prods}
		return buf[:0], err
	}
	if want != 0 && t.Kind != want {
		if payload[0] != version || want > maxKind || want.Audience() != t.Kind.Audience() {
			return buf, ErrKind
		}
		t.Kind = want // a version 5 token serves every kind of its audience
	}
	exp := t.Expires
	if t.Kind == KindClick {
		exp = t.ClickExpires
	}
	if now.After(exp) {
		return buf, ErrExpired
	}
	return buf, nil
}

// decodePayload fills t from a verified payload (for version 5, the
// payload and the audience byte after it); strings alias p.
func decodePayload(t *Token, p []byte) error {
	if len(p) < 2 || p[0] < version1 || p[0] > version {
		return ErrMalformed
	}
	ver := p[0]
	if ver == version {
		a := Audience(p[len(p)-1])
		if a > maxAudience {
			return ErrMalformed
		}
		t.Kind = a.firstKind()
		p = p[1 : len(p)-audienceBytes]
	} else {
		t.Kind = Kind(p[1])
		if t.Kind < KindWin || t.Kind > maxKind {
			return ErrMalformed
		}
		p = p[2:]
	}
	// issued, ttl, click ttl (version 5), price
	var vals [4]uint64
	nvals := 3
	if ver == version {
		nvals = 4
	}
	for i := range nvals {
		v, n := binary.Uvarint(p)
		if n <= 0 || v > 1<<62 {
			return ErrMalformed
		}
		vals[i], p = v, p[n:]
	}
	if ver != version {
		vals[3], vals[2] = vals[2], vals[1] // one expiry; the price
	}
	t.Issued = time.Unix(int64(vals[0]), 0)
	t.Expires = time.Unix(int64(vals[0]+vals[1]), 0)
	t.ClickExpires = time.Unix(int64(vals[0]+vals[2]), 0)
	t.PriceMicros = int64(vals[3])
	if len(p) < 3 {
		return ErrMalformed
	}
	if p[0] != 0 {
		t.Currency = str(p[:3])
	}
	p = p[3:]
	for _, f := range [...]*string{&t.Campaign, &t.Creative, &t.Auction, &t.Imp, &t.User, &t.URL} {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > MaxFieldBytes || l > uint64(len(p)-n) {
			return ErrMalformed
		}
		*f, p = str(p[n:n+int(l)]), p[n+int(l):]
	}
	for _, f := range [...]*int64{&t.Group, &t.Product} {
		v, n := binary.Uvarint(p)
		if n <= 0 || v > 1<<62 {
			return ErrMalformed
		}
		*f, p = int64(v), p[n:]
	}
	if ver >= version2 {
		cnt, n := binary.Uvarint(p)
		if n <= 0 || cnt > MaxProducts || cnt > uint64(len(p)-n) {
			return ErrMalformed
		}
		p = p[n:]
		for ; cnt > 0; cnt-- {
			id, n := binary.Uvarint(p)
			if n <= 0 || id > 1<<62 {
				return ErrMalformed
			}
			t.Products, p = append(t.Products, int64(id)), p[n:]
		}
	}
	if ver >= version3 {
		if len(p) < len(t.Nonce) {
			return ErrMalformed
		}
		p = p[copy(t.Nonce[:], p):]
	}
	if ver >= version4 {
		if len(p) < 1 || p[0]&^flagsMask != 0 {
			return ErrMalformed
		}
		t.Test = p[0]&flagTest != 0
		t.Billing = Billing((p[0] & flagBilling) >> flagBillingShift)
		if t.Billing > maxBilling {
			return ErrMalformed
		}
		hasExchange := p[0]&flagExchange != 0
		p = p[1:]
		if hasExchange {
			l, n := binary.Uvarint(p)
			if n <= 0 || l == 0 || l > MaxFieldBytes || l > uint64(len(p)-n) {
				return ErrMalformed
			}
			t.Exchange, p = str(p[n:n+int(l)]), p[n+int(l):]
		}
	}
	if ver >= version {
		var vals [3]uint64 // value, segment, bucket
		for i, limit := range [...]uint64{1 << 62, 1<<32 - 1, 1<<16 - 1} {
			v, n := binary.Uvarint(p)
			if n <= 0 || v > limit {
				return ErrMalformed
			}
			vals[i], p = v, p[n:]
		}
		t.ValueMicros, t.Segment, t.Bucket = int64(vals[0]), uint32(vals[1]), uint16(vals[2])
	}
	if len(p) != 0 {
		return ErrMalformed
	}
	return nil
}

// NoticeNonce returns the nonce that keys the notices of t's bid: t.Nonce,
// or, for a token without one (signed before tokens carried a nonce), a
// nonce derived from what every token of one bid shares: the first 16
// bytes of SHA-256 over the campaign, auction and imp ids and the issue
// time. A derived nonce is as unique as those ids (exchange auction ids
// may repeat across exchanges), which is as good as such a token can do.
// It makes no allocation for ids of up to about 200 bytes in all.
func (t *Token) NoticeNonce() [16]byte {
	if t.Nonce != ([16]byte{}) {
		return t.Nonce
	}
	var buf [256]byte
	b := append(buf[:0], "rtbd-nonce-v1"...)
	for _, s := range [...]string{t.Campaign, t.Auction, t.Imp} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendVarint(b, t.Issued.Unix())
	sum := sha256.Sum256(b)
	var n [16]byte
	copy(n[:], sum[:])
	return n
}

// str returns b as a string without copying (the caller documents that the
// string aliases b).
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
