// Package token makes and checks the HMAC-signed tokens that rtbd puts in
// the URLs it hands out: the win and billing notice URLs of a bid (nurl,
// burl: /win?t=TOKEN&p=${AUCTION_PRICE}) and the click URLs of a creative
// (/click/TOKEN/PRODUCT, or /click?t=TOKEN.PRODUCT). A token carries what the notice handler needs
// without a lookup (campaign, creative, auction and imp ids, the bid price
// in micros and its currency, the user; for a click, the product group and
// the ids of the products in the creative) and when it was issued and
// expires. One click token is signed per bid and shared by all the product
// links of its creative, so a bid costs three HMACs (win, bill, click), not
// two plus one per product.
//
// # Format
//
// A token is the unpadded URL-safe base64 (RFC 4648 section 5, safe in a
// query string without escaping) of
//
//	payload | HMAC-SHA256(key, payload)[:16]
//
// where payload is: version (1 byte, 4), kind (1 byte), issued (uvarint,
// unix seconds), ttl (uvarint, seconds), price (uvarint, micros), currency
// (3 bytes, zero for none), campaign, creative, auction, imp, user, url (each
// a uvarint length then the bytes), group, product, then the number of
// products and each product id (uvarints), then the bid's nonce (16 bytes),
// then a flags byte: bit 0 the test bid, bits 1-2 the bid's Billing mode
// (0 burl, 1 nurl, 2 render), bit 3 set when the exchange's name follows
// (a uvarint length, then the bytes; absent for the default exchange).
// Version 3 is the same without the flags byte (not a test, billing burl,
// the default exchange). Version 2, the same without the nonce, and version 1, without the
// product list either, are still accepted by Parse (Nonce zero;
// Token.NoticeNonce derives one). A win token for a typical bid is about
// 130 characters, a click token for 15 products about 210.
//
// # Nonce
//
// Every token of one bid (win, bill, click) carries the same random 128-bit
// Nonce, chosen by the bidder: with what a notice counts it is the notice's
// idempotency key in the spend store (spend.Notice), so a notice replayed to
// another bidder or after a restart is charged once. Uniqueness is what
// matters, not secrecy: the token is signed. The 128-bit truncated HMAC is
// what RFC 2104 section 5 allows; a forgery needs about 2^128 tries.
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
