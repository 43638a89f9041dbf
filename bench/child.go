package bench

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rtbd/rtbd/internal/childproc"
)

// ErrChild is wrapped when a process the harness started fails to start,
// to become ready, or dies.
var ErrChild = childproc.ErrChild

// child is a process the harness started (a catalog node, a bidder,
// redis-server, an ingest): internal/childproc's, which dies with the
// harness and keeps its output in a log file and a bounded tail.
type child struct{ *childproc.Proc }

// startChild starts exe with args, its output appended to logPath (none
// when ""), with the harness's environment plus env.
func startChild(name, exe string, args []string, logPath string, env ...string) (*child, error) {
	p, err := childproc.Start(childproc.Spec{Name: name, Path: exe, Args: args, Env: env, Log: logPath})
	if err != nil {
		return nil, err
	}
	return &child{p}, nil
}

// stop sends SIGTERM, waits up to grace, then SIGKILL.
func (c *child) stop(grace time.Duration) { _ = c.Stop(grace) }

// addrInUse reports whether the child's output says its port was taken
// (between freePort and its listen).
func (c *child) addrInUse() bool {
	return strings.Contains(strings.ToLower(c.Tail()), "address already in use")
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
