// Package admin is the operations surface of an rtbd process: the process
// logger (NewLogger, from the config's log section) and a small net/http
// server (not the bid hot path) that every server mode runs on
// configs.Config.AdminListen, with
//
//	GET /healthz        200 "ok" while the process runs (liveness)
//	GET /readyz         200 "ready", or 503 with the reason (readiness);
//	                    with Options.Checks, one "name: state" line per
//	                    dependency follows
//	GET /metrics        Prometheus exposition of Options.Gatherer
//	/debug/pprof/...    net/http/pprof, on this server's own mux
//
// plus the endpoints a mode adds with Server.Handle (POST
// /admin/catalog/refresh, GET /admin/campaigns...). Use:
//
//	srv := admin.New(admin.Options{Addr: cfg.AdminListen(), Logger: log,
//		Gatherer: reg, Ready: store.Ready})
//	srv.Handle("POST /admin/catalog/refresh", refreshHandler)
//	if err := srv.Start(); err != nil { return err } // bad/busy address
//	...
//	srv.SetNotReady("shutting down") // first step of graceful shutdown
//	// drain the mode's own servers, then:
//	_ = srv.Shutdown(ctx)
//
// The endpoints are not authenticated: keep the listener on loopback or a
// private network.
package admin
