package server

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/spend"
)

// spendGatePoll is how often the startup watcher looks whether every
// budgeted campaign's fleet totals are read.
const spendGatePoll = 20 * time.Millisecond

// startSpendGate registers the current campaigns with the spend Writer and
// reads their fleet totals: once before serving (within
// spend.flush_timeout and spend.startup_read_timeout, so a bidder whose
// store answers knows its budgets before its first bid), then in the
// background (Budgets' gate loop) until they are all read. Budgeted
// campaigns do not bid before (spend.ReasonUnread); /readyz's "spend" line
// is not ready until they are read or spend.startup_read_timeout has
// passed, when the watcher logs the campaigns that stay paused.
func (s *Server) startSpendGate() {
	s.gateStart = time.Now()
	s.gateStop = make(chan struct{})
	if set := s.campaigns.Current(); set != nil {
		all := set.All()
		list := make([]spend.CampaignBudget, len(all))
		for i, c := range all {
			list[i] = spend.FromCampaign(c)
		}
		s.spendW.SetCampaigns(list)
	}
	timeout := s.cfg.Spend.StartupReadTimeout
	ctx, cancel := context.WithTimeout(context.Background(), min(timeout, s.spendW.Options().FlushTimeout))
	n, err := s.budgets.ReadTotals(ctx)
	cancel()
	s.gateErr = err
	if n == 0 {
		s.gateDone.Store(true)
		return
	}
	s.log.Warn("spend: fleet totals of budgeted campaigns not read yet; they are paused until they are",
		zap.Int("campaigns", n), zap.Duration("spend.startup_read_timeout", timeout), zap.Error(err))
	s.gateWG.Add(1)
	go s.watchSpendGate(timeout)
}

// watchSpendGate ends the startup gate of /readyz: when every budgeted
// campaign's totals are read, or at the timeout (then logged).
func (s *Server) watchSpendGate(timeout time.Duration) {
	defer s.gateWG.Done()
	t := time.NewTicker(spendGatePoll)
	defer t.Stop()
	deadline := time.NewTimer(max(timeout-time.Since(s.gateStart), 0))
	defer deadline.Stop()
	for {
		select {
		case <-s.gateStop:
			return
		case <-deadline.C:
			s.gateDone.Store(true)
			if n := s.budgets.Unread(); n > 0 {
				s.log.Error("spend: fleet totals still unread after spend.startup_read_timeout: budgeted campaigns stay paused (retrying in the background, rtbd_spend_unread_campaigns), unbudgeted campaigns bid",
					zap.Int("campaigns", n), zap.Duration("spend.startup_read_timeout", timeout))
				return
			}
		case <-t.C:
		}
		if s.budgets.Unread() == 0 {
			s.gateDone.Store(true)
			s.log.Info("spend: fleet totals of budgeted campaigns read", zap.Duration("after", time.Since(s.gateStart).Round(time.Millisecond)))
			return
		}
	}
}

// stopSpendGate ends the watcher (Shutdown).
func (s *Server) stopSpendGate() {
	if s.gateStop != nil {
		close(s.gateStop)
		s.gateStop = nil
	}
	s.gateWG.Wait()
}

// spendState is /readyz's "spend" line: not ready while the startup read
// of the budgeted campaigns' totals goes on (until spend.startup_read_timeout).
func (s *Server) spendState() (string, bool) {
	n := s.budgets.Unread()
	switch {
	case n == 0:
		return "fleet totals of budgeted campaigns read", true
	case s.gateDone.Load():
		return fmt.Sprintf("%d budgeted campaigns paused: fleet totals unread (retrying; unbudgeted campaigns bid)", n), true
	}
	return fmt.Sprintf("reading the fleet totals of %d budgeted campaigns (%s of spend.startup_read_timeout %s)",
		n, time.Since(s.gateStart).Round(time.Millisecond), s.cfg.Spend.StartupReadTimeout), false
}

// shutdownDelay is the first step of Shutdown: /readyz turns 503 and the
// bidder goes on serving bids and notices for bidder.shutdown_delay (or
// until ctx ends), so the load balancer stops sending it traffic before it
// stops taking it.
func (s *Server) shutdownDelay(ctx context.Context) {
	s.admin.SetNotReady("shutting down")
	d := s.cfg.Bidder.ShutdownDelay
	if d <= 0 {
		return
	}
	s.log.Info("bidder: shutting down: /readyz is 503, serving for bidder.shutdown_delay before draining", zap.Duration("bidder.shutdown_delay", d))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
