// Package aerostore is rtbd's Aerospike adapter
// (github.com/aerospike/aerospike-client-go/v7): a spend.Store (SpendStore)
// for a fleet of bidders, and the bidder's user-profile store (UserStore)
// backed by Aerospike instead of the embedded Pebble keyspace.
//
// # Records
//
//	set "spend", key CAMPAIGN|d|DAY        bins m (micros), i (impressions); TTL Options.DayTTL
//	set "spend", key CAMPAIGN|t            bins m, i: lifetime totals; never expires
//	set "freq",  key CAMPAIGN|WINDOW|USER  bin c (count); TTL until the FreqDelta's expiry
//	set "users", key UID                   bin p: user.AppendProfile bytes; TTL Options.UserTTL
//
// # SpendStore.Flush
//
// One BatchOperate (one round trip per node) with, per distinct record, an
// AddOp per counter bin and a GetOp of it: the adds are aggregated per
// record first, so a record appears once per batch, and each delta's
// totals are derived from the values after the add (as if the flush's
// deltas had been applied one after the other). Read is one BatchGet.
//
// Each record's operation is atomic, but a batch is not: Aerospike 7 has no
// multi-record transactions, and this adapter does not deduplicate delta
// ids. A flush that fails part way, or times out after reaching the server
// (in doubt), has some records applied; the Writer retries the whole batch,
// so those are counted twice. The store is therefore at-least-once: a retry
// can over-count spend (erring towards underspending the budget), never
// lose it. Writes are sent with MaxRetries 0 so that the client never adds
// retries of its own.
//
// # UserStore
//
// Get reads the "p" bin and decodes it into the caller's Profile;
// RecordView is a read-modify-write guarded by the record generation
// (EXPECT_GEN_EQUAL, or CREATE_ONLY for a new user), retried on a conflict,
// so concurrent views of one user from many bidders are never lost.
//
// # Tests
//
// The tests run the shared spend store suite (spendtest.RunStoreSuite) and
// the user store tests against the in-project wire-protocol TEST server
// bidder/aerostore/aerotest over real TCP with the real v7 client, and
// against a real cluster when RTBD_AEROSPIKE_HOSTS is set (host:port,...;
// namespace RTBD_AEROSPIKE_NAMESPACE, default "test"). What passing against
// aerotest proves and does not prove is in aerotest's package comment: the
// adapter's keys, bins, policies, result handling and concurrency, not
// cluster behaviour (migrations, failover, hot keys) or latency.
package aerostore
