// Package aerostore is rtbd's Aerospike spend store
// (github.com/aerospike/aerospike-client-go/v7): a spend.Store (Store)
// for a fleet of bidders. Its options, Connect and the errors of refused
// writes are bidder/internal/aero's, shared with the user store
// (bidder/user/aerostore).
//
// # Records
//
//	set "spend",  key CAMPAIGN|d|DAY        bins m (micros), i (impressions), a guard bin per
//	                                         origin; TTL aero.Options.DayTTL
//	set "spend",  key CAMPAIGN|t            bins m, i, guards: lifetime totals; never expires
//	set "spend",  key CAMPAIGN|o            a bin per outcome counter (spend.CountName: b, w,
//	                                         l102, ...): lifetime; never expires
//	set "freq",   key CAMPAIGN|WINDOW|USER  bin c (count), guards; TTL until the FreqDelta's expiry
//	set "notice", key CAMPAIGN|NOTICEKEY    bins o (origin), sd, st, sf (stamps); TTL until the
//	                                         Notice's Expires
//
// Bid shading's counts (shading.Store) are records of the spend set too:
// see shading.go.
//
// NOTICEKEY is spend.NoticeKey (nonce and kind). The origin is the
// Delta.Origin, the sealing Writer's spend.Options.InstanceID; its guard
// bin in a counter record is "g" and 12 hex digits of SHA-256(origin) (13
// bytes), a blob of the largest GuardLen batch sequences (Delta.Seq) of
// that origin applied to the record, ascending.
//
// # Store.Flush: each notice charged once
//
// Aerospike CE applies one record atomically and nothing more: a batch is
// applied record by record (one record can fail while the others are
// applied), and multi-record transactions need a strong-consistency
// namespace, which CE lacks. So a flush cannot make a notice's key and its
// counters' increment one write; instead each notice has a record of its
// own, created once, and each counter record remembers which batches of
// each origin it has applied. The deltas of one origin are flushed in five
// steps, each one BatchOperate (one round trip per node):
//
//  1. Create every notice record, create-only, with o = the origin and,
//     for each counter record the notice counts in (its day, the total,
//     its user's window), the stamp S: the batch sequence of its campaign
//     in this flush. Read the ones that already exist (another bidder's,
//     or this origin's from an earlier attempt or an earlier run).
//  2. Read every counter record touched: values, generation, this
//     origin's guard G.
//  3. A notice whose o is another origin is a duplicate: that origin
//     charges it. For one of this origin, in each counter record r: it is
//     already in r when applied_r(stamp), that is the stamp is in G_r or
//     older than the oldest entry of a full G_r; otherwise it counts now,
//     and a stamp other than S (left by an earlier batch that never
//     reached r: a crash, then the journal's replay) is first rewritten to
//     S, with a write that expects the notice record's generation.
//  4. Write each counter record r that has something to add: add the
//     counted notices' micros, impressions or count, and insert S in G_r,
//     in one write that expects the generation read (create-only for a
//     record that did not exist). A generation conflict (another origin's
//     flush) reads r again and retries; the add is unchanged, because only
//     this origin writes its guard and it flushes a campaign from one batch
//     at a time.
//  5. The totals are the values after the writes; a delta's Duplicates are
//     its notices that counted nowhere.
//
// Any record failing in steps 1 to 3 fails the flush before a counter is
// touched; a record failing in step 4 fails it with the others applied.
// Records answering 14 KEY_BUSY (definitely not applied) are sent again,
// alone, a few times with a doubling backoff inside the Flush. The Writer
// retries a failed flush unchanged (same notices, same Seq). Writes are
// sent with MaxRetries 0 so that the client adds no retries of its own.
//
// Why no notice is counted twice or lost. Invariant: for every notice n of
// origin O and every counter record r it counts in, n's charge is in r if
// and only if applied_r(stamp_r(n)) with O's guard. Step 1 keeps it: a new
// notice record is stamped S, and S is in no guard yet, since a retry of
// the same batch finds its notices existing (they were all created before
// any of its counters were written). Step 3 keeps it: it rewrites only a
// stamp that is not applied, to S, which is not applied to r either
// (applied_r only grows; had this batch reached r before, every notice it
// counted there was stamped S then). Step 4 adds exactly the notices
// stamped S that were not applied, and makes S applied, in one atomic
// record write. So a notice is added to r only while it is not in r, and
// the write that adds it marks it in. An attempt whose outcome is unknown
// changes nothing or exactly one such step for that record: a retry then
// finds the notice records (create-only fails, they are read), the stamps
// and the guards as they are and adds only what is missing. A crash
// between the steps leaves notices stamped with a batch that is not
// applied to some records: the restarted bidder's journal replays them in
// a later batch (larger S: Writer seals S = max(previous + 1, unix nanos)),
// step 3 restamps them and step 4 counts them in those records only, even
// when the bidder has flushed newer batches of the campaign before the
// replay. A replay to another bidder finds o = the first origin and adds
// nothing.
//
// Not covered: a notice whose only copy is on a bidder that never comes
// back (its journal lost), because a replay to another bidder is a
// duplicate there; a journal replay later than GuardLen batches of the
// same origin applied to the same record after the crash (the stamp then
// looks applied: an under-count); a clock that goes back by more than a
// restart takes (S would not grow); a replay after the notice record's TTL
// (the Notice's Expires) by a restarted bidder (counted again); two
// processes with one InstanceID at once (Flush fails when it sees its
// guard changed under it, but a double count is possible); a campaign
// whose time zone changes between a crash and the replay (the replay's day
// record is another one). Deltas without notices (not a Writer's) are
// added as they are, aggregated per record: after a partial failure their
// retry adds the applied records again (at least once). A Writer's outcome
// counters (spend.Delta.Counts) travel in such deltas, so a flush retried
// after a partial failure or an unknown outcome may count them twice: they
// are statistics (win rate, losses), never money.
//
// A namespace with nsup-period 0 (the server's default) refuses every
// write carrying a TTL with 22 FAIL_FORBIDDEN, and the day, freq and
// notice records carry one: Store.Check, run by the bidder at start,
// writes and deletes a probe record with a TTL and fails with
// aero.ErrTTLRefused, naming nsup-period and the namespace; a flush refused so
// wraps it too. aero.Options.KeyPrefix prefixes every spend, freq and notice
// key. A write refused with 4 PARAMETER_ERROR names its causes for a
// well-formed write: the namespace already holds its 4,095 sets without
// this one, or the TTL is above its max-ttl.
//
// # Tests
//
// The tests run the shared spend store suite (spendtest.RunStoreSuite)
// against the in-project wire-protocol TEST server
// internal/aerospiketest over real TCP with the real v7 client, and
// against a real cluster when RTBD_AEROSPIKE_HOSTS is set (host:port,...;
// namespace RTBD_AEROSPIKE_NAMESPACE, default "test"). The tests use the production set names with a per-run aero.Options.KeyPrefix and delete
// every record they touched when they end (a namespace counts every set it
// has seen against its 4,095, even emptied). Tests against aerospiketest also
// turn on the real server's rules (nsup-period 0, the set limit,
// per-record failures in a batch, KEY_BUSY) and lose the replies of applied requests
// (aerospiketest.Fault.DropReply). What passing against aerospiketest proves and does not
// prove is in aerospiketest's package comment: the adapter's keys, bins,
// policies, result handling and concurrency, not cluster behaviour
// (migrations, failover, real hot-key contention) or latency.
package aerostore
