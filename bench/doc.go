// Package bench is rtbd's load and benchmark harness: load generators,
// latency recording, reports and comparisons. It drives anything behind the
// small Target interface (an HTTP bidder, a gRPC catalog node, ...); the
// targets live in bench/internal/target, the /proc readers in
// bench/internal/proc, and the generator's own HTTP/1.1 client (cheaper than
// the servers it loads) in bench/internal/httpc. The harness's parts are
// internal: only bench and its tests use them.
//
// # rtbd bench
//
// Main is the `rtbd bench` command (Usage documents its flags); it runs a
// scenario and writes its report as text, JSON and HTML:
//
//   - RunStore (rtbd bench store): the same ProductMastersRequest stream
//     (CatalogWorkload: Zipf popularity, the talk's 3/15/30 products per
//     request) at the same load straight to each product store: the local
//     Pebble index in this process, a catalog node started as a child
//     process (the rtbd binary, -mode=catalog) through catalog/remote,
//     redis-server holding the same products (one MGET per request) and,
//     when configured, Aerospike (one BatchGet). The stores must first
//     answer the same requests identically.
//   - RunBidder (rtbd bench bidder): separate processes on loopback from
//     one demo directory (rtbd gen -demo): a bidder with the local index,
//     then catalog nodes and a bidder with -catalog pointing to them; bid
//     requests (demo users, sites, devices, the sizes of the demo
//     campaigns' light/medium/heavy templates), win notices replaying the
//     bids' nurls and pixel events, together (RunMixed). Options: overload
//     at twice the highest sustainable rate, a catalog node killed and
//     restarted mid-run.
//   - RunSoak (rtbd bench soak): the fault-injection soak. Two bidders
//     sharing redis-server (AOF, appendfsync always) and two catalog nodes
//     (in network namespaces when root) under bids, notices, pixel events
//     and clicks at fixed rates while faults run on a schedule (kill -9 and
//     SIGTERM, a node cut off, ingest on a full and a slow disk); the
//     report's SoakSummary reconciles every accepted billing notice with
//     the store and attributes every error and late answer.
//   - RunScale (rtbd bench scale): the talk's 100M-product catalog on one
//     node: a count from the free disk (ScaleProductsForDisk), the feed
//     generated here and piped into the bulk ingest (wall, rows/s, peak
//     RSS, index size: ScaleIngest, kept beside the index), then uniform
//     (cold) and Zipf 15-id lookups through the node and through a bidder
//     on it whose users hold ids of the big catalog.
//   - rtbd bench ghz: ghz against one node, GetProductMasters beside an
//     empty health check, with the node's CPU per call.
//   - Near cache: BidderOptions.Popularities (Zipf or uniform users written
//     into the demo's user store), the remote bidder's near-cache hit ratio
//     from its /metrics (NearStats, tolerant of the metric names: series
//     starting with NearMetricPrefix that say hit or miss), the remote-vs-
//     local bids/s and CPU per bid; the store level's grpc-near target
//     when catalog/remote has a near cache option.
//   - rtbd bench compare A.json B.json: Compare with its verdicts.
//
// A scenario's Report carries a Table (BuildTable): the talk's columns
// (avg, p50, p99 ms, req/s), ours (p90, p99.9, max, errors, connections,
// CPU seconds, peak RSS of the child processes) and remote/local ratios.
//
// Children are started with Pdeathsig (they die with the harness) on ports
// chosen free on 127.0.0.1, waited for (gRPC health, /readyz, PING) and
// stopped with SIGTERM, then SIGKILL.
//
// # Load models
//
//   - RunOpenLoop: requests at a fixed rate (Uniform t0 + i/rate, or
//     Poisson), latency from each request's intended send time, so a stalled
//     target's queueing is measured instead of hidden (no coordinated
//     omission). A bounded pool of worker goroutines (MaxInFlight, started
//     on demand) sends them; when all are busy, due requests keep their
//     scheduled time while they wait, and those still waiting at their
//     deadline are recorded as timeouts (Result.Expired), never dropped.
//     The pacer sleeps about 1 ms at a time and dispatches what came due;
//     that sleep granularity is not charged to the target (see
//     OpenLoopOptions), and Result.SendLag shows how late requests left.
//   - RunClosedLoop: N workers, each sends, waits, repeats.
//   - FindMaxRate: the highest open-loop rate holding an Objective (p99,
//     error and deadline-miss ratios), by doubling then bisection.
//   - RunMixed: several open-loop loads (bids, win notices, pixels) at once,
//     one Result each.
//
// Every run returns a *Result; gather them with NewReport and write them
// with WriteText, WriteJSON or WriteHTML. LoadReport reads a JSON report
// back and Compare/WriteCompare tell, per target and metric, "no change",
// "regression" or "improvement" using the runs' per-second samples (see
// Compare for the rule).
//
// # Recording
//
// Workers never share a histogram or a lock: each appends its samples to its
// own buffer of 256 and hands full buffers to one aggregator goroutine per
// load, which owns an HDR histogram (hdrhistogram-go, 1 us .. 60 s, 3
// significant digits) for the whole run, one per 1 s window (2 significant
// digits) and the counters. Average, min and max are exact. Every outcome,
// errors included, is in the latency statistics.
//
// # Concurrency
//
// Run functions may be called concurrently (each run owns its state); a
// Target must be safe for concurrent Do calls. Results and Reports are plain
// data: do not modify them while another goroutine reads them.
//
// # JSON report schema "rtbd-bench/v1"
//
// WriteJSON writes one object. Units are in field names: _ns nanoseconds,
// _us microseconds, _ms milliseconds, _sec seconds, _bytes bytes, rates in
// requests per second. Readers must ignore unknown fields (later v1 writers may add
// fields); a change of meaning or removal takes a new schema name. Times
// are RFC 3339.
//
//	{
//	  "schema": "rtbd-bench/v1",           // required, exact
//	  "title": "local vs grpc",            // optional
//	  "created": "2026-01-02T03:04:05Z",
//	  "host": "...", "go_version": "go1.26.8", "os": "linux", "arch": "amd64",
//	  "num_cpu": 2, "gomaxprocs": 2,
//	  "git_rev": "abc123",                  // optional
//	  "wakeup": {"cross_cpu": Wake, "same_cpu": Wake}, // optional (added within v1)
//	  "config": {"key": "value"},           // optional, flat strings
//	  "notes": ["..."],                     // optional
//	  "results": [Result, ...],
//	  "rows": [Row, ...],                   // one per result, same order
//	  "searches": [MaxRateResult, ...],     // optional
//	  "tables": [Table, ...],               // optional (scenarios)
//	  "soak": SoakSummary                   // optional (rtbd bench soak)
//	}
//
// Wake (bench/internal/wakeup.Result, see WakeupFloor): {"from_cpu", "to_cpu",
// "samples", "p50_ns", "p90_ns", "p99_ns", "max_ns"}, the round trips of a
// pipe to a thread sleeping on to_cpu from one on from_cpu.
//
// Result:
//
//	"target"          string, Target.Name()
//	"mode"            "open_loop" | "closed_loop"
//	"offered_rate"    open loop: offered req/s
//	"arrival"         open loop: "uniform" | "poisson"
//	"concurrency"     closed loop: workers
//	"max_in_flight"   open loop: worker bound
//	"start"           wall clock at the start of the measured phase
//	"warmup_sec"      discarded phase before start
//	"duration_sec"    sending phase (configured; closed loop by count: actual)
//	"elapsed_sec"     sending phase plus the drain of the last answers
//	"timeout_ms"      hard per-request deadline (0 = none)
//	"tmax_ms"         soft deadline for deadline misses (0 = not checked)
//	"aborted"         true if the run was cancelled (partial result)
//	"requests"        = successes + no_bids + deadline_misses + errors.total
//	"successes"       OK outcomes
//	"no_bids"         NoBid outcomes (HTTP 204)
//	"deadline_misses" answered after tmax
//	"errors"          {"total","timeout","conn","status_4xx","status_5xx","other"}
//	"expired"         never sent: waited in the generator past the timeout
//	                  (also in errors.timeout)
//	"achieved_rate"   requests / elapsed_sec
//	"workers"         peak worker goroutines
//	"latency"         LatencyStats of all requests
//	"send_lag"        LatencyStats of how late requests left the generator
//	"histogram"       [{"mark_us","count","frequency"}] 11 ghz-style marks
//	                  from fastest to slowest; count = requests above the
//	                  previous mark and at most this one
//	"distribution"    [{"p","us"}] at p = 10, 25, 50, 75, 90, 95, 99, 99.9
//	"percentiles"     [{"p","us"}] curve at p = 100(1 - 10^-x), x = 0, 0.1,
//	                  ... up to log10(requests), then p = 100 (the max)
//	"timeline"        [Second] one per 1 s window since start, by completion
//	"moving"          [{"window_sec","covered_sec","complete","ewma","sma"}]
//	                  for windows of 60, 300 and 900 s (see MovingRate)
//	"generator_cpu_sec", "generator_cores"
//	                  this process's CPU (getrusage) over the measured phase,
//	                  and that divided by wall time
//	"generator_shared" number of loads sharing those figures (mixed runs)
//	"processes"       [{"name","pid","cpu_sec","cores","peak_rss_bytes",
//	                  "rss_bytes","error"}] from /proc/PID/stat and status
//	                  (peak = VmHWM, the process's lifetime peak)
//	"conns"           [{"name","filter","samples","min","max","mean","last",
//	                  "error"}] ESTABLISHED sockets in /proc/net/tcp{,6}
//	"notes"           [string]
//	"events"          [{"at_sec","what"}] things the harness did during the
//	                  run (a catalog node killed, restarted), in seconds
//	                  since start; optional (added within v1)
//	"host"            {"cpus","busy_pct","idle_pct","steal_pct","per_cpu":
//	                  [{"cpu","busy_pct","idle_pct","steal_pct"}]} what the
//	                  machine's CPUs did over the measured phase (Linux
//	                  /proc/stat), in percent of their wall time; steal is
//	                  time the hypervisor ran someone else while a virtual
//	                  CPU wanted to run; optional (added within v1)
//	"server_side"     [{"name","metric","count","buckets":[{"le_sec",
//	                  "count"}],"over_tmax","tmax_bound_sec","error"}] the
//	                  watched servers' own latency histograms (a started
//	                  bidder's rtbd_bidder_request_seconds: arrival to
//	                  answer) over the measured phase, cumulative buckets;
//	                  over_tmax counts observations above the smallest
//	                  bound >= tmax (-1: none); optional (added within v1)
//
// LatencyStats: {"count", "avg_us", "stddev_us", "min_us", "p50_us",
// "p90_us", "p95_us", "p99_us", "p999_us", "max_us"}.
//
// Second: {"t" (seconds since start), "requests", "successes", "no_bids",
// "errors", "deadline_misses", "avg_us", "p50_us", "p99_us", "max_us",
// "full", "steal_pct"}; "full" is false for the drain tail and a partial
// last window; "steal_pct" (optional, added within v1) is the host's steal
// share in that second, absent when 0 or when "host" is absent.
//
// Row (the comparison table): {"target", "mode", "requests", "avg_ms",
// "p50_ms", "p99_ms", "rate_1m", "rate_5m", "rate_15m" (EWMA req/s),
// "covered_sec", "error_pct", "no_bid_pct", "miss_pct"}.
//
// Table (a scenario's comparison): {"title", "notes", "rows": [{"target",
// "group", "baseline" (target the ratios divide by; "" for a baseline row),
// "avg_ms", "p50_ms", "p99_ms", "rate" (achieved req/s), "offered_rate",
// "p90_ms", "p999_ms", "max_ms", "requests", "errors", "error_pct",
// "no_bid_pct", "deadline_misses", "conns" (max ESTABLISHED sockets of the
// row's connection filters, summed; -1 n/a), "harness_cpu_sec",
// "server_cpu_sec" and "server_rss_mb" (watched children, summed; -1 n/a),
// "ratio_avg", "ratio_p50", "ratio_p99", "ratio_rate" (this / baseline;
// absent for baseline rows)}]}.
//
// SoakSummary: {"checks": [{"name", "pass", "detail"}], "environment",
// "faults": [{"kind", "target", "label", "start_sec", "end_sec", "detail",
// "error"}], "skipped": [{"kind", "why"}], "notices" (SoakNotices:
// "accepted", "distinct", "lost", "double_charged", "store_imps",
// "store_micros", "store_keys", ...), "bid_requests", "bids_late",
// "anomalies": [{"kind", "outcome", "cause", "count"}], "unattributed",
// "steal_seconds", "rss": [{"name", "samples": [{"at_sec", "rss_bytes",
// "pid"}]}], "rss_checks"}; times in seconds since the measured phase began.
//
// MaxRateResult: {"target", "objective" (text), "p99_ms", "max_rate",
// "bracketed", "steps": [{"rate", "pass", "reason", "requests",
// "achieved_rate", "p50_us", "p99_us", "error_ratio", "miss_ratio",
// "steal_pct" (optional, as in Second)}]}.
package bench
