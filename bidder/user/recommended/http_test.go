package recommended_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/recommended"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
)

func postTo(t *testing.T, srv *httptest.Server, body string) (int, recommended.Answer) {
	t.Helper()
	resp, err := http.Post(srv.URL+recommended.Path, "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a recommended.Answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("answer %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, a
}

// mainTo runs `rtbd users recommend -bidder` with body as -in.
func mainTo(t *testing.T, srv *httptest.Server, body string) (string, string, error) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "reco.jsonl")
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := recommended.Main(context.Background(), []string{"-in", in, "-bidder", srv.URL}, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestHandlerLimits: the route checks lines against the store's limits
// (here one group per user) and reports at most 100 rejects, counting
// them all.
func TestHandlerLimits(t *testing.T) {
	s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{MaxGroups: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(recommended.Handler(s, recommended.HandlerOptions{
		Limits: user.Limits{MaxGroups: 1, MaxViewed: 50, MaxRecommended: 100}, Workers: 1, Where: "test"}))
	defer srv.Close()
	body := `{"uid": "a", "recommended": [{"group": 1, "ids": [1]}]}` + "\n" +
		strings.Repeat(`{"uid": "b", "recommended": [{"group": 1, "ids": [1]}, {"group": 2, "ids": [2]}]}`+"\n", 150)
	st, a := postTo(t, srv, body)
	if st != 200 || a.Lines != 151 || a.Set != 1 || a.Rejected != 150 || len(a.Rejects) != 100 || !strings.HasPrefix(a.Rejects[0], "line 2: ") {
		t.Fatalf("answer %d %+v: want 151 lines, 1 set, 150 rejected, 100 listed from line 2", st, a)
	}
	out, errOut, err := mainTo(t, srv, body)
	if !errors.Is(err, recommended.ErrRejected) || !strings.Contains(out, "151 lines, 1 users set (0 cleared), 150 rejected, 0 failed, to test through the bidder at "+srv.URL) {
		t.Errorf("Main -bidder: %v %q", err, out)
	}
	if n := strings.Count(errOut, "\nline ") + 1; n != 100 || !strings.Contains(errOut, "50 more rejected lines") {
		t.Errorf("stderr: %d lines %q, want 100 and the count of the rest", n, errOut)
	}
}

// TestHandlerNoSetter: a store that cannot set recommendations is 501,
// and Main -bidder says so with the status.
func TestHandlerNoSetter(t *testing.T) {
	srv := httptest.NewServer(recommended.Handler(nil, recommended.HandlerOptions{}))
	defer srv.Close()
	if st, a := postTo(t, srv, `{"uid": "a", "recommended": []}`); st != http.StatusNotImplemented || a.Error == "" {
		t.Errorf("answer %d %+v, want 501 with an error", st, a)
	}
	_, _, err := mainTo(t, srv, `{"uid": "a", "recommended": []}`)
	if !errors.Is(err, recommended.ErrBidder) || !strings.Contains(err.Error(), "501") || !strings.Contains(err.Error(), "cannot set recommended") {
		t.Errorf("Main -bidder: %v, want ErrBidder naming 501 and the reason", err)
	}
}

// TestHandlerStoreDown: a store that fails stops the load: 503 with the
// summary and the error, which Main -bidder reports.
func TestHandlerStoreDown(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	s := redisstore.New(c, redisstore.Options{})
	c.Close() // every call fails
	srv := httptest.NewServer(recommended.Handler(s, recommended.HandlerOptions{Workers: 4, Where: "redis " + r.Addr}))
	defer srv.Close()
	body := "bad\n" + strings.Repeat(`{"uid": "u", "recommended": []}`+"\n", 100)
	st, a := postTo(t, srv, body)
	if st != http.StatusServiceUnavailable || !strings.Contains(a.Error, "user store") || a.Set != 0 || a.Rejected != 1 {
		t.Fatalf("answer %d %+v, want 503 with the store's error", st, a)
	}
	out, _, err := mainTo(t, srv, body)
	if !errors.Is(err, recommended.ErrBidder) || !strings.Contains(err.Error(), "503") || !strings.Contains(out, "0 users set") {
		t.Errorf("Main -bidder: %v %q, want ErrBidder naming 503, and the summary", err, out)
	}
}

// TestHandlerBadBody: a body that cannot be read is 400; a Content-Type
// that is not JSON Lines is 415.
func TestHandlerBadBody(t *testing.T) {
	s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := recommended.Handler(s, recommended.HandlerOptions{Workers: 1})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", recommended.Path, io.MultiReader(strings.NewReader(`{"uid": "a", "recommended": []}`+"\n"), failingReader{})))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "reading line 2") {
		t.Errorf("unreadable body: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest("POST", recommended.Path, strings.NewReader(`{"uid": "a", "recommended": []}`))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("multipart: %d %s", rec.Code, rec.Body)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// TestMainBidderUsage: -bidder must be an http(s) URL, and the flags of a
// store of its own do not go with it.
func TestMainBidderUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-bidder", "127.0.0.1:9091"},
		{"-bidder", "ftp://x"},
		{"-bidder", "http://127.0.0.1:9091", "-config", "x.yaml"},
		{"-bidder", "http://127.0.0.1:9091", "-workers", "2"},
	} {
		err := recommended.Main(context.Background(), append([]string{"-in", "-"}, args...), io.Discard, io.Discard)
		if !errors.Is(err, recommended.ErrUsage) {
			t.Errorf("%q: %v, want ErrUsage", args, err)
		}
	}
}
