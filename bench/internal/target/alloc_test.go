//go:build !race

package target

import (
	"context"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bench"
)

// TestHTTPDoAllocs pins the allocations of one HTTP target request in steady
// state (pooled request/response, body built in the worker's buffer, kept
// connection): the generator must not add garbage per request.
func TestHTTPDoAllocs(t *testing.T) {
	addr := startHTTP(t, func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("bid") })
	ht, err := NewHTTP(HTTPOptions{
		URL:    "http://" + addr + "/bid",
		Header: map[string]string{"X-Openrtb-Version": "2.6"},
		Body:   func(w *bench.Worker, dst []byte) []byte { return append(dst, `{"id":"1"}`...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	w := bench.NewWorker(0, 0)
	ctx := context.Background()
	for i := 0; i < 100; i++ { // warm pools and the connection
		w.Deadline = time.Now().Add(5 * time.Second)
		if got := ht.Do(ctx, w); got != bench.OK {
			t.Fatalf("warm-up: %v", got)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		w.Deadline = time.Now().Add(5 * time.Second)
		if got := ht.Do(ctx, w); got != bench.OK {
			t.Fatalf("do: %v", got)
		}
	})
	if allocs > 1 {
		t.Fatalf("HTTP target allocates %.1f objects per request, want <= 1", allocs)
	}
	t.Logf("%.2f allocs per request", allocs)
}
