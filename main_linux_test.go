//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rtbd/rtbd/internal/childproc"
)

// holdLockEnv makes the test binary a process that holds the fcntl lock
// (as Pebble takes it) of the file it names until SIGTERM.
const holdLockEnv = "RTBDTEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if os.Getenv(asRtbdEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if path := os.Getenv(holdLockEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("locked")
		<-term
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDataDirLockedOnce: a second bidder on a data dir another process
// holds fails with an error that names the data dir and the other holder,
// printed once, without a stack trace.
func TestDataDirLockedOnce(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "bidder")
	args := bidderArgs(t, dataDir)
	// Another process (this test binary again) holds the user store's
	// LOCK, as another rtbd would.
	if err := os.MkdirAll(filepath.Join(dataDir, "users"), 0o755); err != nil {
		t.Fatal(err)
	}
	holder, err := childproc.Start(childproc.Spec{Name: "lock holder", Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{holdLockEnv + "=" + filepath.Join(dataDir, "users", "LOCK")}})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Stop(10 * time.Second)
	err = holder.WaitReady(context.Background(), 30*time.Second, func(context.Context) error {
		if holder.Tail() != "locked" {
			return fmt.Errorf("lock holder: %q", holder.Tail())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	logged := captureStderr(t) // the logger's output
	var errOut bytes.Buffer
	code := run(append(args, "-set", "log.format=console"), io.Discard, &errOut)
	logs := logged()
	all := string(logs) + errOut.String()
	if code != exitFailure {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailure, all)
	}
	if n := strings.Count(all, "bidder.data_dir is locked"); n != 1 {
		t.Errorf("the error is printed %d times, want once:\n%s", n, all)
	}
	if !strings.Contains(errOut.String(), "another process holds "+dataDir) {
		t.Errorf("the error does not name the data dir and its holder:\n%s", errOut.String())
	}
	if strings.Contains(all, "main.run") || strings.Contains(all, ".go:") && strings.Contains(all, "\n\t/") {
		t.Errorf("a stack trace is printed:\n%s", all)
	}
}
