// Package bench is rtbd's load harness (`rtbd bench`): scenarios that
// start what they measure as child processes on 127.0.0.1, load
// generators, latency recording, reports and their comparison. The
// scenarios are registered in one table (cmd.go); bench/README.md says
// how to run each and what its figures mean.
//
// # Load models
//
//   - RunOpenLoop: requests at a fixed rate (uniform or Poisson), latency
//     from each request's intended send time, so a stalled target's
//     queueing is measured instead of hidden (no coordinated omission). A
//     bounded pool of workers sends them; requests still waiting at their
//     deadline are recorded as timeouts (Result.Expired), never dropped.
//   - RunClosedLoop: N workers, each sends, waits, repeats.
//   - FindMaxRate: the highest open-loop rate holding an Objective (p99,
//     error and deadline-miss ratios), by doubling then bisection.
//   - RunMixed: several open-loop loads (bids, notices, pixels) at once.
//
// # Recording
//
// Workers never share a histogram or a lock: each appends its samples to
// its own buffer and hands full buffers to one aggregator per load, which
// owns an HDR histogram (1 us .. 60 s, 3 significant digits) for the run
// and one per 1 s window. Every outcome, errors included, is in the
// latency statistics.
//
// # Reports
//
// Every run returns a *Result; NewReport gathers them and WriteText,
// WriteJSON and WriteHTML write them. The JSON schema is "rtbd-bench/v1":
// the json tags of Report, Result and their parts, units in the field
// names (_us, _ms, _sec, _bytes; rates in requests per second); readers
// ignore unknown fields. LoadReport reads a report back; Compare tells,
// per target and metric, "no change", "regression" or "improvement" from
// the runs' per-second samples.
//
// Run functions may be called concurrently; a Target must be safe for
// concurrent Do calls.
package bench
