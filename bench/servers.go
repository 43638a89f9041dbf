package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/internal/childproc"
)

// DefaultRedisServer is the redis-server binary the scenarios start.
const DefaultRedisServer = "/usr/bin/redis-server"

// server is a child process (internal/childproc's: it dies with the
// harness and keeps its output in a log file and a bounded tail) serving
// on loopback ports the harness chose.
type server struct {
	*childproc.Proc
	name  string
	exe   string
	args  func(port, admin int) []string
	ready func(ctx context.Context, s *server) error
	log   string
	env   []string // added to the child's environment
	port  int      // main port (gRPC, HTTP, redis)
	admin int      // admin port, 0 if none
}

// Addr is 127.0.0.1:port.
func (s *server) Addr() string { return loopback(s.port) }

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// start starts the server on free ports, or on its former ones with
// keepPorts (a restart), retrying when a fresh port was taken meanwhile.
func (s *server) start(ctx context.Context, keepPorts bool) error {
	var err error
	for range 3 {
		if !keepPorts || s.port == 0 {
			if s.port, err = freePort(); err != nil {
				return err
			}
			if s.admin, err = freePort(); err != nil {
				return err
			}
		}
		s.Proc, err = childproc.Start(childproc.Spec{Name: s.name, Path: s.exe, Args: s.args(s.port, s.admin), Env: s.env, Log: s.log})
		if err != nil {
			return err
		}
		err = s.WaitReady(ctx, 60*time.Second, func(ctx context.Context) error { return s.ready(ctx, s) })
		if err == nil {
			return nil
		}
		s.Kill()
		// The port was taken between freePort and the child's listen.
		if keepPorts || !strings.Contains(strings.ToLower(s.Tail()), "address already in use") {
			return err
		}
	}
	return err
}

// stop sends SIGTERM, waits up to grace, then SIGKILL.
func (s *server) stop(grace time.Duration) { _ = s.Stop(grace) }

// launch starts the server on fresh ports, says so in logf, and adds its
// stop to cleanups.
func (s *server) launch(ctx context.Context, cleanups *cleanupStack, logf func(string, ...any)) error {
	if err := s.start(ctx, false); err != nil {
		return err
	}
	logf("started %s (pid %d, %s)", s.name, s.PID(), s.Addr())
	cleanups.add(func() { s.stop(15 * time.Second) })
	return nil
}

// watch is the server's process, to be measured during a run.
func (s *server) watch() Watch {
	return Watch{Processes: []WatchProcess{{Name: s.name, PID: s.PID()}}}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago
// (start retries when a child loses the race for it).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// logPath names a child's log file in dir ("" when dir is "").
func logPath(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name+".log")
}

// rtbdServer describes an rtbd process with the flags every mode shares:
// its admin listener (its /readyz is the readiness probe), warn-level JSON
// logs, and uid= trusted on /event (the pixel events name the demo users
// in uid=, unsigned).
func rtbdServer(name, exe, logDir string, args func(port int) []string) *server {
	return &server{
		name: name, exe: exe, log: logPath(logDir, name), ready: httpReady,
		args: func(port, admin int) []string {
			return append([]string{"-admin-listen", loopback(admin), "-set", "log.level=warn", "-set", "log.format=json",
				"-set", "user.trust_query_uid=true"}, args(port)...)
		},
	}
}

// newCatalogNode describes `rtbd -mode=catalog` serving dataDir.
func newCatalogNode(name, exe, dataDir, logDir string, extra []string) *server {
	return rtbdServer(name, exe, logDir, func(port int) []string {
		return append([]string{"-mode=catalog", "-data", dataDir, "-grpc-listen", loopback(port)}, extra...)
	})
}

// newBidder describes `rtbd -config CFG` (bidder mode) with the given
// extra flags (e.g. -catalog static:///...).
func newBidder(name, exe, config, logDir string, extra []string) *server {
	return rtbdServer(name, exe, logDir, func(port int) []string {
		return append([]string{"-config", config, "-http-listen", loopback(port),
			"-set", "bidder.public_url=http://" + loopback(port),
			// The workload's imps are secure, as Prebid Server's are: an
			// https base for their URLs (win notices replay only the
			// path and query, so nothing dials it).
			"-set", "bidder.secure_public_url=https://" + loopback(port),
			// The harness is one source speaking for every demo user:
			// no per-source limit on its pixel events.
			"-set", "bidder.rate_limits.event.rate=0"}, extra...)
	})
}

// httpReady asks the admin listener's /readyz for 200.
func httpReady(ctx context.Context, s *server) error {
	return childproc.HTTPReady("http://" + loopback(s.admin) + "/readyz")(ctx)
}

// newRedisServer describes redis-server on loopback with persistence off.
func newRedisServer(exe, dir, logDir string) *server {
	return &server{
		name: "redis-server", exe: exe, log: logPath(logDir, "redis-server"),
		args: func(port, _ int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}
		},
		ready: func(ctx context.Context, s *server) error {
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
			defer rdb.Close()
			return rdb.Ping(ctx).Err()
		},
	}
}

// executable returns exe, or this process's executable when exe is "".
func executable(exe string) (string, error) {
	if exe != "" {
		return exe, nil
	}
	return childproc.Self()
}

// makeWorkDir returns dir, created if needed, or else a new temporary
// directory whose removal it adds to cleanups.
func makeWorkDir(dir string, cleanups *cleanupStack) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
		return dir, nil
	}
	dir, err := os.MkdirTemp("", "rtbd-bench-")
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	cleanups.add(func() { os.RemoveAll(dir) })
	return dir, nil
}

// cleanupStack holds the undo steps of a run in the order they were
// added; run calls them last first.
type cleanupStack []func()

func (c *cleanupStack) add(f func()) { *c = append(*c, f) }

func (c *cleanupStack) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

// logTo returns a printf to w that starts each line with prefix.
func logTo(w io.Writer, prefix string) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, prefix+format+"\n", args...) }
}
