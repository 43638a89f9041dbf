// Package pebblestore keeps user profiles (package user) in an embedded
// Pebble database.
//
// Store keeps profiles in an embedded Pebble database (the bidder's data
// directory + "/users"), one key per user: "u" + uid. Get is a point lookup
// that decodes straight out of Pebble's buffer into the caller's Profile
// before the buffer is released, and allocates nothing of its own on a hit or
// a miss (segment strings are interned; Pebble allocates 16 bytes per disk
// table read on a hit). RecordView (the tracking pixel) is a
// read-modify-write under a striped mutex, so concurrent views of one user
// are never lost.
//
// Expiry: with Options.TTL, every write stamps the value with its expiry
// (a tag byte and the Unix time in nanoseconds before the profile bytes);
// Get and RecordView treat an expired value as absent, and the Get that
// finds it deletes it. Reads never renew a profile; values without a stamp
// never expire. The Redis store (package redisstore) and the Aerospike one
// (package aerostore) keep the same profiles with their stores' own expiry;
// package usertest is the suite all three pass.
//
// Durability: writes use pebble.NoSync with the write-ahead log on. A write
// is atomic and survives a process crash once the WAL has reached the
// operating system (Pebble writes it within milliseconds); a machine crash or
// power loss can lose the last moments of views. That is the right trade for
// a fire-and-forget view pixel. BulkWriter.Close and Store.Close sync.
//
// # Match table
//
// PutMatch stores an exchange's own user id (user.MatchKey: "exchange:xuid") ->
// rtbd's uid, living Options.MatchTTL; GetMatched resolves such a key (or a
// fallback uid) and reads that uid's profile, for a bid request of that
// exchange without user.buyeruid. Entries are Pebble keys "m" + key beside
// the profiles' "u" + uid.
package pebblestore
