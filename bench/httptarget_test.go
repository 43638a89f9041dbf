package bench

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// An HTTP target whose URI is empty (a win notice load before any bid
// was answered) sends nothing and counts ErrOther; once a notice URL is
// harvested it sends it.
func TestHTTPTargetNothingToSend(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	var ring nurlRing
	win := newHTTPTarget("win", strings.TrimPrefix(srv.URL, "http://"), "GET", 1, func(w *Worker, dst []byte) []byte {
		dst, _ = ring.pick(w.Rand, dst)
		return dst
	}, nil, classifyWin)
	w := &Worker{Rand: rand.New(rand.NewPCG(1, 1))}
	if out := win.Do(context.Background(), w); out != ErrOther || got.Load() != 0 {
		t.Fatalf("empty ring: %v after %d requests, want other without a request", out, got.Load())
	}
	ring.harvest([]byte(`{"nurl":"http://h/win?t=a"}`))
	if out := win.Do(context.Background(), w); out != OK || got.Load() != 1 {
		t.Fatalf("harvested notice: %v after %d requests, want ok after 1", out, got.Load())
	}
}
