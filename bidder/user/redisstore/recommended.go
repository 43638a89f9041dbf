package redisstore

import (
	"context"

	"github.com/rtbd/rtbd/bidder/user"
)

// SetRecommended replaces the Recommended products of uid's profile with
// rec, keeping its Viewed products and Segments, like
// pebblestore.Store.SetRecommended (a uid without a profile gets one holding rec
// only; nothing is written for an empty rec), and renews the profile's
// expiry. It is the read-modify-write RecordView does, under
// WATCH/MULTI/EXEC: a view recorded between its read and its write aborts
// the EXEC, and the profile is read and set again, so neither is lost. Errors:
// ctx's, user.ErrInvalidUID, user.ErrInvalidProfile (rec breaks
// user.CheckRecommended with the store's limits), user.ErrCorrupt (the
// stored profile is left as it is), ErrConflict, or the client's error.
func (s *Store) SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error {
	if err := user.CheckRecommended(uid, rec, s.limits()); err != nil {
		return err
	}
	return s.update(ctx, uid, "set recommended", func(p *user.Profile, found bool) bool {
		if !found && len(rec) == 0 {
			return false
		}
		p.SetRecommended(rec)
		return true
	})
}
