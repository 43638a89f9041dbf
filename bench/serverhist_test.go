package bench

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const sampleMetrics = `# HELP rtbd_bidder_request_seconds Time from arrival to answer.
# TYPE rtbd_bidder_request_seconds histogram
rtbd_bidder_request_seconds_bucket{le="0.001"} 10
rtbd_bidder_request_seconds_bucket{le="0.01"} 90
rtbd_bidder_request_seconds_bucket{le="0.1"} 98
rtbd_bidder_request_seconds_bucket{le="+Inf"} 100
rtbd_bidder_request_seconds_sum 1.5
rtbd_bidder_request_seconds_count 100
# TYPE rtbd_bidder_stage_seconds histogram
rtbd_bidder_stage_seconds_bucket{stage="decode",le="0.001"} 5
rtbd_bidder_stage_seconds_bucket{stage="decode",le="+Inf"} 6
rtbd_bidder_stage_seconds_sum{stage="decode"} 0.01
rtbd_bidder_stage_seconds_count{stage="decode"} 6
rtbd_bidder_stage_seconds_bucket{stage="user",le="0.001"} 1
rtbd_bidder_stage_seconds_bucket{stage="user",le="+Inf"} 4
rtbd_bidder_stage_seconds_sum{stage="user"} 0.01
rtbd_bidder_stage_seconds_count{stage="user"} 4
# TYPE rtbd_bidder_requests_total counter
rtbd_bidder_requests_total 100
`

func TestParseHistogram(t *testing.T) {
	s, err := parseHistogram(strings.NewReader(sampleMetrics), "rtbd_bidder_request_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if s.count != 100 || len(s.buckets) != 3 || s.buckets[0.01] != 90 {
		t.Fatalf("snapshot %+v", s)
	}
	// Series with labels are summed.
	st, err := parseHistogram(strings.NewReader(sampleMetrics), "rtbd_bidder_stage_seconds")
	if err != nil || st.count != 10 || st.buckets[0.001] != 6 {
		t.Fatalf("summed %+v, %v", st, err)
	}
	for _, m := range []string{"rtbd_nope", "rtbd_bidder_requests_total"} {
		if _, err := parseHistogram(strings.NewReader(sampleMetrics), m); !errors.Is(err, errNoHistogram) {
			t.Errorf("%s: %v, want errNoHistogram", m, err)
		}
	}
	if _, err := parseHistogram(strings.NewReader("rtbd_x{le=\"0.1\" 3\n"), "rtbd_x"); err == nil {
		t.Error("a malformed exposition parsed")
	}
}

func TestServerHistogramDelta(t *testing.T) {
	a := histSnapshot{count: 100, buckets: map[float64]int64{0.001: 10, 0.01: 90, 0.1: 98}}
	b := histSnapshot{count: 1100, buckets: map[float64]int64{0.001: 510, 0.01: 1050, 0.1: 1090}}
	w := WatchHistogram{Name: "bidder", Metric: "m"}
	h := serverHistogram(w, a, b, 100*time.Millisecond)
	if h.Count != 1000 || len(h.Buckets) != 3 || h.Buckets[1] != (ServerBucket{LeSec: 0.01, Count: 960}) {
		t.Fatalf("delta %+v", h)
	}
	if h.OverTmax != 8 || h.TmaxBoundSec != 0.1 { // 1000 - 992 within 0.1 s
		t.Errorf("over tmax %d above %v, want 8 above 0.1", h.OverTmax, h.TmaxBoundSec)
	}
	// A tmax between bounds counts above the next bound up; one beyond
	// them all, or none, is unknown.
	if h := serverHistogram(w, a, b, 50*time.Millisecond); h.OverTmax != 8 || h.TmaxBoundSec != 0.1 {
		t.Errorf("tmax 50ms: %d above %v", h.OverTmax, h.TmaxBoundSec)
	}
	for _, tmax := range []time.Duration{0, time.Second} {
		if h := serverHistogram(w, a, b, tmax); h.OverTmax != -1 {
			t.Errorf("tmax %v: over %d, want -1", tmax, h.OverTmax)
		}
	}
	if le, ok := h.QuantileBound(0.5); !ok || le != 0.001 {
		t.Errorf("p50 bound %v %v, want 0.001", le, ok)
	}
	if le, ok := h.QuantileBound(0.99); !ok || le != 0.1 {
		t.Errorf("p99 bound %v %v, want 0.1", le, ok)
	}
	if _, ok := h.QuantileBound(0.999); ok {
		t.Error("p99.9 lies in +Inf but got a bound")
	}
	if got := serverLine(h); !strings.Contains(got, "1000 observations") || !strings.Contains(got, "8 over 100.00 ms (tmax)") {
		t.Errorf("serverLine: %q", got)
	}
}

func FuzzParseHistogram(f *testing.F) {
	f.Add(sampleMetrics)
	f.Add("# TYPE m histogram\nm_bucket{le=\"1\"} 1\nm_count 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := parseHistogram(strings.NewReader(text), "m")
		if err == nil && s.buckets == nil {
			t.Fatal("nil buckets without an error")
		}
	})
}

// TestReadHistogramOverHTTP reads a real HTTP server's exposition, and
// says why when it cannot: a non-200 answer, a body that is not one, no
// server at all. A report shows the reason instead of figures.
func TestReadHistogramOverHTTP(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, sampleMetrics) })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "{not metrics\n") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	s, err := readHistogram(ctx, srv.URL+"/metrics", "rtbd_bidder_request_seconds")
	if err != nil || s.count != 100 {
		t.Fatalf("read %+v, %v", s, err)
	}
	for _, path := range []string{"/broken", "/garbage"} {
		if _, err := readHistogram(ctx, srv.URL+path, "rtbd_bidder_request_seconds"); err == nil {
			t.Errorf("%s: no error", path)
		}
	}
	addr := srv.Listener.Addr().String()
	srv.Close()
	_, err = readHistogram(ctx, "http://"+addr+"/metrics", "rtbd_bidder_request_seconds")
	if err == nil {
		t.Fatal("a closed server gave a histogram")
	}
	line := serverLine(ServerHistogram{Name: "bidder", Metric: "m", OverTmax: -1, Error: err.Error()})
	if !strings.Contains(line, "unavailable") {
		t.Errorf("serverLine with an error: %q", line)
	}
}
