package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// campaignsYAML returns a valid file with n campaigns a0..a<n-1>.
func campaignsYAML(n int) string {
	var b strings.Builder
	b.WriteString("campaigns:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: a%d\n    adomain: [shop.com]\n    product_group_id: 1\n    status: active\n    bid_cpm: 1\n    creative: {template: light, sizes: [\"300x250\"]}\n", i)
	}
	return b.String()
}

// invalidYAML names the bad key campaigns[1].bid_cpm.
var invalidYAML = campaignsYAML(3) +
	"  - id: bad\n    adomain: [shop.com]\n    product_group_id: 1\n    status: active\n    bid_cpm: -2\n    creative: {template: light, sizes: [\"300x250\"]}\n"

// replaceFile writes data to path the way editors do: a temp file renamed over it.
func replaceFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 5 ms for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newTestWatcher(t *testing.T, path string, o watcherOptions) (*Watcher, *observer.ObservedLogs, *prometheus.Registry) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	reg := prometheus.NewRegistry()
	w, err := newWatcher(path, zap.New(core), reg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w, logs, reg
}

// TestWatcherReload rewrites the file (valid, then invalid) while readers
// match continuously; events alone must do it (the poll is off: 1 h).
func TestWatcherReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "campaigns.yaml")
	if err := os.WriteFile(path, []byte(campaignsYAML(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	w, logs, reg := newTestWatcher(t, path, watcherOptions{poll: time.Hour})
	if w.fsw == nil {
		t.Skip("fsnotify unavailable here")
	}
	if w.Current().Len() != 1 {
		t.Fatalf("initial Len %d", w.Current().Len())
	}
	if v := testutil.ToFloat64(w.gaugeActive); v != 1 {
		t.Fatalf("gauge active %v", v)
	}

	// Readers: every Current() is a complete, valid Set.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	var bad atomic.Value
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := baseRequest()
			out := make([]*Campaign, 0, 8)
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := w.Current()
				out = s.Match(req, &req.Imp[0], nil, wed, out[:0], nil)
				if active, _ := s.Counts(); len(out) != active || (s.Len() != 1 && s.Len() != 5) {
					bad.Store(fmt.Sprintf("set of %d matched %d", s.Len(), len(out)))
				}
				reads.Add(1)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		if b := bad.Load(); b != nil {
			t.Error(b)
		}
		if reads.Load() == 0 {
			t.Error("readers never ran")
		}
	}()

	replaceFile(t, path, campaignsYAML(5))
	waitFor(t, "5 campaigns", func() bool { return w.Current().Len() == 5 })
	if ok, failed := w.Reloads(); ok != 1 || failed != 0 {
		t.Fatalf("Reloads = %d, %d", ok, failed)
	}
	if w.LastError() != nil {
		t.Fatalf("LastError %v", w.LastError())
	}
	current := w.Current()

	replaceFile(t, path, invalidYAML)
	waitFor(t, "a failed reload", func() bool { _, f := w.Reloads(); return f == 1 })
	if w.Current() != current {
		t.Fatal("the invalid file replaced the Set")
	}
	err := w.LastError()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "campaigns[3].bid_cpm: must be > 0") {
		t.Fatalf("LastError = %v", err)
	}
	entries := logs.FilterMessageSnippet("invalid campaigns file").All()
	if len(entries) != 1 {
		t.Fatalf("%d invalid-file log lines, want 1", len(entries))
	}
	if keys := fmt.Sprint(entries[0].ContextMap()["keys"]); !strings.Contains(keys, "campaigns[3].bid_cpm") {
		t.Fatalf("log keys %s", keys)
	}

	// Metrics.
	if v := testutil.ToFloat64(w.reloadsOK); v != 1 {
		t.Errorf("reloads ok %v", v)
	}
	if v := testutil.ToFloat64(w.reloadsInvalid); v != 1 {
		t.Errorf("reloads invalid %v", v)
	}
	if v := testutil.ToFloat64(w.gaugeActive); v != 5 {
		t.Errorf("gauge active %v", v)
	}
	if n, err := testutil.GatherAndCount(reg, "rtbd_campaign_reloads_total", "rtbd_campaigns"); err != nil || n != 4 {
		t.Errorf("gathered %d series, %v", n, err)
	}

	// Back to a valid file: used again.
	replaceFile(t, path, strings.Replace(campaignsYAML(5), "status: active", "status: paused", 1))
	waitFor(t, "reload after the fix", func() bool { ok, _ := w.Reloads(); return ok == 2 })
	if w.LastError() != nil || testutil.ToFloat64(w.gaugePaused) != 1 {
		t.Fatalf("after fix: %v, paused %v", w.LastError(), testutil.ToFloat64(w.gaugePaused))
	}
}

// TestWatcherPollOnly: without file events, the poll sees an in-place
// write (same inode).
func TestWatcherPollOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "campaigns.yaml")
	if err := os.WriteFile(path, []byte(campaignsYAML(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	w, _, _ := newTestWatcher(t, path, watcherOptions{noNotify: true, poll: 20 * time.Millisecond})
	if w.fsw != nil {
		t.Fatal("noNotify ignored")
	}
	if err := os.WriteFile(path, []byte(campaignsYAML(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "2 campaigns", func() bool { return w.Current().Len() == 2 })
	// Same content rewritten: no reload counted.
	if err := os.WriteFile(path, []byte(campaignsYAML(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the poll see the rewrite: it must not count a reload
	if ok, failed := w.Reloads(); ok != 1 || failed != 0 {
		t.Fatalf("after identical rewrite: Reloads = %d, %d", ok, failed)
	}
	// A removed file is a failed reload, reported once, and the Set stays.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed reload", func() bool { _, f := w.Reloads(); return f == 1 })
	if !errors.Is(w.LastError(), os.ErrNotExist) || w.Current().Len() != 2 {
		t.Fatalf("after remove: %v, Len %d", w.LastError(), w.Current().Len())
	}
	time.Sleep(100 * time.Millisecond)
	if _, f := w.Reloads(); f != 1 {
		t.Fatalf("a missing file counted %d times", f)
	}
	if err := os.WriteFile(path, []byte(campaignsYAML(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 campaigns", func() bool { return w.Current().Len() == 3 })
}

// TestWatcherConfigMapSwap: the Kubernetes layout, where campaigns.yaml is
// a symlink into ..data, itself a symlink swapped atomically to a new
// timestamped directory. Events alone (poll off).
func TestWatcherConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	mkVersion := func(name, data string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "campaigns.yaml"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkVersion("..2026_01_01_00_00_00.1", campaignsYAML(1))
	if err := os.Symlink("..2026_01_01_00_00_00.1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "campaigns.yaml")
	if err := os.Symlink("..data/campaigns.yaml", path); err != nil {
		t.Fatal(err)
	}
	w, _, _ := newTestWatcher(t, path, watcherOptions{poll: time.Hour})
	if w.fsw == nil {
		t.Skip("fsnotify unavailable here")
	}
	mkVersion("..2026_01_02_00_00_00.2", campaignsYAML(4))
	if err := os.Symlink("..2026_01_02_00_00_00.2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "4 campaigns", func() bool { return w.Current().Len() == 4 })
}

func TestNewWatcherErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewWatcher(filepath.Join(dir, "none.yaml"), nil, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(invalidYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWatcher(path, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid file: %v", err)
	}
	// Two watchers on one registry share the metrics; a conflicting
	// collector under the same name is an error.
	if err := os.WriteFile(path, []byte(campaignsYAML(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	w1, err := NewWatcher(path, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	w2, err := NewWatcher(path, zap.NewNop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if w2.Current().Len() != 1 {
		t.Fatal("Current after Close")
	}
	reg2 := prometheus.NewRegistry()
	reg2.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_campaigns", Help: "x"}))
	if _, err := NewWatcher(path, nil, reg2); err == nil {
		t.Fatal("conflicting metric: no error")
	}
}
