package server

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/spend"
	"github.com/rtbd/rtbd/configs"
)

// takeInstanceLease takes the lease on the bidder's spend.instance_id in a
// shared spend store (spend.LeaseStore: Redis, Aerospike) before the
// journal is replayed or anything is served, so that two live bidders
// never run with one id (see spend.AcquireLease). The embedded Pebble
// store is not shared and locks its directory: it needs none.
func (s *Server) takeInstanceLease(cfg *configs.Config, store spend.Store, instance string, log *zap.Logger) error {
	ls, ok := store.(spend.LeaseStore)
	if !ok {
		return nil
	}
	ttl := cfg.Spend.InstanceLease
	ctx, cancel := context.WithTimeout(context.Background(), 2*ttl)
	defer cancel()
	l, err := spend.AcquireLease(ctx, ls, instance, spend.NewLeaseHolder(), spend.LeaseOptions{TTL: ttl, Logger: log})
	if errors.Is(err, spend.ErrLeaseHeld) {
		return fmt.Errorf("%w: spend.instance_id %q: %w", bidder.ErrOptions, instance, err)
	}
	if err != nil {
		return fmt.Errorf("bidder: spend.instance_id %q: %w", instance, err)
	}
	s.lease = l
	if l.Held() {
		log.Info("spend instance lease taken", zap.String("instance_id", instance), zap.String("holder", l.Holder()),
			zap.Duration("lease", ttl))
	}
	return nil
}

// releaseInstanceLease frees the lease after the spend Writer's last flush,
// so a restart takes it at once. It always returns nil (a failure is
// logged: the lease expires on its own).
func (s *Server) releaseInstanceLease() error {
	if s.lease == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Spend.InstanceLease)
	defer cancel()
	if err := s.lease.Close(ctx); err != nil {
		// Harmless: the lease expires within spend.instance_lease.
		s.log.Warn("bidder: releasing the spend instance lease failed; a restart waits for it to expire",
			zap.String("instance_id", s.lease.ID()), zap.Error(err))
	}
	return nil
}

// leaseState is the readiness of the instance lease: not ready once the
// store says another process holds it; a store that does not answer is
// ignored, as for the store itself.
func (s *Server) leaseState() (string, bool) {
	switch {
	case s.lease.Held():
		return "held", true
	case s.lease.Lost():
		return "held by another process: another bidder runs with spend.instance_id " + s.lease.ID(), false
	}
	return "not taken yet, the store does not answer (ignored for readiness)", true
}

// defaultInstanceID is the host name, for an empty spend.instance_id, said
// in the log: two bidders on one host would share it.
func defaultInstanceID(log *zap.Logger) (string, error) {
	h, err := os.Hostname()
	if err != nil || !configs.ValidInstanceID(h) {
		return "", fmt.Errorf("%w: spend.instance_id is empty and the host name %q (%v) is not 1-32 of [0-9A-Za-z._-]: set spend.instance_id", bidder.ErrOptions, h, err)
	}
	log.Info("spend.instance_id is empty: using the host name; give each bidder on one host its own spend.instance_id",
		zap.String("instance_id", h))
	return h, nil
}
