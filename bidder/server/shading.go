package server

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/configs"
)

// fleetLoadTimeout bounds a starting bidder's first read of the fleet's
// shading counts (and spend.flush_timeout does): a slow store delays
// serving by at most this much (the coarse segments, read first, are in
// by then).
const fleetLoadTimeout = 5 * time.Second

// startShading runs the Shader's Refresh every shading.refresh_interval
// and, with a spend store that keeps shading counts and
// shading.fleet_interval > 0, Sync every fleet_interval, until
// stopShading. Before serving it loads the fleet's counts (Shader.Load,
// coarse segments first, within fleetLoadTimeout and spend.flush_timeout),
// so a restarted bidder shades from its first bid; when the spend store
// did not answer the startup read of the budgets, or the load fails, the
// load is retried in the background every fleet_interval instead (the
// start is not delayed twice by a store that is down). At stop, what
// settled since the last Sync is flushed, unless the store failed it.
func (s *Server) startShading(c configs.Shading) {
	sh := s.Bidder.Shader()
	if sh == nil || c.RefreshInterval <= 0 {
		return
	}
	st := s.shadeStore
	if c.FleetInterval <= 0 {
		st = nil
	}
	load := func(timeout time.Duration) bool {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		stats, err := sh.Load(ctx, st, time.Now())
		cancel()
		s.Bidder.CountShadingFleet(true, err == nil)
		if err != nil {
			s.log.Warn("bid shading: the fleet's counts not (all) loaded; retrying in the background", zap.Int("segments", stats.Segments), zap.Error(err))
			return false
		}
		s.log.Info("bid shading: the fleet's counts loaded", zap.Int("segments", stats.Segments), zap.Int("entries", stats.Read))
		return true
	}
	loaded := true
	if st != nil {
		loaded = s.gateErr == nil && load(min(fleetLoadTimeout, s.spendW.Options().FlushTimeout))
	}
	stop := make(chan struct{})
	s.shadingStop = stop
	s.shadingWG.Add(1)
	go func() {
		defer s.shadingWG.Done()
		t := time.NewTicker(c.RefreshInterval)
		defer t.Stop()
		syncOK := loaded // the store answered last time
		var syncC <-chan time.Time
		if st != nil {
			ts := time.NewTicker(c.FleetInterval)
			defer ts.Stop()
			syncC = ts.C
		}
		for {
			select {
			case <-stop:
				if st != nil && syncOK { // flush what settled since the last sync (not into a store that is down)
					ctx, cancel := context.WithTimeout(context.Background(), min(fleetLoadTimeout, s.spendW.Options().FlushTimeout))
					_, err := sh.Sync(ctx, st, time.Now())
					cancel()
					s.Bidder.CountShadingFleet(false, err == nil)
				}
				return
			case now := <-t.C:
				sh.Refresh(now)
			case now := <-syncC:
				if !loaded {
					loaded = load(c.FleetInterval)
				}
				ctx, cancel := context.WithTimeout(context.Background(), c.FleetInterval)
				_, err := sh.Sync(ctx, st, now)
				cancel()
				syncOK = err == nil
				s.Bidder.CountShadingFleet(false, err == nil)
				if err != nil {
					s.log.Warn("bid shading: sync with the fleet's counts", zap.Error(err))
				}
			}
		}
	}()
}

func (s *Server) stopShading() {
	if s.shadingStop != nil {
		close(s.shadingStop)
		s.shadingStop = nil
	}
	s.shadingWG.Wait()
}
