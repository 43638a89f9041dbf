// Package bench is rtbd's load harness (`rtbd bench`): scenarios that
// start what they measure as child processes on 127.0.0.1, load
// generators, latency recording, reports and their comparison. The
// scenarios are registered in one table (cmd.go); bench/README.md says
// how the harness works, how to run each scenario and what its figures
// mean.
//
// The engine: RunOpenLoop (a fixed rate, latency from each request's
// intended send time: no coordinated omission; see OpenLoopOptions),
// RunClosedLoop (N workers, each waiting for its answer), RunMixed
// (several open-loop loads at once) and FindMaxRate (the highest rate
// holding an Objective). Workers never share a histogram or a lock: each
// hands its samples in batches to one aggregator per load, which owns the
// HDR histograms of the run and of each 1 s window; every outcome, errors
// included, is in the latency statistics.
//
// Every run returns a *Result; NewReport gathers them and WriteText,
// WriteJSON and WriteHTML write them. The JSON schema is "rtbd-bench/v1":
// the json tags of Report, Result and their parts, units in the field
// names (_us, _ms, _sec, _bytes; rates in requests per second); readers
// ignore unknown fields. LoadReport reads a report back; Compare tells,
// per target and metric, "no change", "regression", "improvement" or
// "inconclusive" from the runs' per-second samples.
//
// Run functions may be called concurrently; a Target must be safe for
// concurrent Do calls.
package bench
