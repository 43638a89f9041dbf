// Package bidder is rtbd's bid server: the OpenRTB 2.6 endpoint SSPs call,
// answering within their deadline with dynamic retargeting ads built from
// the user's viewed and recommended products.
//
// # Routes (Bidder.Handler, fasthttp)
//
//	POST /openrtb2/bid   OpenRTB 2.6 (and 2.5) bid request -> 200 bid
//	                     response, or 204 no-bid (200 {"id","nbr"} with
//	                     Options.NBRBody); 405 other methods; gzip bodies
//	                     (Content-Encoding: gzip), 413 over MaxBodyBytes
//	                     compressed or decompressed, 415 other encodings;
//	                     gzip responses when accepted; x-openrtb-version: 2.6
//	POST /openrtb2/bid/{exchange}
//	                     the same for an exchange of Options.Exchanges
//	                     (404 for another name; /openrtb2/bid is
//	                     exchange.Default)
//	GET /event           product view pixel (?pg=&pid=&ev=view[&uid=]):
//	                     1x1 GIF; the uid is a signed uid= or the uid
//	                     cookie; none: a cookie is set, nothing recorded
//	GET /usersync        ?redirect=URL&gdpr=..: 302 to URL with the uid
//	                     macro replaced by rtbd's uid (package usersync)
//	GET /match           ?x=EXCHANGE&xuid=ID: stores EXCHANGE:ID -> uid
//	                     in the match table; 1x1 GIF or 302
//	GET /click?t=TOKEN   302 to the landing URL in a signed click token;
//	                     400 unsigned or tampered; expired: followed too
//	GET /win, /bill,     win, billing and impression notices
//	    /imp             (?t=TOKEN&p=PRICE): with Options.Spend, verified,
//	                     replay-checked and, per the exchange's billing
//	                     mode, charged once to the spend Writer (package notice:
//	                     204 accepted, estimated_price or replay, 410
//	                     expired, 400 forged, over-price, bad price; 503
//	                     while shutting down); Options.Notices replaces
//	                     that; neither: 204
//	GET /loss            loss notices (?t=TOKEN&r=REASON&m=MIN): verified,
//	                     replay-checked, counted by OpenRTB loss reason
//	                     (package notice); a test bid's notices: outcome test
//
// The process around a Bidder (its stores, listeners, admin endpoints,
// readiness, spend gate and instance lease) is package bidder/server.
//
// # A bid request
//
//  1. Overload: beyond Options.MaxInFlight requests in flight, or shed by
//     Options.Admission (a standing queue, judged by the request's wait
//     against its own budget), answer at once (no-bid nbr 507, or 503)
//     without decoding the body.
//  2. Body: decompressed into a pooled buffer with a hard cap (a gzip bomb
//     stops at MaxBodyBytes+1 bytes), decoded and validated by package rtb
//     (nbr 2 on any problem), the ext members read here (privacy strings,
//     currency rates) in the same pass, into an rtb.Exts: nothing after the
//     decoder scans the body (the admission control's rtb.PeekTMax runs
//     before it).
//  3. Deadline: T - min(TMaxMargin, TMaxMarginRatio x T), T = min(tmax or
//     DefaultTMax, MaxTMax); less than MinBudget is an immediate no-bid
//     (nbr 508). The user and catalog
//     lookups run under a pooled context with that deadline; a lookup past
//     it makes the answer a no-bid (nbr 508), counted as a deadline miss.
//  4. Privacy: regs.coppa, GDPR without TCF v2 consent for purposes 1, 3
//     and 4 (and the vendor, when Options.GDPRVendorID is set), a US
//     privacy opt-out, device.dnt/lmt, a GPP section listed in
//     regs.gpp_sid that says no (or does not parse): no bid (nbr 505). See
//     package privacy.
//  5. Fraud (Options.Fraud, when Redis is configured): site domain, app
//     bundle, device IP, IFA and user against the in-memory block lists;
//     a hit is a no-bid with the list's nbr (7, 4 or 5).
//     User: user.buyeruid, else user.id; unknown: nbr 8.
//  6. Per imp, at most one bid: the campaigns campaign.Set.Match admits,
//     those with products of their group in the user's profile, priced
//     with Campaign.BidMicros and converted to the response currency
//     (Options.Rates or SetRates', rounded down), kept if at least the
//     floor (imp's, or the deal's; money.FromFloat, rounded up to the
//     micro) converted with the request's ext.prebid.currency.rates, then
//     (unless usepbsrates is false) the bidder's rates, rounded up (nbr
//     506 otherwise), and, with Options.Budgets,
//     within its budgets and pacing, counting its unbilled bids' exposure
//     (spend.Budgets.Bid records each bid made; nbr 501 otherwise) and under the
//     user's frequency cap (nbr 502), checked in memory from a
//     spend.CampaignBudget cached per campaign Set; highest price first, one
//     ProductMastersRequest for the winner (viewed ids, recommended ids,
//     the template's quantities), falling back to the next when it has no
//     products (nbr 503), at most 3 tries. Candidates are selected for all
//     imps before any lookup, and catalog.Fetcher asks the store as it
//     allows: with a batch store (the remote client) the distinct lookups
//     of every candidate that may be tried go in one
//     GetProductMastersBatch call under the deadline (with a near cache
//     in front of it, each
//     lookup is first asked of the cache as the tries reach it, and the
//     call, for the lookups not answered yet, made at the first it
//     lacks), a plain ProductStore (the local index) is asked one lookup
//     at a time as the tries reach it; either way a lookup is made once
//     per request. A campaign that is
//     a candidate of an earlier imp has its budgets checked when its imp
//     is reached, after the earlier bids count in its exposure.
//  7. Creative (package creative): an HTML banner sized to the chosen
//     format, Native 1.2 markup, or VAST from the campaign's template
//     (video without one: nbr 504); links through signed /click URLs.
//     On a secure imp (imp.secure=1) every URL is https: rtbd's from
//     SecurePublicURL (none: nbr 509), products with an http image left
//     out, VAST templates with http URLs not served (see
//     campaign.PlainHTTPInVAST).
//  8. Response: id echoed, seatbid per seat, cur; each bid with impid,
//     price, adid, crid, cid, adomain, cat, w/h, dealid, mtype, exp, and
//     nurl/burl = PublicURL/win?t=TOKEN&p=${AUCTION_PRICE} (and /bill),
//     lurl = PublicURL/loss?t=TOKEN&r=${AUCTION_LOSS}&m=${AUCTION_MIN_TO_WIN}
//     (SecurePublicURL on a secure imp),
//     whose signed token (package token) carries campaign, creative,
//     auction, imp, user, price and currency for the spend package.
//
// # Hot path
//
// Per-request state (the BidRequest, the user Profile, the catalog request,
// candidate lists, response structs, buffers) lives in a sync.Pool and is
// reset, not reallocated. Strings of the response (ids, URLs, markup) are
// views of one per-request arena. Nothing from the fasthttp.RequestCtx is
// kept after the handler returns. TestBidAllocations pins the allocations
// of a bid with 15 products.
//
// # Metrics
//
// rtbd_bidder_requests_total{exchange}, _bids_total{exchange} (the
// exchange label's values are Options.Exchanges' names), _nobids_total{nbr},
// _rejected_total{reason}, _stage_seconds{stage=decode|user|catalog|decide|encode}
// (catalog: one observation per catalog call),
// _request_seconds (arrival to answer, shed answers included),
// _queue_seconds, _deadline_misses_total{stage=queue|tmax|user|catalog|decide},
// _catalog_errors_total{kind}, _user_errors_total{kind},
// _shed_total{reason=in_flight|queue}, _admission_queue_shed_ratio,
// _in_flight, _events_total{result}, _events_unrecorded_total{reason},
// _usersyncs_total{result}, _matches_total{result},
// _query_uid_refused_total, _clicks_total{result},
// _notices_unhandled_total; rtbd_notices_total{kind=win|bill,outcome=
// accepted|replay|forged|expired|over_price|bad_price|bad_request|
// unavailable}. Label values are fixed sets.
//
// # Concurrency and ownership
//
// A Bidder is safe for concurrent use. It does not own the stores in
// Options; a bidder/server.Server owns the ones it opened and closes them
// in Shutdown.
package bidder
