// Package notice serves the notices of rtbd's bids: win, billing and
// impression notices (GET /win, GET /bill, GET /imp: Handler.Serve, where
// package bidder routes them when bidder.Options.Spend is set and
// bidder.Options.Notices is nil) and loss notices (GET /loss:
// Handler.ServeLoss, always; see loss.go).
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
// for an exchange other than exchange.Default, the exchange's name (for
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
// and the token's expiry plus Options.ClockSkew (when the store may
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
// charge is converted with the bidder's rates (Options.Rates: the
// bidder's own, or what its SetRates last set).
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
//
// # Wins
//
// The first accepted win or billing notice of a bid (by its nonce, in the
// replay set) counts one win of its campaign (spend.CountWins,
// flushed with the spend): a bid whose SSP fires both notices, or only one
// of them, is one win. Win rate in /admin/campaigns is wins per bid
// (spend.CountBids, counted as bids are made). A bid whose two notices go
// to two bidders of a fleet counts a win on each.
//
// # What a notice teaches bid shading
//
// With Options.Shader, once per bid and per bidder (the replay set), and
// only from a verified token (a forged notice teaches nothing); a token
// without a segment (a bid that was not first price, or a token of an
// older version) teaches nothing:
//
//   - the win is the notice that charges the bid under its exchange's
//     billing mode: /bill under burl (an exchange that wins a bid and never
//     fires its burl, because the ad did not render, reads as a loss), /win
//     or /bill under nurl, /imp or /bill under render. Its m (the price to
//     tie: the next bid or the floor) is a minimum bid to win when it is at
//     most the price bid.
//   - a loss notice with reason 102 (lost to a higher bid) or 100 (below
//     the floor) is a loss at the bid's price; its m, when above the bid
//     and within 20 times it (and 1,000 CPM), a minimum bid to win. Other
//     reasons teach nothing.
//   - on an exchange with exchanges.NAME.loss_notices false (the default),
//     a bid with no win within exchanges.NAME.notice_wait is a loss.
//
// An m that is absent, the unfilled macro, not a price, negative, above the
// price on a win, at or below it on a loss, or absurd is not used and is
// counted in rtbd_shading_min_to_win_total by that result.
package notice
