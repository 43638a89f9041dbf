// Package server is the bidder process: Start opens what the config
// names (the product store: the local index or remote catalog nodes; the
// user, spend and replay stores; the campaigns source; the fraud lists;
// the records sinks), builds a bidder.Bidder over them and serves it;
// Shutdown stops it in order. Package bidder is the handler library it
// wires; this package holds no request path of its own.
//
// Run (the main program's bidder mode) serves a Bidder (package bidder:
// the handlers) on bidder.http_listen (and bidder.public_listen) with the
// admin listener: /metrics,
// /healthz, /readyz (one line per dependency; 503 only while shutting
// down, with a remote catalog unreachable for longer than
// admin.ready_catalog_grace, or at start until the budgeted campaigns'
// fleet totals are read or spend.startup_read_timeout has passed:
// readiness.go, spendgate.go), POST /admin/debug/bid
// (Explain: why each campaign did or did not bid), GET /admin/campaigns (spend, budgets, pacing, frequency
// cap and bidding state per campaign: CampaignsHandler) and, with a remote
// catalog, POST /admin/catalog/refresh. Start opens the spend store the
// config chooses (spend.store: embedded Pebble in bidder.data_dir/spend,
// redis.addr, or aerospike.hosts), the spend Writer and Budgets, and the
// fraud lists when redis.addr is set, and reads the fleet totals of the
// budgeted campaigns before serving (Budgets pauses a budgeted campaign
// until they are read, spend.ReasonUnread). Shutdown turns /readyz 503,
// serves on for bidder.shutdown_delay, drains, then closes the Writer
// (final flush) after the HTTP server has stopped and before the stores
// close.
//
// Files: run.go (Start, Shutdown, Run), config.go (config sections to
// bidder options), userstore.go (the user store), runrecords.go (the
// records sinks), lease.go (the instance lease of a shared spend store),
// spendgate.go (the startup spend read and the shutdown delay),
// readiness.go (/readyz), publicserver.go (bidder.public_listen),
// shading.go (the bid shading refresh loop).
package server
