package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrChild is wrapped when a process the harness started fails to start,
// to become ready, or dies.
var ErrChild = errors.New("bench: child process")

// child is a process the harness started (a catalog node, a bidder,
// redis-server). Its combined output is kept in a bounded tail for error
// messages and, when logPath is set, written to that file.
type child struct {
	name   string
	cmd    *exec.Cmd
	tail   *tailBuffer
	log    *os.File
	exited chan struct{}
	err    error // from Wait, valid after exited is closed
}

// startChild starts exe with args. The child gets SIGKILL if the harness's
// thread that started it dies (Pdeathsig), so an aborted bench leaves no
// servers behind.
// The child gets the harness's environment plus env.
func startChild(name, exe string, args []string, logPath string, env ...string) (*child, error) {
	c := &child{name: name, tail: &tailBuffer{max: 16 << 10}, exited: make(chan struct{})}
	cmd := exec.Command(exe, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out io.Writer = c.tail
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: log: %w", ErrChild, name, err)
		}
		c.log = f
		out = io.MultiWriter(c.tail, f)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		if c.log != nil {
			c.log.Close()
		}
		return nil, fmt.Errorf("%w: %s: start %s: %w", ErrChild, name, exe, err)
	}
	c.cmd = cmd
	go func() {
		c.err = cmd.Wait()
		if c.log != nil {
			c.log.Close()
		}
		close(c.exited)
	}()
	return c, nil
}

// PID is the child's process id.
func (c *child) PID() int { return c.cmd.Process.Pid }

// exitedNow reports whether the child has exited.
func (c *child) exitedNow() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// failure describes the child's exit with the tail of its output.
func (c *child) failure(what string) error {
	return fmt.Errorf("%w: %s (pid %d) %s: %v; last output:\n%s", ErrChild, c.name, c.PID(), what, c.err, c.tail.String())
}

// stop sends SIGTERM, waits up to grace, then SIGKILL. It returns once the
// process is gone.
func (c *child) stop(grace time.Duration) {
	if c.exitedNow() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		c.kill()
	}
}

// kill sends SIGKILL and waits (bounded) for the exit.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
	}
}

// waitReady polls ready every 50 ms until it returns nil, the child exits,
// ctx ends, or timeout passes.
func (c *child) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		last = ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-c.exited:
			return c.failure("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("%w: %s (pid %d) not ready within %v: %v; last output:\n%s", ErrChild, c.name, c.PID(), timeout, last, c.tail.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// addrInUse reports whether the child's output says its port was taken
// (between freePort and its listen).
func (c *child) addrInUse() bool {
	return strings.Contains(strings.ToLower(c.tail.String()), "address already in use")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// A child told to listen on it may still lose a race for it: callers retry
// on "address already in use".
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it. Safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
