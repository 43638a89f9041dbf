package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"
)

// Schema is the value of a report's "schema" field this package writes and reads.
const Schema = "rtbd-bench/v1"

// maxReportBytes bounds what ReadReport accepts (a 15-minute, 10-target report is a few MB).
const maxReportBytes = 256 << 20

// Report is one benchmark run: metadata, the Results of every target, the
// scenario's comparison tables, and optional max-rate searches.
type Report struct {
	Schema string `json:"schema"`
	Meta
	Created    time.Time        `json:"created"`
	Host       string           `json:"host"`
	GoVersion  string           `json:"go_version"`
	OS         string           `json:"os"`
	Arch       string           `json:"arch"`
	NumCPU     int              `json:"num_cpu"`
	GOMAXPROCS int              `json:"gomaxprocs"`
	Results    []*Result        `json:"results"`
	Searches   []*MaxRateResult `json:"searches,omitempty"`
	Tables     []Table          `json:"tables,omitempty"` // built by the scenario (BuildTable)
	Soak       *SoakSummary     `json:"soak,omitempty"`   // the fault-injection soak's findings
}

// Meta is what the caller knows about a run; NewReport adds the host, Go
// version and time.
type Meta struct {
	Title  string `json:"title,omitempty"`
	GitRev string `json:"git_rev,omitempty"`
	// Config holds the run's settings as flat key/value pairs (flags, YAML
	// keys), rendered sorted by key.
	Config map[string]string `json:"config,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

// NewReport builds a report of results (in order); they are referenced,
// not copied.
func NewReport(m Meta, results ...*Result) *Report {
	host, _ := os.Hostname()
	return &Report{
		Schema:     Schema,
		Meta:       m,
		Created:    time.Now().UTC().Truncate(time.Millisecond),
		Host:       host,
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Results:    results,
	}
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: write json: %w", err)
	}
	return nil
}

// ReadReport decodes a JSON report. Unknown fields are ignored (newer minor
// additions); a missing or different "schema" is an error wrapping
// ErrSchema, malformed JSON an error wrapping ErrInvalid.
func ReadReport(rd io.Reader) (*Report, error) {
	b, err := io.ReadAll(io.LimitReader(rd, maxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("bench: read report: %w", err)
	}
	if len(b) > maxReportBytes {
		return nil, fmt.Errorf("%w: report larger than %d bytes", ErrInvalid, maxReportBytes)
	}
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%w: report: %v", ErrInvalid, err)
	}
	if head.Schema == nil {
		return nil, fmt.Errorf("%w: no \"schema\" field (want %q)", ErrSchema, Schema)
	}
	if *head.Schema != Schema {
		return nil, fmt.Errorf("%w: %q (want %q)", ErrSchema, *head.Schema, Schema)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: report: %v", ErrInvalid, err)
	}
	for i, res := range r.Results {
		if res == nil || res.Requests < 0 || res.Latency.Count < 0 {
			return nil, fmt.Errorf("%w: results[%d]: null or negative counts", ErrInvalid, i)
		}
	}
	if slices.Contains(r.Searches, nil) {
		return nil, fmt.Errorf("%w: searches: null", ErrInvalid)
	}
	return &r, nil
}

// LoadReport reads a JSON report file written by WriteJSON.
func LoadReport(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	r, err := ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
