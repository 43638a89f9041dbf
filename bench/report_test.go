package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleReport() *Report {
	a := synthResult("bids <local>", 1, 5, 200, 2000, 0)
	a.Processes = []ProcessStats{{Name: "rtbd", PID: 42, CPUSec: 1.5, Cores: 0.3, PeakRSSBytes: 64 << 20, RSSBytes: 60 << 20}}
	b := synthResult("bids grpc & catalog", 2, 5, 200, 2100, 0)
	b.Events = []Event{{AtSec: 2.25, What: "node <1> killed"}, {AtSec: 3.5, What: "node <1> ready"}}
	r := NewReport(Meta{Title: "local vs grpc", GitRev: "abc123", Config: map[string]string{"rate": "200", "duration": "5s"}, Notes: []string{"synthetic"}}, a, b)
	r.Searches = []*MaxRateResult{{Target: "bids <local>", Objective: "p99 <= 5 ms, errors < 0.1%", P99Ms: 5, MaxRate: 3500, Bracketed: true,
		Steps: []RateStep{{Rate: 1000, Pass: true, Requests: 5000, P99Us: 3000}, {Rate: 4000, Pass: false, Reason: "p99 9.00 ms > 5 ms", P99Us: 9000}}}}
	return r
}

func TestJSONRoundTrip(t *testing.T) {
	r := sampleReport()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	first := buf.String()
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := WriteJSON(&buf, back); err != nil {
		t.Fatal(err)
	}
	if buf.String() != first {
		t.Fatalf("round trip changed the report:\n%s\n---\n%s", first, buf.String())
	}
	if back.Schema != Schema || len(back.Results) != 2 || back.Results[0].Latency != r.Results[0].Latency ||
		len(back.Results[0].Timeline) != len(r.Results[0].Timeline) || back.Results[1].Target != "bids grpc & catalog" {
		t.Fatalf("loaded report differs: %+v", back.Results)
	}
	// Field names the schema documents.
	for _, k := range []string{`"schema": "rtbd-bench/v1"`, `"p99_us"`, `"timeline"`, `"errors"`, `"status_5xx"`, `"generator_cpu_sec"`, `"peak_rss_bytes"`, `"searches"`} {
		if !strings.Contains(first, k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
}

func TestReadReportErrors(t *testing.T) {
	cases := map[string]error{
		`{"results":[]}`: ErrSchema,
		`{"schema":"rtbd-bench/v2","results":[]}`:                ErrSchema,
		`{"schema":"rtbd-bench/v1","results":[null]}`:            ErrInvalid,
		`{"schema":"rtbd-bench/v1","results":[{"requests":-1}]}`: ErrInvalid,
		`{"schema":"rtbd-bench/v1","results":"x"}`:               ErrInvalid,
		`not json`: ErrInvalid,
	}
	for in, want := range cases {
		if _, err := ReadReport(strings.NewReader(in)); !errors.Is(err, want) {
			t.Errorf("ReadReport(%s) = %v, want %v", in, err, want)
		}
	}
	if _, err := LoadReport(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("LoadReport of a missing file: want error")
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{
		"rtbd bench report: local vs grpc", "git abc123", "duration", // metadata, config
		"Summary:", "Requests/sec:", "Response time histogram", "∎", "Latency distribution:", "99.9 % in",
		"Processes:", "peak RSS MiB",
		"Timeline", "max ms", "max rate search", "3,500.0 req/s",
		"<- node <1> killed at 2.2 s", "<- node <1> ready at 3.5 s", // events on their seconds' rows
	} {
		if !strings.Contains(out, s) {
			t.Errorf("text lacks %q", s)
		}
	}
	// Aligned: the comparison header and rows start their columns at the same offsets.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "target ") {
			h := strings.Index(l, "avg ms")
			row := lines[i+1]
			if h < 0 || len(row) < h || row[h-1] != ' ' {
				t.Errorf("comparison table not aligned:\n%s\n%s", l, row)
			}
			break
		}
	}
	if testing.Verbose() {
		t.Log("\n" + out)
	}
}

func TestWriteHTML(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "<svg"); n != 3 { // percentiles, throughput, p99
		t.Errorf("%d <svg> elements, want 3", n)
	}
	for _, s := range []string{"<polyline", "Latency by percentile", "Throughput over time", "p99 latency over time",
		"bids &lt;local&gt;", "grpc &amp; catalog", "max rate", "<pre>",
		"node &lt;1&gt; killed", "node &lt;1&gt; ready", `stroke-dasharray="2 2"`} { // event marks on the timelines
		if !strings.Contains(out, s) {
			t.Errorf("html lacks %q", s)
		}
	}
	if n := strings.Count(out, "node &lt;1&gt; killed</text>"); n != 2 { // throughput and p99 timelines
		t.Errorf("kill event labelled on %d charts, want 2", n)
	}
	for _, s := range []string{"<script", "http://", "https://", "src=", "@import", "url(", "<link", "bids <local>", "node <1>"} {
		if strings.Contains(out, s) {
			t.Errorf("html contains %q (must be self-contained and escaped)", s)
		}
	}
	if os.Getenv("BENCH_HTML_OUT") != "" {
		_ = os.WriteFile(os.Getenv("BENCH_HTML_OUT"), buf.Bytes(), 0o644)
	}
}

func TestWritersOnEmptyReport(t *testing.T) {
	r := NewReport(Meta{})
	r.Results = append(r.Results, &Result{Target: "empty"})
	for name, f := range map[string]func(*bytes.Buffer) error{
		"text": func(b *bytes.Buffer) error { return WriteText(b, r) },
		"html": func(b *bytes.Buffer) error { return WriteHTML(b, r) },
		"json": func(b *bytes.Buffer) error { return WriteJSON(b, r) },
	} {
		var b bytes.Buffer
		if err := f(&b); err != nil || b.Len() == 0 {
			t.Errorf("%s: %v (%d bytes)", name, err, b.Len())
		}
	}
}

func FuzzReadReport(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteJSON(&buf, sampleReport())
	f.Add(buf.Bytes())
	f.Add([]byte(`{"schema":"rtbd-bench/v1","results":[{"target":"x","histogram":[{"mark_us":1,"count":-5}],"timeline":[{"t":-3,"p99_us":-1}],"percentiles":[{"p":120,"us":9}]}]}`))
	f.Add([]byte(`{"schema":"rtbd-bench/v1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ReadReport(bytes.NewReader(b))
		if err != nil {
			return
		}
		// Whatever parses must render without error or panic.
		var out bytes.Buffer
		if err := WriteText(&out, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&out, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&out, r); err != nil {
			t.Fatal(err)
		}
		_ = Compare(r, r)
	})
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWritersReportWriteErrors(t *testing.T) {
	r := sampleReport()
	for name, err := range map[string]error{
		"text":    WriteText(failingWriter{}, r),
		"html":    WriteHTML(failingWriter{}, r),
		"json":    WriteJSON(failingWriter{}, r),
		"compare": WriteCompare(failingWriter{}, r, r, Compare(r, r)),
	} {
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%s: %v, want the write error", name, err)
		}
	}
}

func TestFmtRate(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 999.94: "999.9", 3732.4: "3,732.4", 1234567: "1,234,567.0",
		-123.4: "-123.4", -1234.5: "-1,234.5", -123456: "-123,456.0"} {
		if got := fmtRate(v); got != want {
			t.Errorf("fmtRate(%v) = %q, want %q", v, got, want)
		}
	}
}
