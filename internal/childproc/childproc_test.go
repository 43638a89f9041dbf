package childproc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rtbd/rtbd/internal/childproc"
)

// role makes the test binary act as a child when re-executed.
const role = "CHILDPROC_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(role) {
	case "server":
		os.Exit(server(os.Args[1]))
	case "fail":
		fmt.Println("boom: no config")
		os.Exit(3)
	case "deaf":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("deaf")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// server serves /readyz on 127.0.0.1:0, writes its address to addrFile and
// exits 0 on SIGTERM.
func server(addrFile string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
		return 1
	}
	fmt.Println("serving")
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	<-c
	return 0
}

func start(t *testing.T, r string, args ...string) (*childproc.Proc, string) {
	t.Helper()
	self, err := childproc.Self()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), r+".log")
	p, err := childproc.Start(childproc.Spec{Name: r, Path: self, Args: args, Env: []string{role + "=" + r}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p, log
}

func TestReadyAndGracefulStop(t *testing.T) {
	addrFile := filepath.Join(t.TempDir(), "addr")
	p, log := start(t, "server", addrFile)
	var addr string
	err := p.WaitReady(context.Background(), 30*time.Second, childproc.FileReady(addrFile, func(b []byte) error {
		if len(b) == 0 {
			return errors.New("empty")
		}
		addr = string(b)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, probe := range []func(context.Context) error{childproc.PortReady(addr), childproc.HTTPReady("http://" + addr + "/readyz")} {
		if err := p.WaitReady(context.Background(), 10*time.Second, probe); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v, want a clean exit", err)
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "serving") {
		t.Errorf("log %q lacks the child's output", b)
	}
}

func TestExitBeforeReady(t *testing.T) {
	p, _ := start(t, "fail")
	err := p.WaitReady(context.Background(), 30*time.Second, childproc.PortReady("127.0.0.1:1"))
	if !errors.Is(err, childproc.ErrChild) || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "boom: no config") {
		t.Fatalf("got %v, want the exit with the child's last output", err)
	}
	if code := p.State().ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	p, _ := start(t, "deaf")
	if err := p.WaitReady(context.Background(), 30*time.Second, func(context.Context) error {
		if !strings.Contains(p.Tail(), "deaf") {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not exit") {
		t.Fatalf("Stop of a child ignoring SIGTERM: %v, want the kill reported", err)
	}
	if ws, ok := p.State().Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("state %v, want killed by SIGKILL", p.State())
	}
}
