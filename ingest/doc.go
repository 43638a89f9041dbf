// Package ingest turns product feeds into index versions (`rtbd ingest`)
// and writes synthetic feeds (`rtbd gen`). The feed format and its
// validation are package ingest/feed's; the index layout is package
// catalog's: ingest writes through catalog's Builder, SST and version
// functions and never knows the bytes of a key or a value.
//
// # Modes
//
//	rtbd ingest -data DIR [flags] FEED...          full snapshot (the default)
//	rtbd ingest -data DIR -delta [flags] FEED...   upserts and deletes
//	rtbd ingest -data DIR -rollback                back to the previous version
//
// A FEED is a path or - (standard input, with -format csv|jsonl): CSV or
// JSON Lines, gzip-compressed or not (detected from the data). Several feeds
// are read in the order given, as one feed.
//
// A full snapshot builds a new version beside the live one from the feeds
// alone: products absent from the feeds are absent from the new version.
// A delta starts from a copy of the live version (its immutable table files
// hard-linked, never opened for writing) and applies the feeds' rows to it.
// Either way the new version is published by rewriting DIR/CURRENT
// atomically, and the version it replaces becomes DIR/PREVIOUS: serving
// processes switch to the new version as a whole, so readers see all of a
// delta or none of it, and -rollback brings the previous one back. Each
// publish, a rollback included, raises the generation CURRENT carries; the
// version's content hash and, for a delta, the keys it changed are written
// into the version before it is published (see the catalog package's
// "Index versions").
//
// # Delta format
//
// A delta feed has the columns (CSV header) or keys (JSON Lines) of a full
// feed, plus either of:
//
//	op        "upsert" (the default) or "delete"
//	deleted   boolean; true is the same as op=delete
//
// A delete row needs only id and group_id; its other fields are ignored:
//
//	id,group_id,title,image_url,width,height,landing_url,price,currency,op
//	101,1122,Tee v2,https://img.example.com/101.jpg,600,600,https://shop.example.com/101,1980,JPY,upsert
//	102,1122,,,,,,,,delete
//
//	{"id":103,"group_id":1122,"op":"delete"}
//	{"id":104,"group_id":1122,"deleted":true}
//
// An upsert replaces the whole product (there are no partial updates).
// Within one run the last row of a (group_id, id) wins, whatever its kind;
// the summary counts the rows superseded as duplicates. In a full snapshot a
// delete row only cancels earlier rows of the same run.
//
// # The bulk path
//
// One goroutine reads and validates rows (a gzip feed is decompressed in
// another) and encodes each into an in-memory sort buffer of -sort-mem
// bytes (by default 2/5 of -max-memory, split in two halves); a second
// goroutine sorts each full half by (group, id) and spills it to a run file
// in DIR/tmp-VERSION/ while the first fills the other half. The last half
// stays in memory. The runs are then merged (k-way, at most 64 at a time)
// by one goroutine per core, each over its own key range, straight into
// table files of about -table-size (256 MiB) that Pebble ingests without
// rewriting them: no compaction, and memory bounded by -max-memory (Go's
// memory limit is set to 3/4 of it) whatever the feed's size. -method=batch
// writes every row as a batched Set and compacts at the end instead: the
// baseline the bulk path is measured against (`make bench-ingest`).
//
// # Rejects
//
// A row that breaks a rule of package feed is written to the reject file
// (DIR/rejects-VERSION.tsv unless -reject-file says otherwise; created only
// if a row is rejected) as tab-separated file, line, field, reason, detail
// and the start of the raw row (quoted, at most 512 bytes), and counted by
// reason. If more than -max-reject-ratio (default 0.01) of the rows read are
// rejected the ingest aborts and publishes nothing; the message gives the
// counts, the most frequent reasons and the reject file. A full snapshot
// with no product at all also aborts rather than publish an empty catalog.
//
// # Progress and summary
//
// On a terminal a progress bar shows bytes read, bytes/s, rows/s and the
// ETA from the input sizes, then the rows written; otherwise a JSON log line
// every 5 s (-log-interval) gives the phase, rows, rejects, bytes and
// rates. At the end a summary goes to standard output: rows read, accepted,
// rejected by reason, duplicates, products in the new version, elapsed
// time, rows/s and MB/s.
//
// # Exit codes
//
//	0  the new version is published (or -rollback switched versions)
//	1  aborted: too many rejects, an I/O or feed error, another ingest holds
//	   DIR/LOCK, interrupted (SIGINT/SIGTERM); the live version is untouched
//	2  usage or configuration error (bad flag, unknown feed format)
//
// # Concurrency and crashes
//
// An ingest (or rollback) holds DIR/LOCK (flock) for its whole run; a second
// one on the same DIR fails after catalog.LockWait (1 s: a serving process
// sweeping old versions holds the lock for a moment) with an error naming
// the lock. The lock dies with the process, even on kill -9. Until
// DIR/CURRENT is rewritten nothing a reader sees has changed, so a crash at
// any point leaves the live version serving; the next ingest removes what a
// crashed one left (unpublished versions, DIR/tmp-*) before it starts.
//
// Test hook: with the environment variable RTBD_INGEST_CRASHPOINT set to
// parse, sst, before-publish or after-publish, the process kills itself with
// SIGKILL at that point (see CrashPointEnv). Never set it in production.
//
// # Scheduling
//
// Scheduling is the operator's. A nightly full snapshot from cron:
//
//	# /etc/cron.d/rtbd-ingest: every night at 02:30, as user rtbd
//	30 2 * * * rtbd /usr/local/bin/rtbd ingest -data /srv/rtbd/catalog -progress log /srv/feeds/products-*.csv.gz >> /var/log/rtbd/ingest.log 2>&1
//
// or a systemd timer (Persistent=true runs a missed night at boot; a run
// still going holds the lock, so an overlapping start fails fast):
//
//	# /etc/systemd/system/rtbd-ingest.service
//	[Unit]
//	Description=rtbd nightly catalog ingest
//	[Service]
//	Type=oneshot
//	User=rtbd
//	ExecStart=/usr/local/bin/rtbd ingest -data /srv/rtbd/catalog -progress log /srv/feeds/products.csv.gz
//	MemoryMax=1536M
//
//	# /etc/systemd/system/rtbd-ingest.timer
//	[Unit]
//	Description=rtbd nightly catalog ingest
//	[Timer]
//	OnCalendar=*-*-* 02:30:00
//	Persistent=true
//	[Install]
//	WantedBy=timers.target
//
// Enable it with `systemctl enable --now rtbd-ingest.timer`; the exit code
// (1: aborted, see the journal) is what monitoring should alert on.
package ingest
