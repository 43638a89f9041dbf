package spendtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RedisServerPath is the redis-server binary the tests run.
const RedisServerPath = "/usr/bin/redis-server"

// Redis is a redis-server process owned by one test (package). Methods are
// safe for concurrent use.
type Redis struct {
	// Addr is 127.0.0.1:port; it stays the same across Kill and Restart.
	Addr string

	tb      testing.TB
	port    int
	dir     string
	persist bool
	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool
}

// RedisOptions configures StartRedis.
type RedisOptions struct {
	// Persist turns on the append-only file with fsync on every write, so a
	// Kill (SIGKILL) and Restart keep the data, like a production Redis
	// with AOF. Default: no persistence (--save '' --appendonly no).
	Persist bool
}

// StartRedis starts redis-server on a free 127.0.0.1 port and stops it
// when tb ends. It fails tb when the binary is missing (make test installs
// it) or the server is not answering within 10s.
func StartRedis(tb testing.TB, opts RedisOptions) *Redis {
	tb.Helper()
	if _, err := os.Stat(RedisServerPath); err != nil {
		tb.Fatalf("spendtest: %s not found (apt-get install redis-server; make test does it): %v", RedisServerPath, err)
	}
	port, err := freePort()
	if err != nil {
		tb.Fatalf("spendtest: free port: %v", err)
	}
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), tb: tb, port: port, dir: tb.TempDir(), persist: opts.Persist}
	if err := r.start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Kill() })
	return r
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (r *Redis) start() error {
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--dir", r.dir, "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning"}
	if r.persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(RedisServerPath, args...)
	cmd.Dir = r.dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("spendtest: start redis-server: %w", err)
	}
	r.mu.Lock()
	r.cmd, r.stopped = cmd, false
	r.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := r.ping(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Kill()
	return fmt.Errorf("spendtest: redis-server on %s not ready within 10s", r.Addr)
}

// ping sends PING over a raw connection (no client library), 1s bound.
func (r *Redis) ping() error {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("spendtest: ping answered %q", line)
	}
	return nil
}

// Kill stops the server with SIGKILL (a crash) and waits for it to exit.
func (r *Redis) Kill() {
	r.mu.Lock()
	cmd := r.cmd
	already := r.stopped
	r.stopped = true
	r.mu.Unlock()
	if cmd == nil || already {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // in case it was paused
	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
}

// Restart starts the server again on the same port after Kill.
func (r *Redis) Restart() {
	r.tb.Helper()
	if err := r.start(); err != nil {
		r.tb.Fatal(err)
	}
}

// Pause freezes the server (SIGSTOP): connections stay open and nothing is
// answered, like a slow or hung Redis. Resume undoes it.
func (r *Redis) Pause() { r.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (r *Redis) Resume() { r.signal(syscall.SIGCONT) }

func (r *Redis) signal(s syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil && !r.stopped {
		_ = r.cmd.Process.Signal(s)
	}
}

// WaitFor polls cond every 2ms until it holds, failing tb after d.
func WaitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
