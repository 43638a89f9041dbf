package feed

import (
	"bytes"
	"fmt"
	"strings"
)

// splitResult is the outcome of csvSplitter.split.
type splitResult int

const (
	splitDone     splitResult = iota // the record is complete
	splitMore                        // inside a quoted field at the end of the text: append '\n' + next line and call again
	splitBadQuote                    // a quote in an unquoted field, or text after a closing quote
)

// csvSplitter splits one CSV record (RFC 4180, strict quotes) into fields.
// A record may span several physical lines: split reports splitMore and
// resumes where it stopped once the caller has appended the next line.
// Fields point into the record text, or into fbuf for quoted fields with ""
// escapes; both stay valid until reset.
type csvSplitter struct {
	fields [][]byte
	fbuf   []byte

	// resume state, valid while inQuote
	p       int  // scan position in rec
	inQuote bool // inside a quoted field
	qs      int  // start of the quoted field's content in rec
	seg     int  // start of rec not yet copied to fbuf (escaped mode)
	escaped bool // the field had a "" and is being copied to fbuf
	fbStart int  // start of the field in fbuf
}

func (s *csvSplitter) reset() {
	s.fields = s.fields[:0]
	s.fbuf = s.fbuf[:0]
	s.p = 0
	s.inQuote = false
}

// split continues splitting rec, which holds the record's text so far
// (physical lines joined by '\n', without the final line break).
func (s *csvSplitter) split(rec []byte) splitResult {
	p := s.p
	for {
		if !s.inQuote {
			if p < len(rec) && rec[p] == '"' {
				p++
				s.inQuote, s.qs, s.seg, s.escaped = true, p, p, false
			} else {
				end := len(rec)
				j := indexCommaOrQuote(rec[p:])
				if j >= 0 {
					end = p + j
					if rec[end] == '"' {
						return splitBadQuote
					}
				}
				f := rec[p:end:end]
				s.fields = append(s.fields, f)
				if j < 0 {
					return splitDone
				}
				p = end + 1
				continue
			}
		}
		j := bytes.IndexByte(rec[p:], '"')
		if j < 0 {
			s.p = len(rec)
			return splitMore
		}
		q := p + j
		if q+1 < len(rec) && rec[q+1] == '"' { // "" escape
			if !s.escaped {
				s.escaped, s.fbStart = true, len(s.fbuf)
			}
			s.fbuf = append(s.fbuf, rec[s.seg:q+1]...)
			p = q + 2
			s.seg = p
			continue
		}
		var f []byte
		if s.escaped {
			s.fbuf = append(s.fbuf, rec[s.seg:q]...)
			f = s.fbuf[s.fbStart:len(s.fbuf):len(s.fbuf)]
		} else {
			f = rec[s.qs:q:q]
		}
		s.fields = append(s.fields, f)
		s.inQuote = false
		p = q + 1
		if p == len(rec) {
			return splitDone
		}
		if rec[p] != ',' {
			return splitBadQuote
		}
		p++
	}
}

// mapHeader maps CSV header fields to field ids. It returns the column ->
// field id table (-1 for unknown columns) or an ErrBadHeader error.
func mapHeader(fields [][]byte, cols []int8) ([]int8, error) {
	cols = cols[:0]
	var seen [numFields]bool
	var name [32]byte
	for i, f := range fields {
		f = trimSpace(f)
		id := -1
		if len(f) <= len(name) {
			n := name[:len(f)]
			for j, c := range f {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				n[j] = c
			}
			id = lookupField(n)
		}
		if id >= 0 {
			if seen[id] {
				return nil, fmt.Errorf("%w: column %q appears twice (columns %d and another)", ErrBadHeader, fieldNames[id], i+1)
			}
			seen[id] = true
		}
		cols = append(cols, int8(id))
	}
	var missing []string
	need := requiredForUpsert[:]
	if seen[fOp] || seen[fDeleted] {
		need = need[:2] // id, group_id: a delta feed may carry only deletes
	}
	for _, id := range need {
		if !seen[id] {
			missing = append(missing, fieldNames[id])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: missing required column(s) %s", ErrBadHeader, strings.Join(missing, ", "))
	}
	return cols, nil
}
