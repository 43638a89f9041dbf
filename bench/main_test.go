package bench_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bench/internal/loopback"
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
// and exits when its stdin closes (the parent test ended or died).
func runHelperServer() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetBodyString("ok")
	}}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("ADDR %s\n", ln.Addr())
	buf := make([]byte, 64)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return 0
		}
	}
}

// startHelperServer starts the helper subprocess and returns its address and
// pid; it is stopped at test cleanup.
func startHelperServer(t testing.TB) (addr string, pid int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				lines <- a
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case addr = <-lines:
	case <-exited:
		t.Fatal("helper server exited before printing its address")
	case <-time.After(10 * time.Second):
		t.Fatal("helper server did not start within 10 s")
	}
	return addr, cmd.Process.Pid
}

// startServer serves h on 127.0.0.1:0 in-process until cleanup.
func startServer(t testing.TB, h fasthttp.RequestHandler) string {
	t.Helper()
	return loopback.Serve(t, &fasthttp.Server{Handler: h})
}
