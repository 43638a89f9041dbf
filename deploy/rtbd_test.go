package deploy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// rtbdBin is the rtbd binary the tests check the kit against.
var rtbdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rtbd-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rtbdBin = os.Getenv("DEPLOY_BIN")
	if rtbdBin == "" {
		rtbdBin = filepath.Join(dir, "rtbd")
		cmd := exec.Command(goCommand(), "build", "-o", rtbdBin, ".")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building rtbd: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// goCommand is the go command of the toolchain running the tests.
func goCommand() string {
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// rtbd runs the binary with args and env (and nothing else of the test's
// environment but PATH and HOME) and returns its stdout and stderr.
func rtbd(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rtbdBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

var helpFlag = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)

// flagsOf returns the flags the help of an rtbd command lists (`rtbd -h`,
// `rtbd ingest -h`).
func flagsOf(t *testing.T, cmd ...string) map[string]bool {
	t.Helper()
	out, errOut, _ := rtbd(t, nil, append(cmd, "-h")...)
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(out+errOut, -1) {
		flags[m[1]] = true
	}
	if len(flags) < 3 {
		t.Fatalf("rtbd %s -h lists %d flags:\n%s%s", strings.Join(cmd, " "), len(flags), out, errOut)
	}
	return flags
}

// effectiveConfig is what `rtbd config` prints for the server args and
// environment: every setting after the file, the environment and the
// flags. It fails on an unknown key, an unknown RTBD_* variable, a bad
// value or an unreadable secret file, as the server would.
func effectiveConfig(t *testing.T, env []string, args ...string) (map[string]any, error) {
	t.Helper()
	out, errOut, err := rtbd(t, env, append([]string{"config"}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("rtbd config %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
		return nil, fmt.Errorf("rtbd config: %v", err)
	}
	return cfg, nil
}

// setting returns the value of a dotted key of an effective config.
func setting(t *testing.T, cfg map[string]any, key string) string {
	t.Helper()
	var v any = cfg
	for _, part := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("config has no %s", key)
		}
		if v, ok = m[part]; !ok {
			t.Fatalf("config has no %s", key)
		}
	}
	return fmt.Sprint(v)
}

func duration(t *testing.T, cfg map[string]any, key string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(setting(t, cfg, key))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return d
}

// adminRoutes reads the route table of bidder/REFERENCE.md (| route |
// listener | what |, the table the product's documentation test checks
// against the code) and returns the admin listener's paths by mode
// ("bidder", "catalog").
func adminRoutes(t *testing.T) map[string]map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "bidder", "REFERENCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	routes := map[string]map[string]bool{"bidder": {}, "catalog": {}}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.EqualFold(cells[0], "route") {
			in = true
			continue
		}
		if !in || len(cells) < 2 || !strings.HasPrefix(cells[0], "`") {
			continue
		}
		path := strings.Trim(cells[0], "`")
		if _, p, ok := strings.Cut(path, " "); ok {
			path = p
		}
		path, _, _ = strings.Cut(path, "?")
		switch cells[1] {
		case "admin":
			routes["bidder"][path], routes["catalog"][path] = true, true
		case "admin (bidder)":
			routes["bidder"][path] = true
		case "admin (catalog node)":
			routes["catalog"][path] = true
		}
	}
	if len(routes["bidder"]) == 0 || !routes["catalog"]["/metrics"] {
		t.Fatalf("no admin routes read from bidder/REFERENCE.md: %v", routes)
	}
	return routes
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitReady polls url until it answers 200, for at most a minute.
func waitReady(t *testing.T, url string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("process exited before %s answered: %v", url, p.err)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready within a minute", url)
}

// proc is a process started by start; done is closed when it has exited
// (err is then its exit).
type proc struct {
	done chan struct{}
	err  error
}

// start runs cmd in the background until the test ends (SIGINT, then a
// bounded wait and SIGKILL); its output goes to the test log on failure.
func start(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if cmd.Env == nil {
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), out.String())
		}
	})
	return p
}

// syncBuffer is a bytes.Buffer safe for a process's two output streams.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
