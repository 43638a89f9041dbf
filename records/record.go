package records

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Kind is what a record says happened.
type Kind uint8

// Record kinds. The zero Kind is not a kind.
const (
	// KindBid is one bid made: what was bid and for what.
	KindBid Kind = 1 + iota
	// KindNoBid is a no-bid answer with its reason (sampled,
	// records.nobid_sample).
	KindNoBid
	// KindWin is an accepted win notice (/win).
	KindWin
	// KindLoss is an accepted loss notice (/loss): reason and m.
	KindLoss
	// KindCharge is the one record of money: the notice that charged the
	// impression (/win, /bill or /imp, as the exchange's billing mode says).
	KindCharge
	// KindImp is an accepted impression notice (/imp).
	KindImp
	// KindClick is a followed click (/click).
	KindClick
	// KindView is a product view (/event).
	KindView
	numKinds
)

var kindNames = [numKinds]string{"", "bid", "nobid", "win", "loss", "charge", "imp", "click", "view"}

// String is the kind's name, as in partition paths and topic names.
func (k Kind) String() string {
	if k == 0 || k >= numKinds {
		return "unknown"
	}
	return kindNames[k]
}

// Valid reports whether k is one of the kinds.
func (k Kind) Valid() bool { return k > 0 && k < numKinds }

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, bool) {
	for k := KindBid; k < numKinds; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// Kinds lists every kind, in order.
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds-1)
	for k := KindBid; k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// Nonce is the bid's random 128-bit value that every notice of the bid
// carries: the join key of a bid and its notices, and with Kind the key
// consumers deduplicate by. Records without a bid (nobid, view) get a
// nonce of their own, unique per record.
type Nonce [16]byte

// String is the nonce in lowercase hex (32 characters).
func (n Nonce) String() string { return hex.EncodeToString(n[:]) }

// Record is one log-level record. Amounts are micros: PriceMicros of
// Currency (the bid's price CPM for bid records, the clearing price CPM for
// notices), SpendMicros of the campaign's currency (what was charged for
// the impression: charge records only), MMicros (the loss notice's m, CPM,
// of Currency). Strings may point into memory the caller reuses: Put and
// AppendBinary copy them.
type Record struct {
	Kind Kind
	// Time is when it happened; stored in UTC to the microsecond.
	Time time.Time
	// Instance is the bidder instance that wrote the record.
	Instance string
	Nonce    Nonce

	RequestID, ImpID, Exchange, CampaignID string
	Publisher, DomainOrBundle, Format      string
	Country, DeviceType                    string
	PriceMicros, SpendMicros, ValueMicros  int64
	Currency                               string
	Products                               []int64
	Reason                                 string
	MMicros                                int64
	Test                                   bool
	UserID                                 string
	GroupID, ProductID                     int64

	// Seq is the record's sequence number in the bidder's journal (charge
	// records; 0 otherwise). It is not stored in files or messages.
	Seq uint64
}

// ErrCorrupt is wrapped by the errors of a binary record that does not
// decode.
var ErrCorrupt = errors.New("records: corrupt record")

// binaryVersion is the first byte of a record's binary form.
const binaryVersion = 1

// Bounds of a record's binary form, checked by Decode.
const (
	maxString   = 1 << 12
	maxProducts = 1 << 10
)

// AppendBinary appends the record's binary form (the in-memory buffer's
// and the journal's encoding; not a wire format for others) to dst. It
// allocates only when dst has no room; strings longer than 4096 bytes are
// cut, and more than 1024 products are cut to 1024.
//
//	version byte, kind byte, varint time (unix micros), 16 bytes nonce,
//	flags byte (bit 0: test),
//	13 strings (uvarint length + bytes): instance, request_id, imp_id,
//	exchange, campaign_id, publisher, domain_or_bundle, format, country,
//	device_type, currency, reason, user_id,
//	varints price, spend, value, m, group, product,
//	uvarint count + varint products.
func (r *Record) AppendBinary(dst []byte) []byte {
	dst = append(dst, binaryVersion, byte(r.Kind))
	dst = binary.AppendVarint(dst, r.Time.UnixMicro())
	dst = append(dst, r.Nonce[:]...)
	var flags byte
	if r.Test {
		flags |= 1
	}
	dst = append(dst, flags)
	for _, s := range [...]string{r.Instance, r.RequestID, r.ImpID, r.Exchange, r.CampaignID, r.Publisher,
		r.DomainOrBundle, r.Format, r.Country, r.DeviceType, r.Currency, r.Reason, r.UserID} {
		if len(s) > maxString {
			s = s[:maxString]
		}
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	for _, v := range [...]int64{r.PriceMicros, r.SpendMicros, r.ValueMicros, r.MMicros, r.GroupID, r.ProductID} {
		dst = binary.AppendVarint(dst, v)
	}
	ps := r.Products
	if len(ps) > maxProducts {
		ps = ps[:maxProducts]
	}
	dst = binary.AppendUvarint(dst, uint64(len(ps)))
	for _, p := range ps {
		dst = binary.AppendVarint(dst, p)
	}
	return dst
}

// BinarySize is an upper bound of len(r.AppendBinary(nil)).
func (r *Record) BinarySize() int {
	n := 2 + binary.MaxVarintLen64 + 16 + 1 + 6*binary.MaxVarintLen64 + binary.MaxVarintLen64
	for _, s := range [...]string{r.Instance, r.RequestID, r.ImpID, r.Exchange, r.CampaignID, r.Publisher,
		r.DomainOrBundle, r.Format, r.Country, r.DeviceType, r.Currency, r.Reason, r.UserID} {
		n += binary.MaxVarintLen64 + min(len(s), maxString)
	}
	return n + min(len(r.Products), maxProducts)*binary.MaxVarintLen64
}

// DecodeBinary decodes the first record of src into r (its strings and
// Products newly allocated; r.Seq untouched) and returns the rest of src.
// src may be outside input (a damaged journal): every length is checked,
// and a record that does not decode is an error wrapping ErrCorrupt.
func (r *Record) DecodeBinary(src []byte) (rest []byte, err error) {
	return r.decode(src, nil)
}

// decode is DecodeBinary; with dc, the strings of low cardinality come
// from dc's interner and Products from its arena (the sink goroutine's
// decoding allocates little).
func (r *Record) decode(src []byte, dc *decodeCache) (rest []byte, err error) {
	d := decoder{b: src, dc: dc}
	if v := d.byte(); d.err == nil && v != binaryVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorrupt, v)
	}
	r.Kind = Kind(d.byte())
	ts := d.varint()
	copy(r.Nonce[:], d.take(16))
	flags := d.byte()
	r.Test = flags&1 != 0
	for i, p := range [...]*string{&r.Instance, &r.RequestID, &r.ImpID, &r.Exchange, &r.CampaignID, &r.Publisher,
		&r.DomainOrBundle, &r.Format, &r.Country, &r.DeviceType, &r.Currency, &r.Reason, &r.UserID} {
		*p = d.str(i != 1 && i != 12) // request and user ids are not interned
	}
	for _, p := range [...]*int64{&r.PriceMicros, &r.SpendMicros, &r.ValueMicros, &r.MMicros, &r.GroupID, &r.ProductID} {
		*p = d.varint()
	}
	n := d.uvarint()
	if n > maxProducts {
		d.fail()
	}
	if dc != nil {
		a := len(dc.arena)
		for i := uint64(0); i < n && d.err == nil; i++ {
			dc.arena = append(dc.arena, d.varint())
		}
		r.Products = dc.arena[a:len(dc.arena):len(dc.arena)]
	} else {
		r.Products = r.Products[:0]
		for i := uint64(0); i < n && d.err == nil; i++ {
			r.Products = append(r.Products, d.varint())
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if !r.Kind.Valid() {
		return nil, fmt.Errorf("%w: kind %d", ErrCorrupt, r.Kind)
	}
	r.Time = time.UnixMicro(ts).UTC()
	return d.b, nil
}

type decoder struct {
	b   []byte
	err error
	dc  *decodeCache
}

// decodeCache is the interner and the products arena of one sink
// goroutine's decoding.
type decodeCache struct {
	strs  map[string]string
	arena []int64
}

// maxInterned bounds the interner: past it, it starts over.
const maxInterned = 1 << 12

func (c *decodeCache) intern(b []byte) string {
	if s, ok := c.strs[string(b)]; ok {
		return s
	}
	if len(c.strs) >= maxInterned {
		clear(c.strs)
	}
	s := string(b)
	c.strs[s] = s
	return s
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or out of bounds", ErrCorrupt)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) take(n int) []byte {
	if len(d.b) < n {
		d.fail()
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) uvarint() uint64 {
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) varint() int64 {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) str(intern bool) string {
	n := d.uvarint()
	if n > maxString {
		d.fail()
		return ""
	}
	b := d.take(int(n))
	if intern && d.dc != nil {
		return d.dc.intern(b)
	}
	return string(b)
}
