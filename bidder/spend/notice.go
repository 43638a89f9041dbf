package spend

import "time"

// Nonce is the random 128-bit value every bid's notice tokens carry: the
// part of a notice's idempotency key that names the impression. Exchange
// auction ids are not unique across exchanges, so the key is never built
// from them.
type Nonce [16]byte

// NoticeKind says what an accepted notice counts; with the Nonce it forms
// the notice's idempotency key, so every path that reports one
// impression's charge (a billing notice, its replay to another bidder, the
// journal's replay after a restart) shares one key.
type NoticeKind byte

// Notice kinds.
const (
	// NoticeCharge is the impression's charge (a billing notice).
	NoticeCharge NoticeKind = 1
)

// Notice is one accepted notice to charge once, fleet-wide.
type Notice struct {
	// Nonce and Kind are the idempotency key.
	Nonce Nonce
	Kind  NoticeKind
	// User is the user id the bid was for (may be empty: no frequency count).
	User string
	// Micros is the charge, in micros of the campaign's currency (>= 0).
	Micros int64
	// At is when the impression counts: it picks the campaign's day and the
	// frequency window.
	At time.Time
	// Expires is when the store may forget the key: the token's expiry plus
	// a clock skew allowance. A replay after it is refused by the token's
	// own expiry.
	Expires time.Time
	// Seq is the notice's sequence number in the bidder's local journal
	// (0: not journaled). The Writer does not interpret it; it hands it back
	// through Options.Confirmed once the store has the notice.
	Seq uint64
	// FreqRef is set by the Writer in Delta.Notices (callers of AddNotice
	// leave it zero): j+1 when the notice counts one impression in the
	// delta's Freq[j], 0 when it counts no frequency.
	FreqRef int
}

// MinNoticeTTL is the least time a store keeps a notice's key: the Writer
// raises an earlier Notice.Expires to the time of AddNotice plus it, so
// that the key outlives the retries of a flush across a short outage.
const MinNoticeTTL = time.Hour
