package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rtbd/rtbd/internal/childproc"
)

// readyTimeout bounds how long a started server may take to become ready.
const readyTimeout = 60 * time.Second

// server is a child process serving on loopback ports the harness chose.
type server struct {
	*child
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
func (s *server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// start starts the server on free ports (fresh ones unless keepPorts and
// ports were chosen before: a restart reuses them), retrying when a port
// was taken between choosing and listening.
func (s *server) start(ctx context.Context, keepPorts bool) error {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		if !keepPorts || s.port == 0 {
			var err error
			if s.port, err = freePort(); err != nil {
				return err
			}
			if s.admin, err = freePort(); err != nil {
				return err
			}
		}
		c, err := startChild(s.name, s.exe, s.args(s.port, s.admin), s.log, s.env...)
		if err != nil {
			return err
		}
		s.child = c
		err = c.WaitReady(ctx, readyTimeout, func(ctx context.Context) error { return s.ready(ctx, s) })
		if err == nil {
			return nil
		}
		last = err
		c.Kill()
		if !c.addrInUse() || keepPorts {
			return err
		}
	}
	return last
}

// logPath names a child's log file in dir ("" when dir is "").
func logPath(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name+".log")
}

// newCatalogNode describes `rtbd -mode=catalog` serving dataDir.
func newCatalogNode(name, exe, dataDir, logDir string, extra []string) *server {
	return &server{
		name: name, exe: exe, log: logPath(logDir, name),
		args: func(port, admin int) []string {
			a := []string{"-mode=catalog", "-data", dataDir,
				"-grpc-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				"-admin-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(admin)),
				"-set", "log.level=warn", "-set", "log.format=json",
				// The pixel events name the demo users in uid=, unsigned.
				"-set", "user.trust_query_uid=true"}
			return append(a, extra...)
		},
		ready: grpcHealthy,
	}
}

// grpcHealthy asks the server's gRPC health service for SERVING.
func grpcHealthy(ctx context.Context, s *server) error {
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health: %v", resp.Status)
	}
	return nil
}

// newBidder describes `rtbd -config CFG` (bidder mode) with the given
// extra flags (e.g. -catalog static:///...). It trusts the uid= of /event,
// so that the scenario's pixel events write the demo users' profiles.
func newBidder(name, exe, config, logDir string, extra []string) *server {
	return &server{
		name: name, exe: exe, log: logPath(logDir, name),
		args: func(port, admin int) []string {
			a := []string{"-config", config,
				"-http-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				"-admin-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(admin)),
				"-set", "bidder.public_url=http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				// The workload's imps are secure, as Prebid Server's are: an
				// https base for their URLs (win notices replay only the
				// path and query, so nothing dials it).
				"-set", "bidder.secure_public_url=https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				"-set", "log.level=warn", "-set", "log.format=json",
				// The pixel events name the demo users in uid=, unsigned.
				"-set", "user.trust_query_uid=true",
				// The harness is one source speaking for every demo user:
				// no per-source limit on its pixel events.
				"-set", "bidder.rate_limits.event.rate=0"}
			return append(a, extra...)
		},
		ready: httpReady,
	}
}

// httpReady asks the admin listener's /readyz for 200.
func httpReady(ctx context.Context, s *server) error {
	return childproc.HTTPReady("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.admin)) + "/readyz")(ctx)
}

// DefaultRedisServer is the redis-server binary the store scenario starts.
const DefaultRedisServer = "/usr/bin/redis-server"

// newRedisServer describes redis-server on loopback with persistence off.
func newRedisServer(exe, dir, logDir string) *server {
	return &server{
		name: "redis-server", exe: exe, log: logPath(logDir, "redis-server"),
		args: func(port, _ int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}
		},
		ready: func(ctx context.Context, s *server) error {
			d := net.Dialer{}
			c, err := d.DialContext(ctx, "tcp", s.Addr())
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte("PING\r\n")); err != nil {
				return err
			}
			b := make([]byte, 7)
			if _, err := io.ReadFull(c, b); err != nil {
				return err
			}
			if string(b) != "+PONG\r\n" {
				return fmt.Errorf("redis: PING answered %q", b)
			}
			return nil
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
