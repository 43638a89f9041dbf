// Package cputime reads the CPU time (user + system, every goroutine) the
// calling process has used. On a shared, noisy machine, work per CPU-second
// is steadier than work per wall-second, since time spent waiting for a
// core is not in it: benchmarks report it beside their wall-time figures,
// and ingest reports it in its summary.
package cputime
