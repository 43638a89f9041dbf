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
// Each record's operation is atomic, but a batch is not: Aerospike applies
// a batch record by record (CE has no multi-record transactions), so one
// record can fail while the others are applied. A record answering 14
// KEY_BUSY (a hot key; definitely not applied) is sent again, alone, a few
// times with a doubling backoff inside the same Flush. When a record still
// fails, Flush fails, and the store remembers (in memory, per delta id and
// record) which records of those deltas were applied: the Writer's retry
// of the same deltas adds only to the records that are missing them, so a
// partial failure never counts twice. What stays at-least-once is a record
// whose outcome is unknown (a timeout or dropped connection after the
// request reached the server: in doubt), and a retry by another process
// after a restart: those can over-count spend (erring towards
// underspending the budget), never lose it. Writes are sent with
// MaxRetries 0 so that the client never adds retries of its own.
//
// A namespace with nsup-period 0 (the server's default) refuses every
// write carrying a TTL with 22 FAIL_FORBIDDEN, and the day and freq
// records carry one: SpendStore.Check, run by the bidder at start, writes
// and deletes a probe record with a TTL and fails with ErrTTLRefused,
// naming nsup-period and the namespace; a flush refused so wraps it too.
// Options.KeyPrefix prefixes every spend and freq key.
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
// namespace RTBD_AEROSPIKE_NAMESPACE, default "test"). The spend tests use
// the production set names with a per-run Options.KeyPrefix and delete
// every record they touched when they end (a namespace counts every set it
// has seen against its 4,095, even emptied). Tests against aerotest also
// turn on the real server's rules (nsup-period 0, per-record failures in a
// batch, KEY_BUSY). What passing against aerotest proves and does not
// prove is in aerotest's package comment: the adapter's keys, bins,
// policies, result handling and concurrency, not cluster behaviour
// (migrations, failover, real hot-key contention) or latency.
package aerostore
