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
// # Store
//
// Store keeps profiles in an embedded Pebble database (the bidder's data
// directory + "/users"), one key per user: "u" + uid. Get is a point lookup
// that decodes straight out of Pebble's buffer into the caller's Profile
// before the buffer is released, and allocates nothing of its own on a hit or
// a miss (segment strings are interned; Pebble allocates 16 bytes per disk
// table read on a hit). RecordView (the tracking pixel) is a
// read-modify-write under a striped mutex, so concurrent views of one user
// are never lost. SetRecommended (an outside recommender's lists, `rtbd
// users recommend`) replaces a profile's Recommended products under the
// same lock, so it and a concurrent view are both kept.
//
// Expiry: with Options.TTL, every write stamps the value with its expiry
// (a tag byte and the Unix time in nanoseconds before the profile bytes);
// Get and RecordView treat an expired value as absent, and the Get that
// finds it deletes it. Reads never renew a profile; values without a stamp
// never expire. The Redis store (package redisuser) and the Aerospike one
// (package aerostore) keep the same profiles with their stores' own expiry;
// package usertest is the suite all three pass.
//
// Durability: writes use pebble.NoSync with the write-ahead log on. A write
// is atomic and survives a process crash once the WAL has reached the
// operating system (Pebble writes it within milliseconds); a machine crash or
// power loss can lose the last moments of views. That is the right trade for
// a fire-and-forget view pixel. BulkWriter.Close and Store.Close sync.
//
// # Events
//
// The bidder core serves GET /event?pg=..&pid=..&ev=view[&uid=..];
// ParseEventQuery validates its query (the uid, optional there, is the
// bidder's to check: a signed uid or the uid cookie) so that the handler maps
// any error (ErrInvalidEvent) to a 400 in one line, and then calls
// Store.RecordView. ParseEvent is the same with uid required and checked.
//
// # Match table
//
// PutMatch stores an exchange's own user id (MatchKey: "exchange:xuid") ->
// rtbd's uid, living Options.MatchTTL; GetMatched resolves such a key (or a
// fallback uid) and reads that uid's profile, for a bid request of that
// exchange without user.buyeruid. Entries are Pebble keys "m" + key beside
// the profiles' "u" + uid.
package user
