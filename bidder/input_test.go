package bidder

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// gzipBomb returns a gzip stream that decompresses to n zero bytes (n a
// multiple of 1 MiB): one member of 1 MiB of zeros (about 1 KiB), repeated,
// as gzip allows (RFC 1952 members; Go's reader reads them all). Cheap to
// build, even under the race detector.
func gzipBomb(t testing.TB, n int) []byte {
	t.Helper()
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(member.Bytes(), n>>20)
}

// TestBadInput: bad input of every kind gets a 4xx or a no-bid with nbr 2,
// never a 5xx, never a crash; the server keeps serving after each.
func TestBadInput(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.NBRBody = true; o.MaxBodyBytes = 64 << 10 })
	good := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	hugeArray := `{"id":"x","imp":[{"id":"1","banner":{"w":300,"h":250}}],"bcat":[` + strings.Repeat(`"IAB1",`, 20000) + `"IAB2"]}`
	manyImps := `{"id":"x","imp":[` + strings.Repeat(`{"id":"i","banner":{"w":300,"h":250}},`, 200) + `{"id":"z","banner":{}}]}`
	cases := []struct {
		name    string
		method  string
		body    []byte
		headers []string
		status  int // 200 means a no-bid body with nbr 2
	}{
		{"malformed JSON", "POST", []byte(`{"id": "x", "imp": [`), nil, 200},
		{"not JSON", "POST", []byte("hello"), nil, 200},
		{"empty body", "POST", []byte{}, nil, 200},
		{"JSON array", "POST", []byte(`[{"id":"x"}]`), nil, 200},
		{"JSON null", "POST", []byte(`null`), nil, 200},
		{"two objects", "POST", []byte(`{"id":"x"}{"id":"y"}`), nil, 200},
		{"missing imp", "POST", []byte(`{"id":"x","site":{"id":"s"}}`), nil, 200},
		{"empty imp", "POST", []byte(`{"id":"x","imp":[]}`), nil, 200},
		{"imp without media", "POST", []byte(`{"id":"x","imp":[{"id":"1"}]}`), nil, 200},
		{"missing id", "POST", []byte(`{"imp":[{"id":"1","banner":{"w":300,"h":250}}]}`), nil, 200},
		{"wrong type id", "POST", []byte(`{"id":7,"imp":[{"id":"1","banner":{"w":300,"h":250}}]}`), nil, 200},
		{"wrong type tmax", "POST", []byte(`{"id":"x","tmax":"100","imp":[{"id":"1","banner":{"w":300,"h":250}}]}`), nil, 200},
		{"wrong type banner", "POST", []byte(`{"id":"x","imp":[{"id":"1","banner":"300x250"}]}`), nil, 200},
		{"wrong type w", "POST", []byte(`{"id":"x","imp":[{"id":"1","banner":{"w":"300","h":250}}]}`), nil, 200},
		{"negative floor", "POST", []byte(`{"id":"x","imp":[{"id":"1","bidfloor":-1,"banner":{"w":300,"h":250}}]}`), nil, 200},
		{"huge number", "POST", []byte(`{"id":"x","tmax":1e400,"imp":[{"id":"1","banner":{"w":300,"h":250}}]}`), nil, 200},
		{"duplicate imp ids", "POST", []byte(`{"id":"x","imp":[{"id":"1","banner":{}},{"id":"1","banner":{}}]}`), nil, 200},
		{"too many imps", "POST", []byte(manyImps), nil, 200},
		{"deep nesting", "POST", []byte(`{"id":"x","ext":` + deep + `,"imp":[{"id":"1","banner":{}}]}`), nil, 200},
		{"huge array", "POST", []byte(hugeArray), nil, 413}, // 140 KB > the 64 KiB limit
		{"huge array under the size limit", "POST", []byte(`{"id":"x","imp":[{"id":"1","banner":{"w":300,"h":250}}],"ext":{"a":[` + strings.Repeat("1,", 10001) + `1]}}`), nil, 200},
		{"invalid UTF-8", "POST", []byte("{\"id\":\"x\xff\xfe\",\"imp\":[{\"id\":\"1\",\"banner\":{}}]}"), nil, 200},
		{"control char in id", "POST", []byte("{\"id\":\"x\\u0001\",\"imp\":[{\"id\":\"1\",\"banner\":{}}]}"), nil, 200},
		{"site and app", "POST", []byte(`{"id":"x","site":{},"app":{},"imp":[{"id":"1","banner":{}}]}`), nil, 200},
		{"body over limit", "POST", bytes.Repeat([]byte(" "), 64<<10+1), nil, 413},
		// ~16 KB compressed, under the body limit: it is the decompression
		// limit that must stop it (a bigger bomb would hit the raw body
		// limit first, where fasthttp may close the connection mid-write).
		{"gzip bomb", "POST", gzipBomb(t, 16<<20), []string{"Content-Encoding", "gzip"}, 413},
		{"gzip garbage", "POST", []byte("\x1f\x8b\x08\x00garbage"), []string{"Content-Encoding", "gzip"}, 400},
		{"gzip truncated", "POST", gzipped(t, good)[:40], []string{"Content-Encoding", "gzip"}, 400},
		{"gzip of bad JSON", "POST", gzipped(t, []byte("{{{")), []string{"Content-Encoding", "gzip"}, 200},
		{"brotli", "POST", good, []string{"Content-Encoding", "br"}, 415},
		{"deflate", "POST", good, []string{"Content-Encoding", "deflate"}, 415},
		{"two encodings", "POST", good, []string{"Content-Encoding", "gzip, gzip"}, 415},
		{"GET", "GET", nil, nil, 405},
		{"PUT", "PUT", good, nil, 405},
		{"lone surrogate in id", "POST", []byte(`{"id":"x\ud800","imp":[{"id":"1","banner":{"w":300,"h":250}}]}`), nil, 200},
		{"lone surrogate in imp.id", "POST", []byte(`{"id":"x","imp":[{"id":"\udfff","banner":{"w":300,"h":250}}]}`), nil, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(tc.method, PathBid, tc.body, tc.headers...)
			if r.status >= 500 {
				t.Fatalf("status %d: a 5xx for bad input", r.status)
			}
			if r.status != tc.status {
				t.Fatalf("status %d, want %d (body %q)", r.status, tc.status, r.body)
			}
			if tc.status == 200 {
				var nb struct {
					NBR int `json:"nbr"`
				}
				if err := json.Unmarshal(r.body, &nb); err != nil || nb.NBR != 2 {
					t.Fatalf("body %q, want a no-bid with nbr 2", r.body)
				}
				if bytes.Contains(r.body, []byte(`\ufffd`)) || bytes.Contains(r.body, []byte("\uFFFD")) {
					t.Fatalf("body %q echoes a mangled id", r.body)
				}
			}
			if tc.status == 405 && r.headers["Allow"] != "POST" {
				t.Errorf("Allow %q", r.headers["Allow"])
			}
			// Still serving.
			if ok := f.bid(good); ok.status != 200 {
				t.Fatalf("after %s the good request got %d", tc.name, ok.status)
			}
		})
	}
	if got := f.counter("rtbd_bidder_rejected_total", "reason", "too_large"); got < 3 {
		t.Errorf("rejected{too_large} = %v, want >= 3", got)
	}
	if got := f.counter("rtbd_bidder_rejected_total", "reason", "encoding"); got != 3 {
		t.Errorf("rejected{encoding} = %v, want 3", got)
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "invalid_request"); got < 20 {
		t.Errorf("nobids{invalid_request} = %v, want >= 20", got)
	}
	if got := f.counter("rtbd_bidder_nobids_total", "nbr", "technical_error"); got != 0 {
		t.Errorf("nobids{technical_error} = %v", got)
	}
	r := f.do("POST", "/nope", good)
	if r.status != 404 {
		t.Errorf("unknown path: %d", r.status)
	}
}

// TestGzipBombMemory: decompressing a 256 MiB gzip bomb stops at the
// limit: the heap does not grow by anything near the bomb's size.
func TestGzipBombMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	f := newFixture(t, func(o *Options) { o.MaxBodyBytes = 256 << 10 })
	bomb := gzipBomb(t, 256<<20) // ~250 KB compressed
	if len(bomb) > f.b.opts.MaxBodyBytes*8 {
		t.Logf("bomb is %d bytes compressed", len(bomb))
	}
	// Call the handler directly, with a body under the compressed limit.
	f.b.opts.MaxBodyBytes = 1 << 20
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI(PathBid)
	rc.Request.Header.Set("Content-Encoding", "gzip")
	rc.Request.SetBody(bomb)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f.b.Handler()(&rc)
	runtime.ReadMemStats(&after)
	if rc.Response.StatusCode() != 413 {
		t.Fatalf("status %d, want 413", rc.Response.StatusCode())
	}
	grown := int64(after.TotalAlloc - before.TotalAlloc)
	if grown > 16<<20 {
		t.Errorf("allocated %d MiB decompressing a 256 MiB bomb; want it bounded by the limit (1 MiB)", grown>>20)
	}
	t.Logf("256 MiB gzip bomb (%d KiB compressed): 413 after allocating %d KiB", len(bomb)>>10, grown>>10)
}

// TestGzip: a gzip-encoded request is decoded; a response is gzipped when
// the SSP accepts it and GzipMinBytes allows.
func TestGzip(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.GzipMinBytes = 512 })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	r := f.bid(gzipped(t, body), "Content-Encoding", "gzip", "Accept-Encoding", "gzip, deflate")
	if r.status != 200 || r.headers["Content-Encoding"] != "gzip" {
		t.Fatalf("status %d Content-Encoding %q", r.status, r.headers["Content-Encoding"])
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	r.body = plain
	checkResponse(t, f, body, r, userBulk)
	// Without Accept-Encoding: plain.
	r = f.bid(body)
	if r.headers["Content-Encoding"] != "" || r.status != 200 {
		t.Errorf("no Accept-Encoding: Content-Encoding %q", r.headers["Content-Encoding"])
	}
	checkResponse(t, f, body, r, userBulk)
}
