package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bench"
)

// TestBidderScenarioEndToEnd runs `rtbd bench bidder` at a tiny size: a
// demo written by `rtbd gen -demo`, a bidder with the local index, then two
// catalog nodes and a bidder with -catalog pointing to them, each loaded
// with bids, win notices and pixel events together.
func TestBidderScenarioEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a demo, two bidders and two nodes")
	}
	rep, _ := runBidderBench(t, "-nodes", "2", "-duration", "4s", "-warmup", "500ms", "-rate", "100")
	want := []string{"local/15", "local/15 win", "local/15 event", "remote/15", "remote/15 win", "remote/15 event"}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(want))
	}
	for i, r := range rep.Results {
		if r.Target != want[i] {
			t.Errorf("result %d: %q, want %q", i, r.Target, want[i])
		}
	}
	for _, r := range []*bench.Result{rep.Results[0], rep.Results[3]} {
		if r.Requests != 400 || r.Successes == 0 || r.Errors.Status4xx+r.Errors.Status5xx+r.Errors.Other != 0 {
			t.Errorf("%s: %d requests, %d bids, %d no-bids, errors %+v", r.Target, r.Requests, r.Successes, r.NoBids, r.Errors)
		}
		if len(r.Processes) == 0 || r.Processes[0].Error != "" || r.Processes[0].CPUSec <= 0 {
			t.Errorf("%s: bidder process %+v", r.Target, r.Processes)
		}
	}
	for _, r := range []*bench.Result{rep.Results[2], rep.Results[5]} { // pixel events
		if r.Successes == 0 || r.Errors.Total != 0 {
			t.Errorf("%s: %d ok, errors %+v", r.Target, r.Successes, r.Errors)
		}
	}
	for _, r := range []*bench.Result{rep.Results[1], rep.Results[4]} { // win notices: 2xx or counted errors, never lost
		if r.Requests == 0 || r.Successes+r.NoBids+r.Errors.Total != r.Requests-r.DeadlineMisses {
			t.Errorf("%s: outcomes %+v", r.Target, r)
		}
		if len(r.Notes) == 0 {
			t.Errorf("%s: no note on how win notices were answered", r.Target)
		}
	}
	remote := rep.Results[3]
	if len(remote.Processes) != 3 {
		t.Errorf("remote: watched %+v, want the bidder and 2 nodes", remote.Processes)
	}
	if len(rep.Tables) == 0 || len(rep.Tables[0].Rows) != 2 {
		t.Fatalf("tables %+v", rep.Tables)
	}
	row := rep.Tables[0].Rows[1]
	if row.Baseline != "local/15" || row.RatioP50 <= 0 || row.ServerCPUSec <= 0 {
		t.Errorf("remote row %+v", row)
	}
}

// TestBidderOverload runs -overload over both topologies: each bidder
// keeps its own copy of the demo's data directory, so both stay up after
// their runs; each search's best step is a passing one, then each is
// offered twice its rate.
func TestBidderOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a demo, two bidders and a node")
	}
	rep, _ := runBidderBench(t, "-nodes", "1", "-duration", "1s", "-warmup", "200ms", "-rate", "100", "-max-rate", "50", "-p99", "50ms",
		"-win-ratio", "0", "-event-rate", "-1", "-overload")
	if len(rep.Searches) != 2 {
		t.Fatalf("%d searches, want local and remote", len(rep.Searches))
	}
	for i, s := range rep.Searches {
		if want := []string{"local", "remote"}[i] + "/15 demo bids only"; s.Target != want {
			t.Errorf("search %d: %q, want %q", i, s.Target, want)
		}
		if s.MaxRate < 25 || len(s.Steps) == 0 {
			t.Errorf("%s: max rate %v after %d steps", s.Target, s.MaxRate, len(s.Steps))
		}
	}
	var twice []string
	for _, r := range rep.Results {
		if strings.HasSuffix(r.Target, " 2x") {
			twice = append(twice, r.Target)
			if r.Requests == 0 {
				t.Errorf("%s: no requests", r.Target)
			}
		}
	}
	if len(twice) != 2 {
		t.Errorf("2x runs %v, want one per topology", twice)
	}
}

// runBidderBench runs `rtbd bench bidder -q` on a small demo (2,000
// products, 50 users, weight 15) with args, and returns its report and its
// progress log (stderr); -q must leave stdout empty.
func runBidderBench(t *testing.T, args ...string) (*bench.Report, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	out, work := t.TempDir(), t.TempDir()
	all := append([]string{"bidder", "-products", "2000", "-groups", "4", "-users", "50", "-weights", "15", "-out", out, "-work", work, "-q"}, args...)
	var stdout, stderr bytes.Buffer
	err := bench.Main(ctx, append(all, rtbdArgs(t)...), &stdout, &stderr)
	t.Logf("progress:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("bench %v: %v", args, err)
	}
	if stdout.Len() != 0 {
		t.Errorf("-q: %d bytes on stdout", stdout.Len())
	}
	rep, err := bench.LoadReport(out + "/latest.json")
	if err != nil {
		t.Fatal(err)
	}
	return rep, stderr.String()
}
