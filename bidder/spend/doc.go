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
//     redisstore (fleet), and aerostore (fleet, Aerospike). All pass
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
//   - Outcome counters (Writer.Count, Counts; bids counted by Budgets.Bid):
//     per campaign bids, wins and losses by OpenRTB loss reason, atomics in
//     memory flushed with the campaign's spend as a delta without notices
//     (Delta.Counts), which the store adds to the campaign's lifetime
//     counters: no store write per count.
//   - Budgets: Check (total budget, daily budget in the campaign's time
//     zone; even pacing's multiplier, PaceMultiplier, lowers the price
//     instead of skipping auctions) and FreqOK, from the last known fleet
//     totals plus this bidder's unconfirmed counts plus the exposure of its
//     unbilled bids (Bid records each bid made). With WaitForTotals a
//     budgeted campaign is paused until its fleet totals are read
//     (ReadTotals at start, then a background loop). Status for the admin
//     endpoint. BudgetCache gives those checks each campaign's
//     CampaignBudget, built once per campaign Set, and registers each new
//     Set's campaigns with the Writer.
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
// stop still arrive afterwards and are charged: exposure (below) keeps
// each bidder's own bids within the budget, for notices that arrive within
// ExposureWindow.
//
// Frequency counts: this bidder's own are exact; the fleet's count of a user
// is learned when this bidder flushes that user (no remote read on the bid
// path). See Budgets for the bound: at most FreqCap per bidder per window.
//
// # Startup
//
// A restarted bidder knows nothing of the fleet's spend. With
// BudgetOptions.WaitForTotals (a bidder sets it), Check answers
// ReasonUnread for a campaign with a daily or total budget until this
// bidder has its fleet totals (a Store.Read or a flush has returned them):
// the bidder registers its campaigns and calls ReadTotals before serving,
// and a loop reads the rest in the background, right after Check first sees
// a new budgeted campaign (a reload), then with backoff (RetryMin doubling
// up to FlushInterval) while the store fails. Campaigns without a budget
// are never paused. So a spent budget is never bid on again after a
// restart; with the store unreachable, budgeted campaigns do not bid at all
// until it answers (rtbd_spend_unread_campaigns counts them), which is the
// price of not overspending.
//
// # Exposure of unbilled bids
//
// Billing notices arrive seconds to minutes after the bid, so the spend a
// bidder knows lags its bids. Check adds to the spend, per campaign, this
// bidder's exposure: its outstanding bids (bids recorded by Bid within
// ExposureWindow, default 5m, minus the bills it accepted within it, at
// least 0) times the campaign's recent win rate (bills in the window per
// bid of the window older than the current bucket, with 10 won pseudo-bids
// as a prior, so 1 until the campaign has history, bounded to
// [WinRateFloor, 1], default floor 0.01) times the average charge of those
// bids (the bid price per impression, which the clearing price cannot
// exceed). Memory: 16 time buckets of counters per campaign (about 520
// bytes), whatever the bid rate; Bid, Check and the bill's count in Add
// are atomics, no allocation, no lock.
//
// What it bounds: a bidder stops once billed + expected unbilled spend
// reaches the budget, so the bills of the bids it makes while notices are
// in flight are within the budget (TestExposureDelayedNotices: 200 bids
// and exactly the budget billed, where without exposure 219 bids overshoot
// it by the 19 in flight). What it does not: bills arriving after
// ExposureWindow (their bids have left it: raise the window for SSPs that
// bill late); other bidders' outstanding bids (each counts its own, so the
// fleet's overshoot bound above still applies to what they have not
// flushed); a win rate that jumps up suddenly (it is measured over the
// window); and it holds back budget while lost bids stay in the window:
// a lost bid is indistinguishable from a late bill until it leaves the
// window, so near the end of a budget a campaign bids in bursts as its
// lost bids age out, and spends its budget later rather than overspending.
// Counts racing with a bucket's reuse may be lost (a few per bucket).
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
// confirmed (ErrUnflushed). The Writer's buffers are in memory only; the
// bidder's local journal (package journal) is what keeps accepted notices:
// each is fsynced there before it is acknowledged, and dropped once
// Options.Confirmed says the store has it. After a SIGTERM with the store
// unreachable, or a crash (SIGKILL, OOM) at any time, the bidder replays
// the journal into its new Writer at start, so nothing accepted is lost,
// however long the outage. Until the replay is flushed the fleet does not
// see that spend (with a healthy store, at most about
// r x (FlushInterval + FlushTimeout) per crashed bidder and campaign), so
// the fleet may overspend by that much meanwhile.
// Nothing is counted twice: the journal's replay carries the notices'
// keys, and the store charges each key once (Charge once, above), even for
// a flush that was in flight at the crash.
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
