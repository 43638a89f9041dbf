package feed

import (
	"fmt"
	"strings"
)

// Format is a feed's encoding.
type Format int

const (
	// FormatAuto, the zero value, means "detect from the file name" in Options.
	FormatAuto Format = iota
	// CSV is RFC 4180 CSV with a header row.
	CSV
	// JSONL is JSON Lines: one JSON object per line.
	JSONL
)

// String returns "csv", "jsonl" or "auto".
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case CSV:
		return "csv"
	case JSONL:
		return "jsonl"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses a format name as given on a command line: "csv",
// "jsonl" or "ndjson" (any case), or "" / "auto" for FormatAuto.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "csv":
		return CSV, nil
	case "jsonl", "ndjson":
		return JSONL, nil
	}
	return FormatAuto, fmt.Errorf("%w: %q (want csv or jsonl)", ErrUnknownFormat, s)
}

// DetectFormat returns the format of a feed file from its name: .csv is CSV,
// .jsonl and .ndjson are JSONL, each optionally followed by .gz (case does
// not matter). Anything else, including "-" for standard input, is
// ErrUnknownFormat. Whether the data is compressed is decided from the data
// itself, not the name.
func DetectFormat(name string) (Format, error) {
	n := strings.ToLower(name)
	n = strings.TrimSuffix(n, ".gz")
	switch {
	case strings.HasSuffix(n, ".csv"):
		return CSV, nil
	case strings.HasSuffix(n, ".jsonl"), strings.HasSuffix(n, ".ndjson"):
		return JSONL, nil
	}
	return FormatAuto, fmt.Errorf("%w: cannot tell from name %q (want .csv, .jsonl or .ndjson, optionally + .gz)", ErrUnknownFormat, name)
}
