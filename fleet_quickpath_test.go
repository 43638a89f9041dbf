//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/internal/childproc"
)

// asRtbdEnv makes the test binary rtbd itself (see TestMain): run with its
// arguments.
const asRtbdEnv = "RTBDTEST_AS_RTBD"

// quickPathBlock returns the commands of the sh block of bidder/FLEET.md's
// "Quick path: a fleet on one host".
func quickPathBlock(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("bidder", "FLEET.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Quick path: a fleet on one host")
	if !ok {
		t.Fatal(`bidder/FLEET.md has no "## Quick path: a fleet on one host"`)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the quick path has no sh block")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// shellWords splits a command line as sh does for what the quick path
// uses: spaces, and single quotes.
func shellWords(line string) []string {
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			in, quoted = !in, true
		case r == ' ' && !in:
			if cur.Len() > 0 || quoted {
				out = append(out, cur.String())
			}
			cur.Reset()
			quoted = false
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 || quoted {
		out = append(out, cur.String())
	}
	return out
}

func freeTCPPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestFleetQuickPath runs the quick path of bidder/FLEET.md as written,
// in a fresh directory holding configs/fleet.yaml, on free ports instead
// of the fixed ones (rtbd is this test binary, curl
// and redis-server the system's): both bidders must answer a bid from
// their users in Redis through the catalog node.
func TestFleetQuickPath(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short: starts Redis, a catalog node and two bidders")
	}
	for _, bin := range []string{"redis-server", "curl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found (make deps installs it): %v", bin, err)
		}
	}
	dir := t.TempDir()
	ports := map[string]string{}
	for _, p := range []string{"6379", "9090", "9092", "8081", "8082", "9191", "9192"} {
		ports[p] = freeTCPPort(t)
	}
	localize := func(s string) string {
		for from, to := range ports {
			s = strings.ReplaceAll(s, "127.0.0.1:"+from, "127.0.0.1:"+to)
			s = strings.ReplaceAll(s, "--port "+from, "--port "+to)
		}
		return s
	}
	fleet, err := os.ReadFile(filepath.Join("configs", "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "configs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "configs", "fleet.yaml"), []byte(localize(string(fleet))), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := []string{"RTBD_LOG_FORMAT=json"} // beside the test's environment
	var bg []*childproc.Proc
	t.Cleanup(func() {
		for i := len(bg) - 1; i >= 0; i-- {
			_ = bg[i].Stop(15 * time.Second)
		}
	})
	// spec is the child of one step: rtbd is this test binary in its role.
	spec := func(words []string) childproc.Spec {
		s := childproc.Spec{Name: words[0], Path: words[0], Args: words[1:], Env: extra, Dir: dir}
		if words[0] == "rtbd" {
			s.Path, s.Env = os.Args[0], append(append([]string(nil), extra...), asRtbdEnv+"=1")
		}
		return s
	}
	command := func(ctx context.Context, words []string) *exec.Cmd {
		s := spec(words)
		c := exec.CommandContext(ctx, s.Path, s.Args...)
		c.Env, c.Dir = append(os.Environ(), s.Env...), dir
		return c
	}
	bids := 0
	for n, line := range quickPathBlock(t) {
		line = localize(line)
		background := strings.HasSuffix(line, " &")
		words := shellWords(strings.TrimSuffix(line, " &"))
		switch {
		case words[0] == "export":
			extra = append(extra, words[1])
		case background:
			sp := spec(words)
			sp.Log = filepath.Join(dir, fmt.Sprintf("step%d.log", n))
			p, err := childproc.Start(sp)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			bg = append(bg, p)
			t.Cleanup(func() {
				if t.Failed() {
					b, _ := os.ReadFile(sp.Log)
					t.Logf("%s:\n%s", line, b)
				}
			})
			if words[0] == "redis-server" { // the next step talks to it
				if err := p.WaitReady(context.Background(), 10*time.Second, childproc.PortReady("127.0.0.1:"+ports["6379"])); err != nil {
					t.Fatal(err)
				}
			}
		case strings.Contains(line, "/readyz"):
			// Not ready yet is an answer too: ask again until both verdicts
			// are "ready".
			var out []byte
			deadline := time.Now().Add(60 * time.Second)
			for {
				out, _ = command(context.Background(), words).Output()
				ready := 0
				for _, l := range strings.Split(string(out), "\n") {
					if l == "ready" {
						ready++
					}
				}
				if ready == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: not both ready after 60s:\n%s", line, out)
				}
				time.Sleep(200 * time.Millisecond)
			}
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			out, err := command(ctx, words).CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			if words[0] == "curl" && strings.Contains(line, "/openrtb2/bid") {
				if !bytes.Contains(out, []byte(`"seatbid":[{`)) {
					t.Fatalf("%s: no bid:\n%s", line, out)
				}
				bids++
			}
		}
	}
	if bids != 2 {
		t.Fatalf("the quick path asked for %d bids, want one from each of two bidders", bids)
	}
}
