package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/internal/childproc"
)

// The test binary doubles as the ingest command: with childEnv set it runs
// Main with its arguments (after the first) and exits with rtbd's exit
// codes. Tests start it as a real process to kill it with SIGKILL (crash
// safety) and to measure its peak RSS (benchmark).
const childEnv = "RTBD_INGEST_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		err := Main(context.Background(), os.Args[2:], os.Stdout, os.Stderr)
		switch {
		case err == nil:
			os.Exit(0)
		case errors.Is(err, ErrUsage):
			fmt.Fprintln(os.Stderr, "rtbd:", err)
			os.Exit(2)
		default:
			fmt.Fprintln(os.Stderr, "rtbd:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// childResult is how a child ingest process ended.
type childResult struct {
	code           int
	killed         bool // by SIGKILL
	stdout, stderr string
	elapsed        time.Duration
	maxRSSKiB      int64
	cpu            time.Duration
}

// runChild runs `rtbd ingest args...` as a child process, with extra
// environment variables, within limit.
func runChild(t testing.TB, limit time.Duration, env []string, args ...string) childResult {
	t.Helper()
	var so, se bytes.Buffer
	start := time.Now()
	p, err := childproc.Start(childproc.Spec{Name: "child ingest", Path: os.Args[0], Args: append([]string{"ingest"}, args...),
		Env: append([]string{childEnv + "=1"}, env...), Stdout: &so, Stderr: &se})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(limit); err != nil && !p.Exited() {
		t.Fatalf("child ingest %v: %v\nstderr: %s", args, err, se.String())
	}
	ps := p.State()
	r := childResult{stdout: so.String(), stderr: se.String(), elapsed: time.Since(start), code: ps.ExitCode()}
	var ee *exec.ExitError
	if err := p.Err(); err != nil && !errors.As(err, &ee) {
		t.Fatalf("child ingest: %v", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		r.killed = true
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKiB = ru.Maxrss
	}
	r.cpu = ps.UserTime() + ps.SystemTime()
	return r
}

// testFeed describes a generated feed: opts are feedgen's; the feed file
// has opts.Products rows, product i with id i+1 in group 1+i%Groups.
func testFeedOpts(n int, suffix string) feedgen.Options {
	return feedgen.Options{Products: n, Groups: 7, Seed: 3, OutOfStockRatio: -1, TitleSuffix: suffix}
}

func writeFeed(t testing.TB, dir, name string, opts feedgen.Options) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := feedgen.WriteFile(p, opts); err != nil {
		t.Fatal(err)
	}
	return p
}

// mustIngest runs an ingest in this process and fails the test on error.
func mustIngest(t testing.TB, opts Options, feeds ...string) *Summary {
	t.Helper()
	sum, err := Run(context.Background(), opts, feeds, nil)
	if err != nil {
		t.Fatalf("ingest %v: %v", feeds, err)
	}
	return sum
}

// expectation says what the catalog must hold: for every product index i
// in [0, n), the product (present) or its absence.
type expectation struct {
	n      int
	groups int
	want   func(i int) (p *catalogpb.Product, present bool)
}

// feedExpect expects exactly the products of a generated feed.
func feedExpect(opts feedgen.Options) expectation {
	return expectation{n: opts.Products, groups: opts.Groups, want: func(i int) (*catalogpb.Product, bool) {
		p := feedgen.Product(i, opts)
		return &p, true
	}}
}

type store interface {
	GetProductMasters(context.Context, *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error)
}

// checkStore asks s for every product of e, group by group in lists of up
// to 500 ids, and returns the first difference (nil if none).
func checkStore(ctx context.Context, s store, e expectation) error {
	for g := 0; g < e.groups; g++ {
		var ids []int64
		var want []*catalogpb.Product
		flush := func() error {
			if len(ids) == 0 {
				return nil
			}
			resp, err := s.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{
				ProductGroupId: int64(g + 1), Product1Ids: ids, Product1QuantityAtMost: int32(len(ids))})
			if err != nil {
				return fmt.Errorf("group %d: %w", g+1, err)
			}
			if len(resp.Product1S) != len(want) {
				return fmt.Errorf("group %d: %d products for %d ids, want %d", g+1, len(resp.Product1S), len(ids), len(want))
			}
			for k, p := range resp.Product1S {
				if !proto.Equal(p, want[k]) {
					return fmt.Errorf("group %d product %d: got %v\nwant %v", g+1, want[k].ProductId, p, want[k])
				}
			}
			ids, want = ids[:0], want[:0]
			return nil
		}
		for i := g; i < e.n; i += e.groups {
			ids = append(ids, int64(i+1))
			if p, ok := e.want(i); ok {
				want = append(want, p)
			}
			if len(ids) == 500 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// checkDir opens the live version of dir and checks it holds e.
func checkDir(t testing.TB, dir string, e expectation) {
	t.Helper()
	l, err := catalog.OpenLocal(dir, catalog.LocalOptions{WatchInterval: -1, HotCacheEntries: -1})
	if err != nil {
		t.Fatalf("opening the live version: %v", err)
	}
	defer l.Close()
	if err := checkStore(context.Background(), l, e); err != nil {
		t.Fatalf("live version %s: %v", l.Version(), err)
	}
}

func current(t testing.TB, dir string) string {
	t.Helper()
	n, err := catalog.ReadPointer(dir, catalog.CurrentFile)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// leftovers lists version dirs that are neither CURRENT nor PREVIOUS, and
// temp dirs.
func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	keep := map[string]bool{}
	for _, f := range []string{catalog.CurrentFile, catalog.PreviousFile} {
		if n, err := catalog.ReadPointer(dir, f); err == nil {
			keep[n] = true
		}
	}
	var out []string
	ents, _ := os.ReadDir(filepath.Join(dir, catalog.VersionsDir))
	for _, e := range ents {
		if !keep[e.Name()] {
			out = append(out, "versions/"+e.Name())
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "tmp-*"))
	for _, p := range tmps {
		out = append(out, filepath.Base(p))
	}
	return out
}

// testOptions are small-memory options that force the external sort to
// spill and the merge to split, so tests exercise every path.
func testOptions(dir string) Options {
	return Options{Data: dir, MaxRejectRatio: 0.01, SortMem: 1 << 20, MaxMemory: 256 << 20,
		TableBytes: 1 << 20, Workers: 2, LogInterval: -1, perWorker: 1000}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers (a logger).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// scaled returns n, or n/10 under the race detector.
func scaled(n int) int {
	if raceEnabled {
		return n / 10
	}
	return n
}
