// Package childproc starts and stops the child processes of the bench
// harness and of the tests: an rtbd binary (built, this executable, or
// the test binary re-executed in a role), redis-server, a helper server.
//
// Start runs a Spec with its arguments, extra environment and working
// directory; the child's combined output goes to a log file (Spec.Log)
// and to a bounded tail kept for error messages. A child dies with the
// thread that started it (Pdeathsig: an aborted harness leaves no servers
// behind) and runs in its own process group (a terminal's ^C reaches only
// the parent, which stops its children in order). WaitReady polls a
// readiness probe (HTTPReady for /readyz, PortReady for a TCP port,
// FileReady for an address file) until it passes, the child exits or the
// time is up. Stop sends SIGTERM and, after a grace period, SIGKILL.
//
// A Proc is safe for concurrent use.
package childproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ErrChild is wrapped when a child fails to start, to become ready, or
// exits before it was ready.
var ErrChild = errors.New("childproc: child process")

// Spec is what to start.
type Spec struct {
	// Name names the child in errors ("bidder1", "node2").
	Name string
	// Path is the executable (see Self and Build).
	Path string
	Args []string
	// Env is added to the parent's environment (BareEnv: is the whole
	// environment).
	Env     []string
	BareEnv bool
	// Dir is the working directory; empty: the parent's.
	Dir string
	// Log, when set, is a file the child's stdout and stderr are appended to.
	Log string
	// Stdin, when set, is the child's standard input (an *os.File, e.g.
	// the read end of os.Pipe, is handed over as is).
	Stdin io.Reader
	// Stdout and Stderr, when set, also get the child's stdout and
	// stderr (beside the log and the tail).
	Stdout, Stderr io.Writer
	// TailBytes bounds the output kept for errors; zero means 16 KiB.
	TailBytes int
}

// Proc is a started child.
type Proc struct {
	name string
	cmd  *exec.Cmd
	tail *tail
	done chan struct{}
	err  error // from Wait, valid after done is closed
}

// Start starts s.
func Start(s Spec) (*Proc, error) {
	if s.TailBytes <= 0 {
		s.TailBytes = 16 << 10
	}
	p := &Proc{name: s.Name, tail: &tail{max: s.TailBytes}, done: make(chan struct{})}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	switch {
	case s.BareEnv:
		cmd.Env = append([]string{}, s.Env...)
	case len(s.Env) > 0:
		cmd.Env = append(os.Environ(), s.Env...)
	}
	var out io.Writer = p.tail
	var logf *os.File
	if s.Log != "" {
		f, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: log: %w", ErrChild, s.Name, err)
		}
		logf, out = f, io.MultiWriter(p.tail, f)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, out, out
	if s.Stdout != nil {
		cmd.Stdout = io.MultiWriter(out, s.Stdout)
	}
	if s.Stderr != nil {
		cmd.Stderr = io.MultiWriter(out, s.Stderr)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		if logf != nil {
			logf.Close()
		}
		return nil, fmt.Errorf("%w: %s: start %s: %w", ErrChild, s.Name, s.Path, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		if logf != nil {
			logf.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Name is the Spec's name.
func (p *Proc) Name() string { return p.name }

// PID is the child's process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the child's exit error (nil for exit status 0); valid once Done
// is closed.
func (p *Proc) Err() error { <-p.done; return p.err }

// State is the exited child's process state (exit code, rusage); valid
// once Done is closed.
func (p *Proc) State() *os.ProcessState { <-p.done; return p.cmd.ProcessState }

// Tail is the last output of the child (at most Spec.TailBytes).
func (p *Proc) Tail() string { return p.tail.String() }

// Signal sends sig to the child.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Failure describes the child's exit with the tail of its output.
func (p *Proc) Failure(what string) error {
	return fmt.Errorf("%w: %s (pid %d) %s: %v; last output:\n%s", ErrChild, p.name, p.PID(), what, p.err, p.Tail())
}

// Wait waits up to d for the exit and returns its error; after d it
// kills the child and says so.
func (p *Proc) Wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		p.Kill()
		return fmt.Errorf("%w: %s (pid %d) did not exit within %v", ErrChild, p.name, p.PID(), d)
	}
}

// Stop sends SIGTERM, waits up to grace, then SIGKILL; it returns the
// exit error of a child that exited within grace (nil: a clean exit).
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	return p.Wait(grace)
}

// Kill sends SIGKILL and waits (up to 10 s) for the exit.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// WaitReady calls ready every 50 ms (each call bounded by 1 s) until it
// returns nil, the child exits, ctx ends or timeout passes.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		last := ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.Failure("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("%w: %s (pid %d) not ready within %v: %v; last output:\n%s", ErrChild, p.name, p.PID(), timeout, last, p.Tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// HTTPReady is a probe passing when GET url answers 200 (a /readyz).
func HTTPReady(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		return nil
	}
}

// PortReady is a probe passing when addr accepts a TCP connection.
func PortReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// FileReady is a probe passing when the file at path exists and parse
// accepts its content (a child writing its listen addresses there).
func FileReady(path string, parse func([]byte) error) func(context.Context) error {
	return func(context.Context) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return parse(b)
	}
}

// Self is the running executable: the rtbd binary, or a test binary that
// acts as one when re-executed with its role in the environment.
func Self() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("childproc: locate this executable: %w", err)
	}
	return exe, nil
}

// Build builds the main package in dir (the module root for rtbd) into
// out with the go command of $GOROOT (else the one in PATH), and returns
// out as an absolute path.
func Build(ctx context.Context, dir, out string) (string, error) {
	out, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("childproc: %w", err)
	}
	goCmd := "go"
	if root := os.Getenv("GOROOT"); root != "" {
		if _, err := os.Stat(filepath.Join(root, "bin", "go")); err == nil {
			goCmd = filepath.Join(root, "bin", "go")
		}
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("childproc: go build in %s: %w\n%s", dir, err, b)
	}
	return out, nil
}

// tail keeps the last max bytes written to it. Safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
