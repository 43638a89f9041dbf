package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/user"
)

// SetRecommended replaces the Recommended products of uid's profile with
// rec, keeping its Viewed products and Segments, like
// user.Store.SetRecommended (a uid without a profile gets one holding rec
// only; nothing is written for an empty rec), and renews the profile's
// expiry. It is a read-modify-write under WATCH/MULTI/EXEC, like
// RecordView: a view recorded between its read and its write aborts the
// EXEC, and the profile is read and set again, so neither is lost. Errors:
// ctx's, user.ErrInvalidUID, user.ErrInvalidProfile (rec breaks
// user.CheckRecommended with the store's limits), user.ErrCorrupt (the
// stored profile is left as it is), ErrConflict, or the client's error.
func (s *Store) SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error {
	if err := user.CheckRecommended(uid, rec, s.limits()); err != nil {
		return err
	}
	key := s.key(uid)
	var p user.Profile
	apply := func(tx *redis.Tx) error {
		p.Reset()
		b, err := tx.Get(ctx, key).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			if len(rec) == 0 {
				return nil
			}
		case err != nil:
			return err
		default:
			if err := user.DecodeProfile(b, &p); err != nil {
				return fmt.Errorf("user %q: %w", uid, err)
			}
		}
		p.SetRecommended(rec)
		val := user.AppendProfile(nil, &p)
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, key, val, s.opts.TTL)
			return nil
		})
		return err
	}
	for attempt := range maxAttempts {
		if err := user.ConflictBackoff(ctx, attempt); err != nil {
			return err
		}
		err := s.c.Watch(ctx, apply, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue // a view was recorded meanwhile: read again
		}
		if err != nil {
			return fmt.Errorf("redisstore: set recommended: %w", err)
		}
		return nil
	}
	return ErrConflict
}
