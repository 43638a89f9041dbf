package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rtbd/rtbd/ingest"
	"github.com/rtbd/rtbd/ingest/feedgen"
	"github.com/rtbd/rtbd/ingest/viewgen"
)

// TestRecommend: `rtbd bench recommend` on planted-cluster views reports
// a hit rate at 10 well above the popularity baseline, and full coverage;
// without -views it is a usage error.
func TestRecommend(t *testing.T) {
	dir := t.TempDir()
	fo := feedgen.Options{Products: 3000, Groups: 2, Seed: 4}
	feedPath := filepath.Join(dir, "feed.csv")
	if err := feedgen.WriteFile(feedPath, fo); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if _, err := ingest.Run(context.Background(), ingest.Options{Data: data, MaxRejectRatio: 0.01, LogInterval: -1}, []string{feedPath}, nil); err != nil {
		t.Fatal(err)
	}
	views := filepath.Join(dir, "views")
	vo := viewgen.Options{Feed: fo, Users: 6000, Seed: 2, Start: time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Hour)}
	if _, err := viewgen.Write(views, vo); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"recommend", "-views", views, "-data", data, "-k", "10"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", out.String())
	m := regexp.MustCompile(`hit rate@10\s+([0-9.]+)\s+\(most popular in group: ([0-9.]+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no hit rate line in:\n%s", out.String())
	}
	hit, _ := strconv.ParseFloat(m[1], 64)
	base, _ := strconv.ParseFloat(m[2], 64)
	if hit < 3*base || hit == 0 {
		t.Errorf("hit rate %.4f, want >= 3x the baseline %.4f", hit, base)
	}
	if !regexp.MustCompile(`coverage\s+1\.0000`).MatchString(out.String()) {
		t.Errorf("coverage not 1:\n%s", out.String())
	}
	if err := Main(context.Background(), []string{"recommend", "-data", data}, io.Discard, io.Discard); !errors.Is(err, ErrUsage) {
		t.Errorf("without -views: %v, want a usage error", err)
	}
}
