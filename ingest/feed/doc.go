// Package feed reads advertisers' product feeds row by row and validates
// every row into a catalogpb.Product, so that ingest never sees a bad value
// and a bad row never stops a feed.
//
// # The feed format
//
// A feed is a file of products, either CSV or JSON Lines, optionally
// gzip-compressed:
//
//   - CSV (name ends in .csv or .csv.gz): RFC 4180. The first non-empty line is
//     a header naming the columns (matched case-insensitively, surrounding
//     spaces ignored, any order; unknown columns are ignored; a known column
//     may appear only once). Fields containing a comma, a double quote or a
//     line break are enclosed in double quotes, and a double quote inside
//     them is written twice (""). A quote anywhere else is an error. Lines
//     end in LF or CRLF (CRLF inside a quoted field is read as LF). Empty
//     lines are skipped. An empty cell means the field is absent.
//   - JSON Lines (name ends in .jsonl, .ndjson, optionally + .gz): one JSON
//     object per line, keys matched exactly (lowercase). Unknown keys are
//     ignored, a key given twice keeps its last value, null or "" means
//     absent, blank lines are skipped. Numbers may be given as JSON numbers
//     or as strings holding the same text ("123").
//
// Compression is detected from the data (gzip magic bytes), so standard
// input works; the format comes from the file name unless Options.Format says
// otherwise. A UTF-8 byte order mark at the start of a file is ignored.
//
// Columns (CSV) or keys (JSON Lines). "Text" means valid UTF-8 with no
// control characters (U+0000-U+001F, U+007F-U+009F); surrounding ASCII white
// space (space, tab, CR, LF, VT, FF) is trimmed from every value before it is
// checked, and a value that is then empty counts as absent.
//
//	name         required  rule
//	id           yes       integer, 1 .. 2^63-1 (the product id)
//	group_id     yes       integer, 1 .. 2^63-1 (the product group / advertiser feed id)
//	title        yes       text, at most 500 bytes
//	description  no        text, at most 2000 bytes; tabs and line breaks allowed
//	image_url    yes       absolute http:// or https:// URL, at most 2048 bytes
//	width        yes       integer pixels, 1 .. 10000
//	height       yes       integer pixels, 1 .. 10000
//	landing_url  yes       absolute http:// or https:// URL, at most 2048 bytes
//	price        yes       decimal amount in currency units, >= 0, at most 6
//	                       decimal places: "19.99", "1980", "0.5"
//	sale_price   no        same rules as price, and <= price
//	currency     yes       ISO 4217 code from rtb/money's list ("JPY", "USD", ...);
//	                       lower case is accepted and stored upper case
//	category     no        text, at most 200 bytes (e.g. a Google product taxonomy path)
//	brand        no        text, at most 200 bytes
//	in_stock     no        boolean, default true: true/false, 1/0, yes/no,
//	                       "in stock"/"out of stock", "in_stock"/"out_of_stock"
//	                       (any case; JSON booleans too)
//	updated_at   no        unix seconds, or RFC 3339 ("2025-01-31T09:00:00+09:00");
//	                       0 .. year 9999, fractions of a second are dropped
//	op           no        "upsert" (default) or "delete" (any case)
//	deleted      no        boolean: true is the same as op=delete
//
// A delete row (op=delete or deleted=true, for delta feeds) needs only id and
// group_id; its other fields are ignored. If op and deleted disagree the row
// is rejected (bad_op). A CSV header without an op or deleted column must
// name every required column; with one, only id and group_id are required in
// the header (a delete-only delta feed).
//
// Prices are converted exactly, without floating point, to micros
// (millionths of the currency unit) by rtb/money's grammar: "19.99" ->
// 19990000. Exponents ("1e5"), thousands separators, a leading "+" or ".",
// more than 6 decimal places, amounts above 999999999999.999999 and text
// longer than 32 bytes are rejected (bad_price); a leading "-" is
// negative_price.
//
// URLs must start with http:// or https:// (any case), have a non-empty host
// (a DNS name, IPv4 or [IPv6] address, optional :port, no user info), and
// contain no spaces, control characters, or any of " < > \ ` (they go into ad
// markup); a % must start a %XX escape. Non-ASCII UTF-8 is allowed.
//
// # Errors
//
// A row that breaks a rule is returned by Reader.Next as a *RowError naming
// the 1-based physical line where the row starts, the field, and a Reason
// from a fixed set (safe as a metric label); the next call continues with the
// next row. Only I/O errors and corrupt compression end a feed: they wrap
// ErrFatal and repeat on every later call. A CSV header that is missing or
// lacks a required column is ErrBadHeader from NewReader.
//
// # Memory
//
// A Reader reuses its buffers: steady-state reading allocates one string per
// upsert row (all the row's text fields share it) and nothing else (gzip
// decompression adds a few allocations per compressed block). A line,
// or a CSV record spanning several lines, longer than Options.MaxLineBytes is
// rejected (line_too_long) and skipped to the next line break without being
// held in memory.
package feed
