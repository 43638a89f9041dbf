// Package journal is the bidder's local journal of accepted notices: a
// notice is written to this bidder's disk, with fsync, before the bidder
// answers it, and stays there until the spend store has it
// (spend.Options.Confirmed); the records left at start are replayed into
// the spend Writer. So a SIGTERM, a kill -9 or a crash while the store is
// unreachable loses no accepted notice: what was acknowledged is on disk,
// and the store applies each notice's key once, so a replay of a notice it
// already has adds nothing.
//
// # Records
//
// A Pebble database (spend.journal_dir, by default bidder.data_dir/journal).
//
//	'n' + Seq (8 bytes big-endian) -> record
//	"h"                            -> highest Seq reserved (8 bytes big-endian)
//
//	'x' + Seq                      -> export record (records.Record, binary)
//	"c/" + exporter                -> the exporter's cursor (8 bytes big-endian)
//
// The export log: AppendExport writes, in the notice's own atomic batch,
// the charge record to export (Options.Exporters names the exporters: the
// records' file and Kafka sinks). It stays, whatever happens to the
// notice's record, until every exporter's cursor (Commit) has passed it,
// so a charge record survives kill -9 and any sink outage and is delivered
// at least once. It is bounded apart from the notices (Options.MaxExport,
// records.charge_max_pending): past it the notice is still written and
// acknowledged, without its export record (counted by the caller), so an
// export outage never turns into refused notices.
//
// Seq grows across restarts: sequence numbers are reserved durably in
// blocks before they are used. A record is version 1:
//
//	1 (version byte)
//	uvarint len + campaign id
//	16 bytes nonce, 1 byte kind (spend.NoticeKind)
//	uvarint len + user id
//	varint micros
//	varint at, varint expires (unix nanoseconds; 0 for the zero time)
//
// A record that does not decode (a damaged file) is logged with its Seq and
// skipped by Replay; it is not deleted.
//
// # Cost and bounds
//
// Append commits with pebble.Sync: concurrent Appends share one fsync in
// Pebble's commit pipeline, so a busy bidder pays about one fsync per group
// of notices, not per notice. Confirm deletes without waiting for an fsync
// (a lost deletion only replays a notice the store already has). The
// journal holds at most Options.MaxPending records (spend.journal_max_pending):
// past it, or when the disk refuses the write, Append fails and the notice
// is refused (the bidder answers 503, the exchange retries), never
// acknowledged and lost. Metrics: rtbd_spend_journal_pending_records,
// rtbd_spend_journal_appends_total{result}, rtbd_spend_journal_corrupt_records_total,
// rtbd_spend_journal_confirm_errors_total.
package journal
