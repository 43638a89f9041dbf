package money

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrFXFile is wrapped by every ParseFXFile error.
var ErrFXFile = errors.New("money: invalid currency file")

// MaxFXFilePairs bounds the rates of a currency file (Prebid's file has
// about a hundred).
const MaxFXFilePairs = 4096

// FXFile is a currency file in Prebid's format, the one Prebid Server's
// currency_converter fetches:
//
//	{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0.92,"JPY":150.1}}}
type FXFile struct {
	// AsOf is the date (or time) the rates are from: dataAsOf.
	AsOf time.Time
	// Pairs holds the conversions, bases and their currencies in sorted
	// order.
	Pairs Pairs
	// Skipped lists the entries whose currency is not an active ISO 4217
	// code (a withdrawn currency such as HRK), as "FROM/TO", sorted; they
	// are left out.
	Skipped []string
}

// ParseFXFile parses a currency file. dataAsOf is required ("2006-01-02"
// or RFC 3339); conversions must hold at least one rate and at most
// MaxFXFilePairs; every rate is a number in [1e-9, 1e9]. Entries of
// unknown currencies are skipped (FXFile.Skipped), not errors. Errors
// wrap ErrFXFile and name the entry.
func ParseFXFile(data []byte) (*FXFile, error) {
	var raw struct {
		DataAsOf    *string                       `json:"dataAsOf"`
		Conversions map[string]map[string]float64 `json:"conversions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFXFile, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrFXFile)
	}
	if raw.DataAsOf == nil {
		return nil, fmt.Errorf("%w: dataAsOf missing", ErrFXFile)
	}
	f := &FXFile{Pairs: Pairs{Max: MaxFXFilePairs}}
	var err error
	if f.AsOf, err = time.Parse(time.DateOnly, *raw.DataAsOf); err != nil {
		if f.AsOf, err = time.Parse(time.RFC3339, *raw.DataAsOf); err != nil {
			return nil, fmt.Errorf("%w: dataAsOf %q: want YYYY-MM-DD or RFC 3339", ErrFXFile, *raw.DataAsOf)
		}
	}
	bases := make([]string, 0, len(raw.Conversions))
	for b := range raw.Conversions {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	for _, b := range bases {
		tos := make([]string, 0, len(raw.Conversions[b]))
		for t := range raw.Conversions[b] {
			tos = append(tos, t)
		}
		slices.Sort(tos)
		for _, t := range tos {
			switch err := f.Pairs.Add(b, t, raw.Conversions[b][t]); {
			case errors.Is(err, ErrPairCode):
				f.Skipped = append(f.Skipped, b+"/"+t)
			case err != nil:
				return nil, fmt.Errorf("%w: conversions.%s.%s = %v: %w", ErrFXFile, b, t, raw.Conversions[b][t], err)
			}
		}
	}
	if f.Pairs.Len() == 0 {
		return nil, fmt.Errorf("%w: conversions has no rate of known currencies", ErrFXFile)
	}
	return f, nil
}
