package e2e

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/rtbd/rtbd/bench"
)

// rtbdArgs returns the flags making the bench start this test binary as
// rtbd, and sets the environment that makes it act so.
func rtbdArgs(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(asRTBD, "1")
	return []string{"-rtbd", exe}
}

func haveRedis(t *testing.T) bool {
	if _, err := os.Stat(bench.DefaultRedisServer); err != nil {
		t.Logf("!!! %s not found: the redis row is SKIPPED in this run (install redis-server: make deps) !!!", bench.DefaultRedisServer)
		return false
	}
	return true
}

// TestStoreScenarioEndToEnd runs `rtbd bench store` at a tiny size: local
// Pebble in-process, a catalog node child through catalog/remote, and a
// redis-server child, 2 s each at the same rate, and checks the three
// output files, the comparison table and what was watched.
func TestStoreScenarioEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out := t.TempDir()
	work := t.TempDir()
	targets := "local,grpc,redis"
	if !haveRedis(t) {
		targets = "local,grpc"
	}
	args := append([]string{"store", "-products", "2000", "-groups", "4", "-weights", "3", "-duration", "2s", "-warmup", "500ms",
		"-rate", "300", "-targets", targets, "-out", out, "-work", work, "-title", "e2e store"}, rtbdArgs(t)...)
	var stdout, stderr bytes.Buffer
	if err := bench.Main(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("bench store: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("progress:\n%s", stderr.String())
	if !strings.Contains(stderr.String(), "answer the first 200 requests of each weight identically") {
		t.Errorf("no verification line in the progress output")
	}
	for _, f := range []string{"latest.txt", "latest.json", "latest.html"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	stamped, _ := filepath.Glob(filepath.Join(out, "*-store.json"))
	if len(stamped) != 1 {
		t.Errorf("dated copies: %v", stamped)
	}
	txt, _ := os.ReadFile(filepath.Join(out, "latest.txt"))
	if !bytes.Equal(txt, stdout.Bytes()) {
		t.Errorf("latest.txt differs from the text on stdout")
	}

	rep, err := bench.LoadReport(filepath.Join(out, "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	names := splitTargets(targets)
	if len(rep.Results) != len(names) {
		t.Fatalf("results: %d, want %d", len(rep.Results), len(names))
	}
	for i, r := range rep.Results {
		if want := names[i] + "/3"; r.Target != want {
			t.Errorf("result %d: target %q, want %q", i, r.Target, want)
		}
		if r.Requests != 600 || r.OfferedRate != 300 {
			t.Errorf("%s: %d requests at %v req/s offered, want 600 at 300 (the same load for every target)", r.Target, r.Requests, r.OfferedRate)
		}
		if r.Errors.Total != 0 || r.Successes == 0 {
			t.Errorf("%s: %d successes, errors %+v", r.Target, r.Successes, r.Errors)
		}
		if len(r.Timeline) == 0 || len(r.Histogram) == 0 || len(r.Percentiles) == 0 {
			t.Errorf("%s: missing timeline/histogram/percentiles", r.Target)
		}
	}
	for _, r := range rep.Results[1:] { // the children: node and redis-server
		if len(r.Processes) != 1 || r.Processes[0].Error != "" || r.Processes[0].CPUSec <= 0 || r.Processes[0].PeakRSSBytes <= 0 {
			t.Errorf("%s: processes %+v", r.Target, r.Processes)
		}
	}
	if len(rep.Tables) != 1 || len(rep.Tables[0].Rows) != len(names) {
		t.Fatalf("tables: %+v", rep.Tables)
	}
	for i, row := range rep.Tables[0].Rows {
		if i == 0 {
			if row.Baseline != "" || row.ServerCPUSec != -1 {
				t.Errorf("local row: %+v", row)
			}
			continue
		}
		if row.Baseline != "local/3" || row.RatioAvg <= 0 || row.RatioP50 <= 0 || row.RatioP99 <= 0 || row.RatioRate <= 0 {
			t.Errorf("row %s: baseline %q, ratios %v %v %v %v", row.Target, row.Baseline, row.RatioAvg, row.RatioP50, row.RatioP99, row.RatioRate)
		}
		if row.ServerCPUSec <= 0 || row.ServerRSSMB <= 0 {
			t.Errorf("row %s: server CPU %v s, RSS %v MB", row.Target, row.ServerCPUSec, row.ServerRSSMB)
		}
	}
	for _, want := range []string{"Store level", "avg ×", "p99.9 ms", "server RSS MB", "grpc/3"} {
		if !bytes.Contains(txt, []byte(want)) {
			t.Errorf("latest.txt lacks %q", want)
		}
	}
	checkHTML(t, filepath.Join(out, "latest.html"), len(names))
}

func splitTargets(s string) []string { return strings.Split(s, ",") }

// checkHTML parses the page as HTML, checks its structure, and parses every
// inline <svg> as XML (well-formed, as SVG must be).
func checkHTML(t *testing.T, path string, targets int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			counts[n.Data]++
			if n.Data == "script" || n.Data == "link" || n.Data == "img" {
				t.Errorf("html: external or scripted element <%s>: the page must be self-contained", n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	// percentiles, throughput, p99 over time
	if counts["svg"] != 3 {
		t.Errorf("html: %d <svg> elements, want 3", counts["svg"])
	}
	if counts["polyline"] < targets || counts["pre"] != 1 || counts["title"] < 1 {
		t.Errorf("html: element counts %v", counts)
	}
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAll(b, -1)
	if len(svgs) != counts["svg"] {
		t.Errorf("raw <svg> fragments %d, parsed %d", len(svgs), counts["svg"])
	}
	for i, s := range svgs {
		d := xml.NewDecoder(bytes.NewReader(s))
		d.Strict = true
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("svg %d is not well-formed XML: %v", i, err)
				break
			}
		}
	}
}
