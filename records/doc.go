// Package records is rtbd's log-level data: one record per bid, sampled
// no-bid, win, loss, charge, impression, click and product view, with the
// schema every writer and reader shares, the reader of the Parquet
// partitions, the bounded hand-off from the bid path, and the exporter of
// charge records from the bidder's journal.
//
// # Kinds and columns
//
// Kinds (Kind): bid, nobid, win, loss, charge, imp, click, view. Every
// record has the columns of Row: ts (UTC, timestamp in microseconds),
// instance, nonce (the bid's nonce in hex: the join key of a bid and its
// notices), request_id, imp_id, exchange, campaign_id, publisher,
// domain_or_bundle, format (300x250, native, video), country, device_type,
// price_micros (the bid's price CPM, or a notice's clearing price CPM, in
// currency), spend_micros (charge records: what was charged for the
// impression, in the campaign's currency), value_micros (the unshaded
// value: the price when not shaded), currency, products (the product ids
// shown), reason (no-bid and loss reasons), m_micros (a loss notice's m),
// test (the request had test: 1), user_id, group_id and product_id (view
// records; a user id only when the privacy decision allowed
// personalisation; no IP address in any record).
//
// # Delivery
//
// Records other than charges go from the bid path into a bounded buffer
// per sink (Recorder.Put: no allocation, no blocking) and are dropped and
// counted (rtbd_records_dropped_total{kind,sink}) when the sink is slow,
// down or the disk is full. Charge records are written into the bidder's
// journal with the notice that charged (atomically, before the notice is
// answered) and exported from there by ExportCharges, with a cursor per
// sink: they survive kill -9 and outages and are delivered at least once.
// A consumer deduplicates by (nonce, kind): a bidder restarted after a
// crash can deliver a record again.
//
// # Reading
//
// Scan iterates the records of one kind over a time range under a root
// (records.dir), partition by partition; Partitions lists the files. The
// files are plain Parquet under Hive partitions
// kind=K/date=YYYY-MM-DD/hour=HH, readable by any engine that skips
// hidden files (names starting with "." or "_"), see README.md.
package records
