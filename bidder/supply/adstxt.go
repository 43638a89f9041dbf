package supply

import (
	"bytes"
	"strings"
)

// Relationship is field 3 of an ads.txt record, as bits: an (asi, sid)
// pair listed both ways has both.
type Relationship uint8

// Relationships.
const (
	Direct   Relationship = 1
	Reseller Relationship = 2
)

func (r Relationship) String() string {
	switch r {
	case Direct:
		return "DIRECT"
	case Reseller:
		return "RESELLER"
	case Direct | Reseller:
		return "DIRECT and RESELLER"
	}
	return "none"
}

// AdsTxt is one publisher's ads.txt (or app-ads.txt), indexed by
// advertising system domain (lower case) and then account id (exact). It
// is immutable once parsed and safe for concurrent use.
type AdsTxt struct {
	systems map[string]map[string]Relationship
	records int
	name    string // the file under supply.dir, for explanations
}

// Records is the number of records kept (bad lines, comments, variables
// and blank lines excluded; a record listed twice counts twice).
func (a *AdsTxt) Records() int {
	if a == nil {
		return 0
	}
	return a.records
}

// Lookup returns how account id of advertising system asi (lower case) is
// listed, 0 when it is not. It makes no allocation; nil-safe.
func (a *AdsTxt) Lookup(asi, id string) Relationship {
	if a == nil {
		return 0
	}
	return a.systems[asi][id]
}

// ParseAdsTxt parses an ads.txt or app-ads.txt file (IAB Tech Lab ads.txt
// 1.1): records "domain, account id, DIRECT|RESELLER[, certification
// authority id]", '#' comments, extensions after ';', and variable lines
// (NAME=value: contact, subdomain, ownerdomain, managerdomain,
// inventorypartnerdomain...), which are read past. A line that is none of
// these is skipped: bad counts them, sample holds the first few (line
// numbers from 1). It never fails: a file of bad lines is an empty AdsTxt.
func ParseAdsTxt(data []byte) (a *AdsTxt, bad int, sample []BadLine) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	type rec struct {
		asi, id []byte // slices of data, copied below
		rel     Relationship
	}
	var recs []rec
	size := 0
	n := 0
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
			line = data[:i]
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			data = data[i+1:]
		} else {
			line, data = data, nil
		}
		n++
		raw := line
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		comma, eq := bytes.IndexByte(line, ','), bytes.IndexByte(line, '=')
		if eq >= 0 && (comma < 0 || eq < comma) {
			if eq == 0 || !isVariableName(bytes.TrimSpace(line[:eq])) {
				bad++
				sample = badSample(sample, n, "variable line without a name", raw)
			}
			continue
		}
		asi, id, rel, why := record(line)
		if why != "" {
			bad++
			sample = badSample(sample, n, why, raw)
			continue
		}
		recs = append(recs, rec{asi, id, rel})
		size += len(asi) + len(id)
	}
	var b strings.Builder
	b.Grow(size)
	for _, r := range recs {
		for _, c := range r.asi {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		b.Write(r.id)
	}
	all := b.String()
	a = &AdsTxt{systems: map[string]map[string]Relationship{}, records: len(recs)}
	off := 0
	for _, r := range recs {
		asi := all[off : off+len(r.asi)]
		off += len(r.asi)
		id := all[off : off+len(r.id)]
		off += len(r.id)
		m := a.systems[asi]
		if m == nil {
			m = map[string]Relationship{}
			a.systems[asi] = m
		}
		m[id] |= r.rel
	}
	return a, bad, sample
}

// record parses the fields of a record line (comment and extension cut,
// trimmed): asi and id alias line.
func record(line []byte) (asi, id []byte, rel Relationship, why string) {
	f1, rest, _ := bytes.Cut(line, []byte{','})
	f2, rest, ok := bytes.Cut(rest, []byte{','})
	if !ok {
		return nil, nil, 0, "fewer than 3 comma-separated fields"
	}
	f3, f4, _ := bytes.Cut(rest, []byte{','})
	if bytes.IndexByte(f4, ',') >= 0 {
		return nil, nil, 0, "more than 4 comma-separated fields"
	}
	f1, f2, f3 = bytes.TrimSpace(f1), bytes.TrimSpace(f2), bytes.TrimSpace(f3)
	if !isDomain(f1) {
		return nil, nil, 0, "field 1 is not a domain name"
	}
	if len(f2) == 0 {
		return nil, nil, 0, "field 2 (account id) is empty"
	}
	switch {
	case bytes.EqualFold(f3, []byte("DIRECT")):
		rel = Direct
	case bytes.EqualFold(f3, []byte("RESELLER")):
		rel = Reseller
	default:
		return nil, nil, 0, "field 3 is neither DIRECT nor RESELLER"
	}
	return f1, f2, rel, ""
}

// isDomain reports whether b looks like a domain name: 1-253 letters,
// digits, '-', '_' and '.', with a dot not at either end.
func isDomain(b []byte) bool {
	if len(b) == 0 || len(b) > 253 || b[0] == '.' || b[len(b)-1] == '.' || bytes.IndexByte(b, '.') < 0 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func isVariableName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func badSample(sample []BadLine, n int, why string, raw []byte) []BadLine {
	if len(sample) < maxSample {
		sample = append(sample, BadLine{N: n, Why: why, Text: clip(string(raw))})
	}
	return sample
}
