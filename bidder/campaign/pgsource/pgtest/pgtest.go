// Package pgtest starts a throwaway PostgreSQL server for tests: initdb in
// a temporary directory, postgres on a free loopback port (and a socket in
// that directory), stopped and removed at the test's end.
//
// initdb refuses to run as root, so as root the server runs as the user
// "nobody" (and owns its directory). The server binaries are found in
// $(pg_config --bindir), then /usr/lib/postgresql/*/bin (Debian keeps them
// there, off PATH), then PATH. Without them the test is skipped, unless
// the environment has CI=true: then it fails, so that a CI without
// postgresql cannot pass by skipping (`make deps` installs it).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtbd/rtbd/bidder/campaign"
	"github.com/rtbd/rtbd/bidder/campaign/pgsource"
)

// Server is a running test PostgreSQL.
type Server struct {
	// DSN connects as the superuser "rtbd" to the database "postgres"
	// over TCP, without a password.
	DSN string
	// Port is the loopback TCP port.
	Port int
}

// Start starts a PostgreSQL server for t, stopped at t's end.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: PostgreSQL is required in CI (CI=true): %v (make deps installs postgresql)", err)
		}
		t.Skipf("pgtest: skipping, PostgreSQL not installed: %v (make deps installs postgresql)", err)
	}
	dir, err := os.MkdirTemp("", "rtbd-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The server may run as another user: it must reach and own its dirs.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	cred, err := credential()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "PGTZ=UTC")
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}
	if out, err := run("initdb", "-D", data, "-U", "rtbd", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	srv := run("postgres", "-D", data, "-p", strconv.Itoa(port), "-k", sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=50")
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatalf("pgtest: postgres: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	})
	s := &Server{DSN: fmt.Sprintf("postgres://rtbd@127.0.0.1:%d/postgres?sslmode=disable", port), Port: port}
	// Bounded wait for the server to accept connections.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.DSN)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return s
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("pgtest: postgres exited: %v\n%s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("pgtest: postgres not accepting connections: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Exec runs SQL statements on s, failing t on error.
func (s *Server) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// LoadFile writes the campaigns of the campaigns file at path into s's
// campaigns table (pgsource.Load), failing t on error, and returns them as
// the file has them with their Specs.
func (s *Server) LoadFile(t testing.TB, path string) (*campaign.Set, []campaign.Spec) {
	t.Helper()
	set, err := campaign.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := campaign.Specs(set.All())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pgsource.Load(ctx, s.DSN, specs); err != nil {
		t.Fatal(err)
	}
	return set, specs
}

// binDir returns the directory holding initdb and postgres.
func binDir() (string, error) {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(versions) // newest first
	dirs = append(dirs, versions...)
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres in $(pg_config --bindir), /usr/lib/postgresql/*/bin or PATH")
}

func isExec(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// credential is the user the server runs as: nil (this process's) unless
// this process is root, then nobody.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, initdb needs an unprivileged user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: user nobody: uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// freePort returns a loopback TCP port free at the time of the call.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
