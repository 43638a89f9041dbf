// Package aerostore is rtbd's Aerospike user-profile store
// (github.com/aerospike/aerospike-client-go/v7): Store keeps the
// bidder's user profiles in Aerospike instead of the embedded Pebble
// keyspace (bidder/user/pebblestore). Its options, Connect and the errors of
// refused writes are bidder/internal/aero's, shared with the spend store
// (bidder/spend/aerostore).
//
// # Records
//
//	set "users",  key UID   bin p: user.AppendProfile bytes; TTL Options.UserTTL
//	set "match",  key KEY   bin u: the uid of a match entry (PutMatch); TTL WithMatchTTL
//
// Get reads the "p" bin and decodes it into the caller's Profile;
// RecordView is a read-modify-write guarded by the record generation
// (EXPECT_GEN_EQUAL, or CREATE_ONLY for a new user), retried on a conflict,
// so concurrent views of one user from many bidders are never lost.
// Options.KeyPrefix prefixes every user and match key. Store.Check,
// run by the bidder at start when user.store is aerospike, writes and
// deletes a probe record with the user TTL (and one with the match TTL)
// and fails like the spend store's Check; every write the namespace refuses for
// its TTL wraps aero.ErrTTLRefused, naming nsup-period and the namespace.
//
// # Tests
//
// The tests run the shared user store suite (usertest.Run) and the store's
// own cases against the in-project wire-protocol TEST server
// internal/aerospiketest over real TCP with the real v7 client, and against
// a real cluster when RTBD_AEROSPIKE_HOSTS is set (see
// bidder/internal/aero/aerostoretest).
package aerostore
