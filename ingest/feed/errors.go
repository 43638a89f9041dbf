package feed

import (
	"errors"
	"strconv"
)

// Errors that end a feed (as opposed to a *RowError, which rejects one row).
var (
	// ErrFatal wraps every error that stops a Reader: an I/O error from the
	// underlying reader, or corrupt/truncated gzip data. Once Next returns it,
	// every later call returns the same error. Test with errors.Is; the
	// original error is wrapped too.
	ErrFatal = errors.New("feed: fatal read error")
	// ErrBadHeader: a CSV feed has no header row, or its header has a
	// duplicate known column or lacks a required one. Returned by NewReader.
	ErrBadHeader = errors.New("feed: bad CSV header")
	// ErrUnknownFormat: the format could not be detected from the name (or a
	// format name could not be parsed).
	ErrUnknownFormat = errors.New("feed: unknown format")
)

// Reason says why a row was rejected. The set is fixed (see Reasons), so a
// Reason is safe as a Prometheus label value.
type Reason string

// Rejection reasons.
const (
	ReasonMissingField     Reason = "missing_field"      // a required field is absent or empty
	ReasonBadNumber        Reason = "bad_number"         // id, group_id, width or height is not an integer (or id <= 0)
	ReasonBadURL           Reason = "bad_url"            // image_url / landing_url is not an absolute http(s) URL
	ReasonBadSize          Reason = "bad_size"           // width / height outside 1..10000
	ReasonNegativePrice    Reason = "negative_price"     // price / sale_price below zero
	ReasonBadPrice         Reason = "bad_price"          // price / sale_price not a plain decimal, > 6 decimals, or overflow
	ReasonUnknownCurrency  Reason = "unknown_currency"   // currency not in the ISO 4217 list
	ReasonBadUTF8          Reason = "bad_utf8"           // invalid UTF-8 or a control character in text
	ReasonFieldTooLong     Reason = "field_too_long"     // text or URL over its byte limit
	ReasonWrongColumnCount Reason = "wrong_column_count" // CSV record with more or fewer fields than the header
	ReasonTruncatedLine    Reason = "truncated_line"     // the feed ends inside a quoted CSV field or a JSON object
	ReasonLineTooLong      Reason = "line_too_long"      // line (or CSV record) over Options.MaxLineBytes
	ReasonBadJSON          Reason = "bad_json"           // JSONL line is not one JSON object, or a value has the wrong JSON type
	ReasonBadBool          Reason = "bad_bool"           // in_stock / deleted not a known boolean spelling
	ReasonBadTime          Reason = "bad_time"           // updated_at neither unix seconds nor RFC 3339
	ReasonBadOp            Reason = "bad_op"             // op not upsert/delete, or contradicts deleted
	ReasonSaleAbovePrice   Reason = "sale_above_price"   // sale_price > price
	ReasonBadQuote         Reason = "bad_quote"          // CSV: a quote inside an unquoted field, or text after a closing quote
)

// RowError rejects one row of a feed. The Reader has already moved past the
// row: the next call to Next reads the following row.
type RowError struct {
	// Line is the 1-based physical line number, in the (decompressed) file,
	// where the row starts (the header is line 1 of a CSV file).
	Line int64
	// Field is the column / key at fault ("price"), or "" when the row as a
	// whole is bad (wrong_column_count, line_too_long, bad_json syntax ...).
	Field string
	// Reason is the fixed-set cause, for metrics and summaries.
	Reason Reason
	// Raw is the start of the row's text, cut to Options.MaxRawInReject bytes
	// (at a UTF-8 boundary when possible), for reject logs.
	Raw string
	// Err describes the problem in words (and the offending value, cut).
	Err error
}

// Error formats as `feed: line 12: price: negative_price: value "-1"`.
func (e *RowError) Error() string {
	b := make([]byte, 0, 96)
	b = append(b, "feed: line "...)
	b = strconv.AppendInt(b, e.Line, 10)
	b = append(b, ": "...)
	if e.Field != "" {
		b = append(b, e.Field...)
		b = append(b, ": "...)
	}
	b = append(b, e.Reason...)
	if e.Err != nil {
		b = append(b, ": "...)
		b = append(b, e.Err.Error()...)
	}
	return string(b)
}

// Unwrap returns Err.
func (e *RowError) Unwrap() error { return e.Err }
