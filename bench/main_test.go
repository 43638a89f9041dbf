package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/internal/childproc"
)

// helperEnv makes the test binary act as a trivial fasthttp server when
// re-executed by startHelperServer, so a test can measure the generator's
// CPU without the server's.
const helperEnv = "RTBD_BENCH_HELPER_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelperServer())
	}
	os.Exit(m.Run())
}

// runHelperServer serves 200 "ok" on 127.0.0.1:0, prints "ADDR host:port",
// and serves until SIGTERM (or its parent's death: childproc).
func runHelperServer() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetBodyString("ok")
	}}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 1
}

// startHelperServer starts the helper subprocess and returns its address and
// pid; it is stopped at test cleanup.
func startHelperServer(t testing.TB) (addr string, pid int) {
	t.Helper()
	self, err := childproc.Self()
	if err != nil {
		t.Fatal(err)
	}
	p, err := childproc.Start(childproc.Spec{Name: "helper server", Path: self, Args: []string{"-test.run=^$"}, Env: []string{helperEnv + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	err = p.WaitReady(context.Background(), 10*time.Second, func(context.Context) error {
		for _, l := range strings.Split(p.Tail(), "\n") {
			if a, ok := strings.CutPrefix(l, "ADDR "); ok {
				addr = a
				return nil
			}
		}
		return errors.New("no address yet")
	})
	if err != nil {
		t.Fatal(err)
	}
	return addr, p.PID()
}

// startServer serves h on 127.0.0.1:0 in-process until cleanup, which
// shuts it down and fails t if it has not stopped within 5 s.
func startServer(t testing.TB, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
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
