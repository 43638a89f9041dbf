// Package loopback serves test handlers on 127.0.0.1 for the harness's
// tests.
package loopback

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// Serve serves srv on 127.0.0.1:0 until t's cleanup, which shuts it down
// and fails t if it has not stopped within 5 s. It returns the address.
func Serve(t testing.TB, srv *fasthttp.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = srv.Serve(ln)
		close(done)
	}()
	t.Cleanup(func() {
		_ = srv.Shutdown()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server did not stop within 5 s")
		}
	})
	return ln.Addr().String()
}
