package supply

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func write(t *testing.T, path, text string, mod time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// TestRefresh: a changed file is read again, a bad line is skipped,
// counted and logged, a file that no longer parses or cannot be read keeps
// its last good version, a removed file is dropped.
func TestRefresh(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Unix(1_700_000_000, 0)
	sellers := filepath.Join(dir, "sellers", "ssp.com.json")
	ads := filepath.Join(dir, "ads", "pub.com.txt")
	write(t, sellers, `{"sellers":[{"seller_id":"a","seller_type":"PUBLISHER"}]}`, t0)
	write(t, ads, "ssp.com, a, DIRECT\n", t0)
	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	s, err := Open(Options{Dir: dir, Log: zap.New(core), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	var sc Scratch
	check := func() Reason {
		r := &Request{SiteDomain: "pub.com", Chain: chainOf("ssp.com", "a")}
		v := s.Index().Check(r, &sc)
		return v.Reason
	}
	if got := check(); got != OK {
		t.Fatalf("first load: %s", got)
	}

	// A changed ads.txt with a bad line: the good line is kept.
	write(t, ads, "garbage line\nssp.com, b, DIRECT\n", t0.Add(time.Second))
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if got := check(); got != NotInAdsTxt {
		t.Errorf("after the change: %s, want not_in_ads_txt", got)
	}
	if n := testutil.ToFloat64(s.badLines[KindAds]); n != 1 {
		t.Errorf("bad lines counted %v, want 1", n)
	}
	if logs.FilterMessage("supply: bad lines skipped").Len() != 1 {
		t.Errorf("bad line not logged: %v", logs.All())
	}

	// A sellers.json that no longer parses keeps its last good version.
	write(t, ads, "ssp.com, a, DIRECT\n", t0.Add(2*time.Second))
	write(t, sellers, `{"sellers": [`, t0.Add(2*time.Second))
	if err := s.Refresh(); err == nil {
		t.Error("refresh with a broken sellers.json: no error")
	}
	if got := check(); got != OK {
		t.Errorf("broken sellers.json: %s, want ok (last good version)", got)
	}
	if n := testutil.ToFloat64(s.refresh[1]); n != 1 {
		t.Errorf("refresh errors %v, want 1", n)
	}

	// A file that cannot be read (here a link to nowhere) keeps its last
	// good version too.
	if err := os.Remove(ads); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere.txt"), ads); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err == nil {
		t.Error("refresh with an unreadable ads.txt: no error")
	}
	if got := check(); got != OK {
		t.Errorf("unreadable ads.txt: %s, want ok (last good version)", got)
	}
	if logs.FilterMessage("supply: file unusable, last good version kept").FilterField(zap.String("file", ads)).Len() != 1 {
		t.Errorf("unusable files not logged: %v", logs.All())
	}

	// A removed file is dropped.
	if err := os.Remove(ads); err != nil {
		t.Fatal(err)
	}
	_ = s.Refresh()
	if got := check(); got != NoAdsTxt {
		t.Errorf("removed ads.txt: %s, want no_ads_txt", got)
	}
	if n := testutil.ToFloat64(s.refresh[0]); n < 2 {
		t.Errorf("refresh ok %v, want >= 2", n)
	}
}

// TestOpenMissingDir: a directory that cannot be read is an error at
// Open, and a later refresh that cannot read it keeps the whole index.
func TestOpenMissingDir(t *testing.T) {
	if _, err := Open(Options{Dir: filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Fatal("Open of a missing directory: no error")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "ads", "pub.com.txt"), "ssp.com, a, DIRECT\n", time.Now())
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err == nil {
		t.Error("refresh of a removed directory: no error")
	}
	if _, e := s.Index().Counts(); e[KindAds] != 1 {
		t.Errorf("entries after a failed refresh %v, want the last index kept", e)
	}
}
