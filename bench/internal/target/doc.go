// Package target provides generic bench.Target implementations: HTTP (the
// harness's HTTP/1.1 client, bench/httpc, POSTing a body per request, 200 =
// OK, 204 = NoBid) and
// gRPC unary calls through a caller-supplied function. Protocol-specific
// targets (OpenRTB bid requests, catalog lookups) are built on these by
// supplying the body or call function.
//
// Both are safe for concurrent use by the harness's workers. Per-request
// deadlines come from bench.Worker.Deadline.
package target
