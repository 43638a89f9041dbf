package ingest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// readTextfile parses a textfile into name -> value of its single series
// (and the labels of rtbd_ingest_last_run_info).
func readTextfile(t *testing.T, path string) (map[string]float64, map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("textfile does not parse: %v", err)
	}
	vals, labels := map[string]float64{}, map[string]string{}
	for name, mf := range mfs {
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("%s: %d series, want 1", name, len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		vals[name] = m.GetGauge().GetValue()
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
	}
	return vals, labels
}

// TestTextfile: -textfile writes the run's outcome; a failed run says so
// and keeps the time of the last success.
func TestTextfile(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "idx")
	prom := filepath.Join(dir, "rtbd_ingest.prom")
	feed := writeFeed(t, dir, "feed.csv", testFeedOpts(50, ""))
	before := time.Now()
	if err := Main(context.Background(), []string{"-data", data, "-progress", "none", "-textfile", prom, feed}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	v, labels := readTextfile(t, prom)
	ok := v["rtbd_ingest_last_success_timestamp_seconds"]
	if v["rtbd_ingest_last_run_success"] != 1 || ok < float64(before.Unix()) || ok != v["rtbd_ingest_last_run_timestamp_seconds"] {
		t.Fatalf("after a good run: %v", v)
	}
	if v["rtbd_ingest_last_run_rows_read"] != 50 || v["rtbd_ingest_last_run_rows_accepted"] != 50 || v["rtbd_ingest_last_run_products"] != 50 || v["rtbd_ingest_generation"] != 1 {
		t.Errorf("after a good run: %v", v)
	}
	if labels["mode"] != "full" || labels["method"] != MethodBulk {
		t.Errorf("run info labels %v", labels)
	}

	// A failed run (a feed that is not there): success 0, the last
	// success's time carried over.
	err := Main(context.Background(), []string{"-data", data, "-progress", "none", "-delta", "-textfile", prom, filepath.Join(dir, "missing.csv")}, io.Discard, io.Discard)
	if !errors.Is(err, ErrAborted) {
		t.Fatalf("missing feed: %v, want ErrAborted", err)
	}
	v, labels = readTextfile(t, prom)
	if v["rtbd_ingest_last_run_success"] != 0 || v["rtbd_ingest_last_success_timestamp_seconds"] != ok || v["rtbd_ingest_last_run_timestamp_seconds"] < ok {
		t.Fatalf("after a failed run: %v (last success was %v)", v, ok)
	}
	if labels["mode"] != "delta" {
		t.Errorf("run info labels %v", labels)
	}

	// The collector reads *.prom only.
	err = Main(context.Background(), []string{"-data", data, "-textfile", filepath.Join(dir, "x.txt"), feed}, io.Discard, io.Discard)
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("-textfile x.txt: %v, want ErrUsage", err)
	}
}
