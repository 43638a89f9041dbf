package server

import (
	"context"
	"fmt"
	"time"

	"github.com/rtbd/rtbd/admin"
)

// redisProbeTimeout bounds the PING behind /readyz's redis line.
const redisProbeTimeout = 100 * time.Millisecond

// readyChecks are the dependencies /readyz lists, one line each. Only
// what the bidder cannot bid without gates readiness: the campaigns, and
// a remote catalog of which no node was reachable for longer than
// admin.ready_catalog_grace. Shared stores (Redis, Aerospike) are listed
// but never make it unready: a fleet whose shared store fails would turn
// unready all at once and empty the load balancer's pool, while fast
// no-bids keep every bidder in the exchanges' good standing. A startup
// step the bidder must finish before taking traffic is one more check:
// "spend", the first read of the budgeted campaigns' fleet totals (until
// spend.startup_read_timeout; those campaigns stay paused, whatever
// readiness says, until their totals are read).
func (s *Server) readyChecks() []admin.Check {
	checks := []admin.Check{
		{Name: "catalog", State: s.catalogState},
		{Name: "campaigns", State: s.campaignsState},
	}
	if s.budgets != nil {
		checks = append(checks, admin.Check{Name: "spend", State: s.spendState})
	}
	if s.lease != nil {
		checks = append(checks, admin.Check{Name: "instance_lease", State: s.leaseState})
	}
	if s.rdb != nil {
		checks = append(checks, admin.Check{Name: "redis", State: s.redisState})
	}
	if s.aero != nil {
		checks = append(checks, admin.Check{Name: "aerospike", State: s.aerospikeState})
	}
	return checks
}

// catalogState: "local", or the remote catalog's resolved nodes and
// whether one is reachable; not ready once none has been for the grace.
// Ready again as soon as one is.
func (s *Server) catalogState() (string, bool) {
	if s.remote == nil {
		return "local", true
	}
	nodes := "1 node resolved"
	if n := len(s.remote.Nodes()); n != 1 {
		nodes = fmt.Sprintf("%d nodes resolved", n)
	}
	ok, since := s.remote.Reachable()
	if ok {
		return "remote, " + nodes + ", reachable", true
	}
	down, grace := time.Since(since), s.cfg.Admin.ReadyCatalogGrace
	return fmt.Sprintf("remote, %s, none reachable for %s (grace %s)",
		nodes, down.Round(time.Millisecond), grace), down < grace
}

func (s *Server) campaignsState() (string, bool) {
	c := s.campaigns.Current()
	if c == nil {
		return "none loaded", false
	}
	return fmt.Sprintf("%d loaded", c.Len()), true
}

// redisState PINGs Redis (within redisProbeTimeout); never unready.
func (s *Server) redisState() (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), redisProbeTimeout)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return "unreachable (ignored for readiness): " + err.Error(), true
	}
	return "reachable", true
}

// aerospikeState is the client's view of the cluster; never unready.
func (s *Server) aerospikeState() (string, bool) {
	if !s.aero.IsConnected() {
		return "unreachable (ignored for readiness)", true
	}
	return "connected", true
}
