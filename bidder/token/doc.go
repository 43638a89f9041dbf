// Package token makes and checks the HMAC-signed tokens that rtbd puts in
// the URLs it hands out: the win, billing and loss notice URLs of a bid
// (nurl, burl: /win?t=TOKEN&p=${AUCTION_PRICE}, /bill?t=..., lurl:
// /loss?t=...), the creative's impression tracker (/imp?t=...) and its
// click URLs (/click/TOKEN/PRODUCT, or /click?t=TOKEN.PRODUCT). A token
// carries what the handler needs without a lookup (campaign, creative,
// auction and imp ids, the bid price and the bid's value before shading
// in micros and their currency, the shading segment and price bucket, the
// user, the billing mode and exchange; for clicks, the product group and
// the ids of the products in the creative) and when it was issued and
// expires.
//
// A bid is signed once (Keys.AppendBid): one payload, one HMAC, two tokens.
// The exchange token serves the URLs only the exchange sees and fires
// (nurl, burl, lurl: /win, /bill, /loss); the markup token serves the URLs
// inside the creative, which whoever renders the ad sees (the impression
// tracker and every product link: /imp, /click). A route accepts a token
// of its audience (Audience), whatever URL of the bid it came in: each
// notice kind still counts once per bid (the replay rules of the notice
// handlers), and the impression is charged once per bid nonce. The two
// audiences stay apart because the markup is public to the page: its
// token must not open /bill or /win, or a page could charge an impression
// the exchange did not bill, at the bid price, ahead of the exchange's
// notice.
//
// # Format
//
// A token is the unpadded URL-safe base64 (RFC 4648 section 5, safe in a
// query string without escaping) of
//
//	payload | audience | MAC
//
// where MAC is one half of the 32-byte HMAC-SHA256(key, payload): the
// first 16 bytes for the exchange token (audience byte 0), the last 16 for
// the markup token (audience 1). HMAC-SHA256 is a pseudo-random function, so each
// half is a 128-bit tag of the payload that says nothing of the other:
// holding a markup token gives no way to make the exchange token of the
// same bid, and changing the audience byte breaks the MAC.
//
// payload (version 5) is: version (1 byte, 5), issued (uvarint, unix
// seconds), notice ttl and click ttl (uvarints, seconds; the notices
// expire at issued + notice ttl, the click links at issued + click ttl),
// price (uvarint, micros), currency (3 bytes, zero for none), campaign,
// creative, auction, imp, user, url (each a uvarint length then the
// bytes), group, product, then the number of products and each product id
// (uvarints), then the bid's nonce (16 bytes), then a flags byte: bit 0
// the test bid, bits 1-2 the bid's Billing mode (0 burl, 1 nurl, 2
// render), bit 3 set when the exchange's name follows (a uvarint length,
// then the bytes; absent for the default exchange), then the bid's value
// before shading (uvarint, micros, 0 unknown), its shading segment
// (uvarint, at most 2^32-1, 0 none) and its price bucket (uvarint, at most
// 2^16-1).
//
// Compatibility: Parse accepts every version for the whole lifetime of the
// tokens handed out in it (720h for clicks by default), so an upgrade
// never fails a notice or a click. Versions 1 to 4 are one token per
// kind: payload | HMAC-SHA256(key, payload)[:16], no audience byte, and
// the payload is the version byte, a kind byte (1 win, 2 bill, 3 click, 4
// loss, 5 imp), then the version 5 fields up to the exchange name, with
// one ttl (the token's expiry, for every route) and without the shading
// fields. A token of version 4 and older is accepted only by its kind's
// route. Version 3 has no flags byte (not a test, billing burl, the
// default exchange); version 2 has no nonce either (Nonce zero;
// Token.NoticeNonce derives one); version 1 has no product list either
// (a click token signing the landing URL itself).
//
// Both tokens of a bid are the same length, since they sign one payload:
// about 185 characters for a bid with a 40-character auction id, plus
// about 75 when the creative links 15 products.
//
// # Nonce
//
// Both tokens of one bid carry the same random 128-bit Nonce, chosen by
// the bidder: with what a notice counts it is the notice's
// idempotency key in the spend store (spend.Notice), so a notice replayed to
// another bidder or after a restart is charged once. Uniqueness is what
// matters, not secrecy: the token is signed. The 128-bit truncated HMAC is
// what RFC 2104 section 5 allows (it names the leftmost bits, which the
// exchange token and versions 1 to 4 show; the markup token's rightmost
// half is as strong a tag under the same pseudo-random function
// assumption); a forgery needs about 2^128 tries.
//
// # Signed uids
//
// A server-side integration that knows rtbd's user id for a user (it read
// rtbd's uid cookie, or keeps a mapping of its own) passes it to /event or
// /match as uid=SIGNED, where SIGNED is Keys.AppendUID's output:
//
//	base64url(0x55 'U' | uvarint(expiry, unix seconds) | uid) + HMAC-SHA256(key, same payload)[:16]
//
// (unpadded URL-safe base64 of the payload followed by its truncated MAC,
// the key being the first of bidder.token_keys). rtbd takes a uid from the
// query only so signed (unless user.trust_query_uid is true); a forged,
// tampered or expired one is refused. In Go:
//
//	keys, _ := token.NewKeys([]byte(secret))
//	signed, _ := keys.AppendUID(nil, uid, time.Now().Add(24*time.Hour))
//	url := "https://bidder.example/event?uid=" + string(signed) + "&pg=1&pid=7&ev=view"
//
// In a shell: printf 'U'; printf the expiry as an unsigned LEB128 varint;
// printf the uid; append the first 16 bytes of `openssl dgst -sha256 -hmac
// KEY -binary` over those bytes; base64 -w0 | tr '+/' '-_' | tr -d '='.
//
// # Keys and rotation
//
// Keys holds one or more secrets (at least MinKeyBytes each). Tokens are
// signed with the first key and accepted when any key verifies them, so a
// fleet rotates without failing notices: add the new key second everywhere,
// then move it first, then drop the old one after the longest TTL.
//
// # Allocations and concurrency
//
// Keys.Append and Keys.Parse make no allocation when their buffers have
// room; Parse returns a Token whose strings point into the buffer it was
// given (see Parse). A *Keys is immutable and safe for concurrent use.
package token
