// Package user holds the user profiles that dynamic retargeting bids on:
// per product group, the products a user viewed (most recent first) and the
// products recommended to them, plus the user's audience segments.
//
// # Profiles
//
// A Profile is a plain value made to be reused: Reset and DecodeProfile keep
// every slice's capacity, so a bidder that keeps one Profile per request
// (from a sync.Pool) decodes profiles without allocating once the capacities
// have grown. Groups are a slice, not a map, for the same reason. A Profile is
// not safe for concurrent use.
//
// # Encoding
//
// AppendProfile / DecodeProfile use a compact binary form (format 1):
//
//	byte      format (1)
//	uvarint   number of viewed groups, then per group:
//	          uvarint group id, uvarint count, count x uvarint product id
//	uvarint   number of recommended groups, the same way
//	uvarint   number of segments, then per segment: uvarint length, bytes
//
// Group and product ids are > 0; segments are 1..MaxSegmentLen bytes of
// UTF-8 without control characters. DecodeProfile checks all of it and
// rejects anything else, including trailing bytes, with ErrCorrupt; it never
// panics on any input.
//
// # Stores
//
// The stores that keep profiles are packages of their own: pebblestore
// (embedded, the default), redisstore and aerostore (shared by a fleet).
// They share this package's checks (CheckPut, CheckRecommended,
// ConflictBackoff, ErrClosed) and its rules for a view (Profile.RecordView)
// and an outside recommender's lists (Profile.SetRecommended, written by
// `rtbd users recommend`, package recommended), and pass one suite,
// package usertest.
//
// # Events
//
// The bidder core serves GET /event?pg=..&pid=..&ev=view[&uid=..];
// ParseEventQuery validates its query (the uid, optional there, is the
// bidder's to check: a signed uid or the uid cookie) so that the handler maps
// any error (ErrInvalidEvent) to a 400 in one line, and then calls
// the store's RecordView. ParseEvent is the same with uid required and checked.
//
// # Match table
//
// MatchKey builds the key of an exchange's own user id ("exchange:xuid")
// that every store's PutMatch maps to rtbd's uid, for a bid request of that
// exchange without user.buyeruid.
package user
