// Package spend keeps the money path's counters: per-campaign spend
// (micros of the campaign's currency) and impressions per day and in total,
// and per-user frequency counts, buffered in memory on each bidder and
// flushed in batches to a shared Store (talk 2's message buffer writer), and
// the budget, pacing and frequency-cap decisions the bid path makes from
// them without any remote round trip.
//
// # Pieces
//
//   - Store (declared here, the consumer): Flush adds deltas atomically and
//     returns the fleet-wide totals after the add; Read returns totals.
//     Implementations: pebblestore (embedded default, one bidder),
//     redisstore (fleet), and bidder/aerostore (fleet, Aerospike). All pass
//     spendtest.RunStoreSuite.
//   - Writer: AddNotice(campaign, notice) per accepted notice, keyed by its
//     bid's nonce and what it counts (Add(campaign, user, micros, at) for
//     callers without a key draws one), in memory (a per-campaign set of
//     lock shards chosen by user hash, plus per-campaign atomics; no
//     allocation for a user already seen). A
//     campaign is flushed when its unflushed part passes a threshold
//     (ThresholdImps, ThresholdMicros, or BudgetFraction of its budget) or
//     when the FlushInterval timer fires; at most Flushers Flush calls run
//     at once, fed by a buffered channel, each carrying up to MaxBatch
//     campaigns (one store round trip). Each campaign's notices are sealed
//     into one batch (a delta per day, carrying its notices, Origin and
//     Seq); a campaign has at most one batch in the store's hands at a
//     time. A failed flush keeps its batch unchanged (same ids, same
//     content) and retries it with exponential backoff while new notices
//     accumulate beside it; Close flushes everything. Once the store has a
//     batch, Options.Confirmed gets its notices' journal Seq values.
//   - Budgets: Check (total budget, daily budget in the campaign's time
//     zone, even or ASAP pacing) and FreqOK, from the last known fleet
//     totals plus this bidder's unconfirmed counts. Status for the admin
//     endpoint.
//
// # What a bidder knows, and how stale
//
// Spend: each flush returns the fleet totals of the flushed campaigns, and a
// refresh loop reads (Store.Read) the totals of every other active campaign
// once per FlushInterval. So a bidder's view of the fleet's spend is at most
// about one FlushInterval old (plus one store round trip), and its own spend
// is always exact. A campaign whose budget is reached stops bidding on every
// bidder within one FlushInterval.
//
// Overshoot of a budget, with B bidders each spending at rate r
// (micros/s) on a campaign and flush interval T: a bidder stops as soon as
// fleet (as last learned) + own >= budget, so the others' spend it has not
// learned yet is at most what they spent since its last refresh, at most
// about (B-1) x r x T, and less when the BudgetFraction threshold makes the
// others flush (and so learn and publish) every budget x BudgetFraction of
// spend: then each bidder's unpublished spend is at most budget x
// BudgetFraction + r x (one flush round trip), and the overshoot at most
// about B x budget x BudgetFraction plus the round trips. TestFleet
// measures 1-2% with 3 bidders and BudgetFraction 0.01 (lower it for a
// tighter bound at the cost of more flushes). Wins for bids made before the
// stop still arrive afterwards and are charged: that part depends on the
// SSP's auction latency, not on this package.
//
// Frequency counts: this bidder's own are exact; the fleet's count of a user
// is learned when this bidder flushes that user (no remote read on the bid
// path). See Budgets for the bound: at most FreqCap per bidder per window.
//
// # Charge once
//
// A notice's idempotency key is its Nonce (the bid's, from its token) and
// its Kind. Every store applies a key at most once, fleet-wide, atomically
// with the counters' increment (Delta.Notices; the package comments of
// redisstore, pebblestore and aerostore say how), and returns how many of
// a delta's notices it had already applied (Total.Duplicates, counted in
// rtbd_spend_duplicate_notices_total). So the same notice charges once
// whether it is retried by this bidder's flushes after an error or an
// unknown outcome (a lost reply), replayed to another bidder, or replayed
// by this bidder's journal after a restart. The totals a flush returns are
// the store's, so a duplicate never inflates this bidder's view either.
// A key lives until the notice's Expires (the token's expiry plus a clock
// skew allowance, at least MinNoticeTTL after AddNotice); a replay after it
// is refused by the token's own expiry. Add's notices get a key of the
// Writer's own: their retries are charged once, a replay is not recognised.
//
// # Crashes and shutdown
//
// Close (on SIGTERM) flushes everything before returning, retrying until its
// context ends; if the store stays unreachable Close says how much was not
// confirmed (ErrUnflushed). A crash (SIGKILL, OOM) loses from memory what
// was not yet confirmed by the store: with a healthy store at most one
// FlushInterval of this bidder's notices (less for campaigns that flush by
// threshold), plus the flushes in flight; during a store outage the whole
// outage. What survives it is the caller's: a bidder that journals its
// notices before acknowledging them (Notice.Seq, Options.Confirmed) replays
// them at start, and the notice keys make that replay charge exactly what
// the crash left out, even for a flush that was in flight. Without a
// journal the store under-counts by what was lost, so the fleet may
// overspend by that much: at most r x (FlushInterval + FlushTimeout) per
// crashed bidder and campaign with a healthy store. Nothing is counted
// twice.
//
// # Frequency windows
//
// Windows are fixed, FreqPeriod long, aligned to the unix epoch (a 24h cap
// resets at midnight UTC). Across a window boundary a user can see up to
// 2 x FreqCap impressions within one period.
//
// # Memory
//
// A frequency entry (about 150 bytes with the user id) is kept per (user,
// campaign, window) served by this bidder until the window ends and its
// counts are confirmed; a sweep drops expired ones every SweepInterval.
package spend
