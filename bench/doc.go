// Package bench is rtbd's load harness (`rtbd bench`): scenarios that
// start what they measure as child processes on 127.0.0.1, load
// generators, latency recording, reports and their comparison.
// bench/README.md says how it works and what each scenario measures.
//
// The engine: Run (one load, open loop at a fixed rate with latency from
// each request's intended send time, or closed loop; see Options),
// RunMixed (several loads at once) and FindMaxRate (the highest rate
// holding an Objective). Every run returns a *Result; NewReport gathers
// them, WriteText, WriteJSON and WriteHTML write them (schema
// "rtbd-bench/v1": the json tags of Report and its parts, units in the
// field names), LoadReport reads one back and Compare tells, per target
// and metric, "no change", "regression", "improvement" or "inconclusive".
//
// Run functions may be called concurrently; a Target must be safe for
// concurrent Do calls.
package bench
