package e2e

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bench"
)

// TestBidderScenarioEndToEnd runs `rtbd bench bidder` at a tiny size: a
// demo written by `rtbd gen -demo`, a bidder with the local index, then two
// catalog nodes and a bidder with -catalog pointing to them, each loaded
// with bids, win notices and pixel events together; catalog node 1 is
// killed 1 s into the remote run and restarted.
func TestBidderScenarioEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a demo, two bidders and two nodes")
	}
	rep, _ := runBidderBench(t, "-nodes", "2", "-duration", "4s", "-warmup", "500ms", "-rate", "100", "-kill-node-at", "1s")
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
		// The bidder's own histogram saw the measured phase's bid
		// requests: the harness's 400, give or take the few in flight at
		// the two readings.
		if len(r.ServerSide) != 1 {
			t.Errorf("%s: server side %+v, want the bidder's histogram", r.Target, r.ServerSide)
		} else if h := r.ServerSide[0]; h.Error != "" || h.Metric != "rtbd_bidder_request_seconds" || h.Count < 390 || h.Count > 410 ||
			h.OverTmax < 0 || h.TmaxBoundSec != 0.1 {
			t.Errorf("%s: bidder histogram %+v, want ~400 observations and over_tmax against 0.1 s", r.Target, h)
		}
	}
	for _, r := range []*bench.Result{rep.Results[2], rep.Results[5]} { // pixel events
		if r.Successes == 0 || r.Errors.Total != 0 {
			t.Errorf("%s: %d ok, errors %+v", r.Target, r.Successes, r.Errors)
		}
		if len(r.ServerSide) != 0 {
			t.Errorf("%s: carries the bid requests' histogram %+v", r.Target, r.ServerSide)
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
	notes := strings.Join(remote.Notes, "\n")
	if !strings.Contains(notes, "catalog-node-1") || !strings.Contains(notes, "restarted on the same port") {
		t.Errorf("remote: notes lack the node kill and restart:\n%s", notes)
	}
	if len(rep.Tables) == 0 || len(rep.Tables[0].Rows) != 2 {
		t.Fatalf("tables %+v", rep.Tables)
	}
	row := rep.Tables[0].Rows[1]
	if row.Baseline != "local/15" || row.RatioP50 <= 0 || row.ServerCPUSec <= 0 {
		t.Errorf("remote row %+v", row)
	}
}

// TestBidderOverloadInterleaved runs -overload over both topologies: each
// bidder keeps its own copy of the demo's data directory, so both stay up
// after their runs, and their searches for the highest rate take turns
// (the step rates of each follow its own search, and its best step is a
// passing one); then each is offered twice its rate. -saturate runs each
// closed loop, in turns, before that.
func TestBidderOverloadInterleaved(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a demo, two bidders and a node")
	}
	rep, progress := runBidderBench(t, "-nodes", "1", "-duration", "1s", "-warmup", "200ms", "-rate", "100", "-max-rate", "50", "-p99", "50ms",
		"-win-ratio", "0", "-event-rate", "-1", "-saturate", "4", "-overload")
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
	// Interleaved: the progress log's step lines come in turns.
	var order []string
	for _, line := range strings.Split(progress, "\n") {
		for _, top := range []string{"local", "remote"} {
			if strings.Contains(line, " of "+top+"/15 demo bids only: ") && strings.Contains(line, "  step ") {
				order = append(order, top)
			}
		}
	}
	t.Logf("step order %v", order)
	// The turns a, b | b, a | a, b ... with each search's own step count
	// (a confirmation re-run adds a step to one of them).
	n := map[string]int{"local": len(rep.Searches[0].Steps), "remote": len(rep.Searches[1].Steps)}
	var want []string
	for round := 0; n["local"]+n["remote"] > 0; round++ {
		turn := []string{"local", "remote"}
		if round%2 == 1 {
			turn = []string{"remote", "local"}
		}
		for _, top := range turn {
			if n[top] > 0 {
				n[top]--
				want = append(want, top)
			}
		}
	}
	if !slices.Equal(order, want) || len(order) < 4 {
		t.Errorf("step order %v, want %v (turns local remote, remote local, ...)", order, want)
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
	// -saturate: 3 closed-loop runs per topology, in turns, and a note for
	// each topology, the remote's with its ratios.
	var sat []string
	for _, r := range rep.Results {
		if strings.Contains(r.Target, " saturated ") {
			sat = append(sat, r.Target)
			if r.Successes == 0 || r.Errors.Total != 0 {
				t.Errorf("%s: %d bids, errors %+v", r.Target, r.Successes, r.Errors)
			}
		}
	}
	wantSat := []string{"local/15 demo saturated 1", "remote/15 demo saturated 1", "remote/15 demo saturated 2",
		"local/15 demo saturated 2", "local/15 demo saturated 3", "remote/15 demo saturated 3"}
	if !slices.Equal(sat, wantSat) {
		t.Errorf("saturated runs %v, want %v", sat, wantSat)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "saturated local/15 demo (4 connections, 3 runs): ") ||
		!strings.Contains(notes, "saturated remote/15 demo (4 connections, 3 runs): ") || !strings.Contains(notes, "; vs local: bids/s ") {
		t.Errorf("notes lack the saturated figures:\n%s", notes)
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
