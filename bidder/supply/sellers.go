package supply

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SellerType is a seller_type of a sellers.json entry, as bits: BOTH is
// PUBLISHER|INTERMEDIARY.
type SellerType uint8

// Seller types.
const (
	SellerPublisher    SellerType = 1
	SellerIntermediary SellerType = 2
	SellerBoth                    = SellerPublisher | SellerIntermediary
)

func (t SellerType) String() string {
	switch t {
	case SellerPublisher:
		return "PUBLISHER"
	case SellerIntermediary:
		return "INTERMEDIARY"
	case SellerBoth:
		return "BOTH"
	}
	return "none"
}

// ErrNotSellersJSON: the file is not a JSON object with a sellers array;
// nothing of it is used (Store keeps the file's last good version).
var ErrNotSellersJSON = errors.New("supply: not a sellers.json (a JSON object with a \"sellers\" array)")

// Sellers is one advertising system's sellers.json, indexed by seller_id.
// It is immutable once parsed and safe for concurrent use.
type Sellers struct {
	ids map[string]SellerType
}

// Len is the number of distinct seller ids.
func (s *Sellers) Len() int {
	if s == nil {
		return 0
	}
	return len(s.ids)
}

// Type returns the type of seller id (exact match), 0 when not listed. It
// makes no allocation; nil-safe.
func (s *Sellers) Type(id string) SellerType {
	if s == nil {
		return 0
	}
	return s.ids[id]
}

// BadLine is an entry of a file that was skipped: its line (ads.txt) or
// its index in the sellers array (sellers.json), why, and the text (at
// most 120 bytes).
type BadLine struct {
	N    int
	Why  string
	Text string
}

func (b BadLine) String() string { return fmt.Sprintf("%d: %s: %q", b.N, b.Why, b.Text) }

// maxSample bounds the bad lines a parse returns (the rest are counted).
const maxSample = 5

// ParseSellers parses a sellers.json (IAB Tech Lab sellers.json 1.0). An
// entry that is not an object, lacks a seller_id (a string, or a number
// as some files write it) or has a seller_type other than PUBLISHER,
// INTERMEDIARY or BOTH (any case) is skipped: bad counts them and sample
// holds the first few. A seller_id listed twice gets both types. An
// error (ErrNotSellersJSON) means nothing of data is usable.
func ParseSellers(data []byte) (s *Sellers, bad int, sample []BadLine, err error) {
	var f struct {
		Sellers []json.RawMessage `json:"sellers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, 0, nil, fmt.Errorf("%w: %v", ErrNotSellersJSON, err)
	}
	if f.Sellers == nil {
		return nil, 0, nil, ErrNotSellersJSON
	}
	type entry struct {
		id string
		t  SellerType
	}
	entries := make([]entry, 0, len(f.Sellers))
	size := 0
	for i, raw := range f.Sellers {
		var e struct {
			SellerID   json.RawMessage `json:"seller_id"`
			SellerType json.RawMessage `json:"seller_type"`
		}
		why := ""
		var id string
		var t SellerType
		if err := json.Unmarshal(raw, &e); err != nil {
			why = "not an object with string seller_id and seller_type"
		} else if id = sellerID(e.SellerID); id == "" {
			why = "seller_id missing, empty, or neither a string nor a number"
		} else if t = sellerType(e.SellerType); t == 0 {
			why = "seller_type is not PUBLISHER, INTERMEDIARY or BOTH"
		}
		if why != "" {
			bad++
			if len(sample) < maxSample {
				sample = append(sample, BadLine{N: i, Why: why, Text: clip(string(raw))})
			}
			continue
		}
		entries = append(entries, entry{id, t})
		size += len(id)
	}
	// One string holds every id: the map's keys are substrings of it.
	var b strings.Builder
	b.Grow(size)
	for _, e := range entries {
		b.WriteString(e.id)
	}
	all := b.String()
	s = &Sellers{ids: make(map[string]SellerType, len(entries))}
	off := 0
	for _, e := range entries {
		k := all[off : off+len(e.id)]
		off += len(e.id)
		s.ids[k] |= e.t
	}
	return s, bad, sample, nil
}

// sellerID returns a seller_id's value: a JSON string (unquoted, trimmed)
// or a JSON integer's digits; "" for anything else.
func sellerID(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return strings.TrimSpace(s)
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return string(raw)
}

func sellerType(raw json.RawMessage) SellerType {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "PUBLISHER":
		return SellerPublisher
	case "INTERMEDIARY":
		return SellerIntermediary
	case "BOTH":
		return SellerBoth
	}
	return 0
}

// clip returns s cut to 120 bytes for a log line.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
