// Package shading prices bids in first-price auctions: per segment of the
// bid landscape it estimates the probability of winning at each price
// from the bidder's own bids, wins and losses and the minimum bids to win
// the exchanges report, and picks the price in [floor, value] that
// maximises the expected surplus (value - price) x P(win | price).
//
// # Segments
//
// A segment is exchange x publisher x format and size (Segment), 32 bits so
// a notice token carries it; its coarser levels (exchange x publisher,
// exchange) are the id with fields zeroed. A bid is counted at every level;
// Price uses the finest level whose estimate rests on enough observations
// (Options.MinObservations), so a new publisher or size is priced from its
// publisher's or exchange's estimate until it has its own. The table holds
// at most Options.MaxSegments (the least recently bid on go first).
//
// # Observations
//
// Counts per (segment, price bucket: geometric, 8% wide), never a join of
// a bid with its notices: bids are counted where they are made (Bid), wins
// and losses where their notice lands (Observe, from the bid's price and
// issue time, which its token carries). Counts go into time slots one
// notice wait wide and are settled into the estimate's counts only once
// the wait is over, so on an exchange without loss notices a bid with no
// win by then is a loss (censored: price < competition) and one with a win
// a win (price >= competition). A minimum bid to win (m, the price that
// would have tied) is uncensored: it goes straight into a histogram.
// Settled counts decay with Options.HalfLife, so a moved landscape is
// learned again.
//
// # A fleet
//
// With Options.Fleet, every count that settles is also kept as pending,
// and Sync (a background loop, every few seconds) adds the pending counts
// to a Store (the spend store) in the time slot of now (FleetOptions.Slot
// wide), then reads the fleet's counts of every segment held over
// FleetOptions.Horizon and sets the segment's settled counts to the
// fleet's, each slot weighted by exp(-age/tau) of its middle (decay on
// read), plus the pending counts: the fleet's own counts included once.
// A slot is read whole once final (a slot has ended after it) and kept
// as a decayed sum, so a Sync reads two keys per segment (three in the
// first Sync of a slot). Load, at start, reads the segments of the
// slots' indexes coarsest level first and publishes each level's
// estimates at once. The store's keys expire a horizon after their slot.
// FleetSnapshot (the admin view) shows what the Syncs and Loads did,
// and each segment's own counts beside the fleet's (SegmentFleet):
// bookkeeping done by Sync and Load, never by the bid path.
//
// # The estimate
//
// With enough m, P(win | p) is their empirical distribution function
// (linear within a bucket); otherwise the per-bucket win rates, made
// non-decreasing in price by pool-adjacent-violators (weighted by trials),
// interpolated between bucket centres. Refresh rebuilds each segment's
// curve when its counts changed and publishes it with an atomic pointer.
//
// # The price
//
// Price walks the buckets between the floor and the value: on each the
// curve is linear and the expected surplus a parabola, whose ends and top
// are the candidates. A share Options.Explore of shaded bids is moved by a
// random factor within exp(+-Options.ExploreWidth); a segment without data
// at any level bids the value, or (Options.ExploreCold of the time) a
// random price between Options.ColdLow x value and the value. The price is
// never above the value nor below the floor.
//
// # Cost
//
// Price is a few atomic loads and map lookups under read locks and one
// pass over the buckets between floor and value; Bid and Observe take one
// short lock per level. None allocates once its segments are held
// (TestAllocations). A nil *Shader prices every bid at its value.
package shading
