package feed

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// Defaults for Options.
const (
	DefaultMaxLineBytes   = 64 << 10
	DefaultMaxRawInReject = 512
)

const bufSize = 64 << 10

// Options tune a Reader. The zero value is ready to use.
type Options struct {
	// Format overrides detection from the name. Zero (FormatAuto): detect
	// with DetectFormat.
	Format Format
	// MaxLineBytes is the longest line (or CSV record spanning lines, line
	// breaks included) accepted, in bytes, without its line break. Longer
	// ones are rejected as line_too_long and skipped in bounded memory.
	// Zero: DefaultMaxLineBytes (64 KiB).
	MaxLineBytes int
	// MaxRawInReject caps RowError.Raw, in bytes. Zero: 512; negative: Raw
	// is always empty.
	MaxRawInReject int
}

// Row is one product read from a feed. Pass the same Row to every call of
// Next: it is overwritten (Product is reset) on each call. A Row holds a
// proto message, so pass it by pointer and do not copy it.
type Row struct {
	// Product is the validated product. For a delete row only ProductId and
	// ProductGroupId are set; after a *RowError its contents are unspecified.
	// Its strings are immutable and not reused by later rows, so they may be
	// kept (all of a row's text shares one allocation: keeping one string
	// keeps the row's ~300 bytes). Copy the fields, or
	// proto.Clone(&row.Product), to keep the product itself.
	Product catalogpb.Product
	// Delete is true for a delete row (op=delete or deleted=true).
	Delete bool
	// Line is the 1-based physical line where the row starts.
	Line int64
}

// Reader reads a feed row by row. It is not safe for concurrent use.
type Reader struct {
	opts   Options
	format Format

	raw *bufio.Reader // over the source: gzip sniffing, and lines when uncompressed
	br  *bufio.Reader // lines: raw or a bufio over the gzip stream

	line int64 // physical lines consumed
	eof  bool  // the stream has ended
	err  error // sticky fatal error

	rec  []byte // the current record's text (lines joined by '\n')
	csv  csvSplitter
	cols []int8 // CSV column -> field id, -1 for unknown columns
	js   jsonParser
	vals [numFields]value
	sbuf []byte
	cur  string // the last currency code seen (canonical, from the table)
	fe   fieldError
}

// NewReader returns a Reader of the feed r. name is the file name (used to
// detect the format unless opts.Format is set; "-" for standard input needs
// opts.Format). gzip data is detected by its magic bytes. For CSV the header
// is read here: a missing or bad header is ErrBadHeader, an I/O or gzip error
// wraps ErrFatal. The Reader does not close r.
func NewReader(r io.Reader, name string, opts Options) (*Reader, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxRawInReject == 0 {
		opts.MaxRawInReject = DefaultMaxRawInReject
	}
	format := opts.Format
	if format == FormatAuto {
		f, err := DetectFormat(name)
		if err != nil {
			return nil, err
		}
		format = f
	}
	if format != CSV && format != JSONL {
		return nil, fmt.Errorf("%w: %v", ErrUnknownFormat, format)
	}
	fr := &Reader{opts: opts, format: format}
	fr.raw = bufio.NewReaderSize(r, bufSize)
	fr.br = fr.raw
	magic, err := fr.raw.Peek(2)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%w: %w", ErrFatal, err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(fr.raw)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %w", ErrFatal, err)
		}
		fr.br = bufio.NewReaderSize(gz, bufSize)
	}
	if format == CSV {
		if err := fr.readHeader(); err != nil {
			return nil, err
		}
	}
	return fr, nil
}

// Format returns the feed's format.
func (r *Reader) Format() Format { return r.format }

// Next reads the next row into row. It returns nil for a valid row, a
// *RowError for a rejected one (call Next again for the following row),
// io.EOF at the end of the feed, or an error wrapping ErrFatal when the feed
// cannot be read further (repeated on every later call).
func (r *Reader) Next(row *Row) error {
	if r.err != nil {
		return r.err
	}
	if r.format == CSV {
		return r.nextCSV(row)
	}
	return r.nextJSONL(row)
}

// lineStatus is the outcome of readLine.
type lineStatus int

const (
	lineOK      lineStatus = iota
	lineEOF                // no more data
	lineTooLong            // r.rec went over MaxLineBytes; the rest of the line was skipped
)

// readLine appends the next physical line to r.rec, without its "\n" or
// "\r\n". terminated says whether a '\n' ended it. It holds at most
// MaxLineBytes+2 bytes of a record in r.rec, whatever the line's length.
func (r *Reader) readLine() (st lineStatus, terminated bool, err error) {
	if r.eof {
		return lineEOF, false, nil
	}
	limit := r.opts.MaxLineBytes
	started := false
	for {
		frag, err := r.br.ReadSlice('\n')
		if len(frag) > 0 && !started {
			started = true
			r.line++
		}
		switch err {
		case nil, bufio.ErrBufferFull, io.EOF:
		default:
			return lineOK, false, r.fatal(err)
		}
		if err == io.EOF {
			r.eof = true
			if !started {
				return lineEOF, false, nil
			}
		}
		if len(r.rec)+len(frag) > limit+2 {
			// Keep a prefix for Raw, drop the rest of the line.
			room := limit + 2 - len(r.rec)
			if room > 0 {
				r.rec = append(r.rec, frag[:room]...)
			}
			if err == bufio.ErrBufferFull {
				if err := r.discardLine(); err != nil {
					return lineOK, false, err
				}
			}
			return lineTooLong, !r.eof, nil
		}
		r.rec = append(r.rec, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		n := len(r.rec)
		if err == nil {
			n-- // '\n'
			terminated = true
		}
		if n > 0 && r.rec[n-1] == '\r' {
			n--
		}
		r.rec = r.rec[:n]
		if n > limit {
			return lineTooLong, terminated, nil
		}
		return lineOK, terminated, nil
	}
}

// discardLine skips input up to and including the next '\n'.
func (r *Reader) discardLine() error {
	for {
		_, err := r.br.ReadSlice('\n')
		switch err {
		case nil:
			return nil
		case bufio.ErrBufferFull:
		case io.EOF:
			r.eof = true
			return nil
		default:
			return r.fatal(err)
		}
	}
}

func (r *Reader) fatal(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	r.err = fmt.Errorf("%w: after line %d: %w", ErrFatal, r.line, err)
	return r.err
}

// stripBOM removes a UTF-8 byte order mark from the start of the first line.
func (r *Reader) stripBOM(start int64) {
	if start == 1 && bytes.HasPrefix(r.rec, []byte("\xef\xbb\xbf")) {
		r.rec = append(r.rec[:0], r.rec[3:]...)
	}
}

// readRecord reads one CSV record into r.csv.fields, skipping empty lines.
// It returns the record's first line, and a non-nil *RowError for a record
// that could not be split, or lineEOF.
func (r *Reader) readRecord() (start int64, st lineStatus, reason Reason, err error) {
	for {
		r.rec = r.rec[:0]
		st, terminated, err := r.readLine()
		if err != nil || st == lineEOF {
			return 0, st, "", err
		}
		start = r.line
		if st == lineTooLong {
			return start, st, ReasonLineTooLong, nil
		}
		r.stripBOM(start)
		if len(r.rec) == 0 {
			continue
		}
		r.csv.reset()
		for {
			switch r.csv.split(r.rec) {
			case splitDone:
				return start, lineOK, "", nil
			case splitBadQuote:
				return start, lineOK, ReasonBadQuote, nil
			}
			if !terminated {
				return start, lineOK, ReasonTruncatedLine, nil
			}
			r.rec = append(r.rec, '\n')
			st, terminated, err = r.readLine()
			switch {
			case err != nil:
				return start, lineOK, "", err
			case st == lineEOF:
				r.rec = r.rec[:len(r.rec)-1]
				return start, lineOK, ReasonTruncatedLine, nil
			case st == lineTooLong:
				return start, lineOK, ReasonLineTooLong, nil
			}
		}
	}
}

func (r *Reader) readHeader() error {
	start, st, reason, err := r.readRecord()
	switch {
	case err != nil:
		return err
	case st == lineEOF:
		return fmt.Errorf("%w: empty feed, the header row is required", ErrBadHeader)
	case reason != "":
		return fmt.Errorf("%w: line %d: %s", ErrBadHeader, start, reason)
	}
	cols, err := mapHeader(r.csv.fields, r.cols)
	if err != nil {
		return err
	}
	r.cols = cols
	return nil
}

func (r *Reader) nextCSV(row *Row) error {
	start, st, reason, err := r.readRecord()
	if err != nil {
		return err
	}
	if st == lineEOF {
		return io.EOF
	}
	row.Line = start
	if reason != "" {
		return r.reject(row, -1, reason, messageFor(reason), nil)
	}
	if len(r.csv.fields) != len(r.cols) {
		return r.reject(row, -1, ReasonWrongColumnCount,
			"got "+strconv.Itoa(len(r.csv.fields))+" fields, the header has "+strconv.Itoa(len(r.cols)), nil)
	}
	r.vals = [numFields]value{}
	for i, f := range r.csv.fields {
		if id := r.cols[i]; id >= 0 {
			r.vals[id] = value{b: f, k: kString}
		}
	}
	return r.finish(row)
}

func (r *Reader) nextJSONL(row *Row) error {
	for {
		r.rec = r.rec[:0]
		st, terminated, err := r.readLine()
		if err != nil {
			return err
		}
		if st == lineEOF {
			return io.EOF
		}
		start := r.line
		row.Line = start
		if st == lineTooLong {
			return r.reject(row, -1, ReasonLineTooLong, messageFor(ReasonLineTooLong), nil)
		}
		r.stripBOM(start)
		if len(trimSpace(r.rec)) == 0 {
			continue
		}
		r.vals = [numFields]value{}
		if msg := r.js.parse(r.rec, &r.vals); msg != "" {
			if msg == msgJSONEOF && !terminated {
				return r.reject(row, -1, ReasonTruncatedLine, "the feed ends inside a JSON object", nil)
			}
			return r.reject(row, -1, ReasonBadJSON, msg, nil)
		}
		return r.finish(row)
	}
}

func (r *Reader) finish(row *Row) error {
	if !build(row, &r.vals, &r.sbuf, &r.cur, &r.fe) {
		return r.reject(row, r.fe.field, r.fe.reason, r.fe.msg, r.fe.val)
	}
	return nil
}

func messageFor(reason Reason) string {
	switch reason {
	case ReasonLineTooLong:
		return "line longer than Options.MaxLineBytes; skipped"
	case ReasonTruncatedLine:
		return "the feed ends inside a quoted field"
	case ReasonBadQuote:
		return "a quote inside an unquoted field, or text after a closing quote"
	}
	return string(reason)
}

// reject builds the *RowError for the current record.
func (r *Reader) reject(row *Row, field int, reason Reason, msg string, val []byte) error {
	e := &RowError{Line: row.Line, Reason: reason}
	if field >= 0 {
		e.Field = fieldNames[field]
	}
	if r.opts.MaxRawInReject > 0 {
		e.Raw = string(cutUTF8(r.rec, r.opts.MaxRawInReject))
	}
	if val != nil {
		msg += ": value " + strconv.Quote(string(cutUTF8(val, 64)))
	}
	e.Err = errors.New(msg)
	row.Delete = false
	return e
}
