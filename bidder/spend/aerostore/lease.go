package aerostore

import (
	"context"
	"fmt"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/internal/aero"
)

// The instance lease (spend.LeaseStore): the record "|lease|ID" of the
// spend set (no campaign key starts with '|') holds the holder's name in
// bin h and expires after the lease's TTL, rounded up to whole seconds.
// A free lease is taken by a CREATE_ONLY write, a renewal is a write
// expecting the generation read with the holder, and a release a delete
// expecting it: two processes racing for one lease cannot both win.

// leaseRaces is how often TakeLease reads again after losing a race.
const leaseRaces = 3

func (s *Store) leaseKey(id string) (*as.Key, error) {
	return s.key(s.opts.SpendSet, "|lease|"+id)
}

// readLease returns the lease record of key, nil when there is none.
func (s *Store) readLease(t time.Duration, key *as.Key) (*as.Record, string, error) {
	rp := as.NewPolicy()
	rp.TotalTimeout, rp.SocketTimeout = t, t
	rec, aerr := s.c.Get(rp, key, "h")
	switch {
	case aerr != nil && aerr.Matches(types.KEY_NOT_FOUND_ERROR):
		return nil, "", nil
	case aerr != nil:
		return nil, "", aerr
	}
	h, _ := rec.Bins["h"].(string)
	return rec, h, nil
}

// TakeLease implements spend.LeaseStore.
func (s *Store) TakeLease(ctx context.Context, id, holder string, ttl time.Duration) (bool, string, error) {
	t, err := s.timeout(ctx)
	if err != nil {
		return false, "", err
	}
	key, err := s.leaseKey(id)
	if err != nil {
		return false, "", err
	}
	secs := uint32((ttl + time.Second - 1) / time.Second)
	for race := 0; ; race++ {
		rec, h, err := s.readLease(t, key)
		if err != nil {
			return false, "", fmt.Errorf("aerostore: lease %s: %w", id, err)
		}
		if rec != nil && h != holder {
			return false, h, nil
		}
		wp := as.NewWritePolicy(0, secs)
		wp.TotalTimeout, wp.SocketTimeout = t, t
		if rec == nil {
			wp.RecordExistsAction = as.CREATE_ONLY
		} else {
			wp.GenerationPolicy, wp.Generation = as.EXPECT_GEN_EQUAL, rec.Generation
		}
		aerr := s.c.Put(wp, key, as.BinMap{"h": holder})
		switch {
		case aerr == nil:
			return true, "", nil
		case (aerr.Matches(types.KEY_EXISTS_ERROR) || aerr.Matches(types.GENERATION_ERROR)) && race < leaseRaces:
			continue // another process wrote it between the read and the write
		}
		return false, "", fmt.Errorf("aerostore: lease %s: %w", id, aero.WriteErr(s.opts.Namespace, s.opts.SpendSet, aerr))
	}
}

// ReleaseLease implements spend.LeaseStore.
func (s *Store) ReleaseLease(ctx context.Context, id, holder string) error {
	t, err := s.timeout(ctx)
	if err != nil {
		return err
	}
	key, err := s.leaseKey(id)
	if err != nil {
		return err
	}
	rec, h, err := s.readLease(t, key)
	if err != nil {
		return fmt.Errorf("aerostore: lease %s: %w", id, err)
	}
	if rec == nil || h != holder {
		return nil
	}
	wp := as.NewWritePolicy(rec.Generation, 0)
	wp.GenerationPolicy = as.EXPECT_GEN_EQUAL
	wp.TotalTimeout, wp.SocketTimeout = t, t
	if _, aerr := s.c.Delete(wp, key); aerr != nil && !aerr.Matches(types.GENERATION_ERROR, types.KEY_NOT_FOUND_ERROR) {
		return fmt.Errorf("aerostore: lease %s: %w", id, aerr)
	}
	return nil
}
