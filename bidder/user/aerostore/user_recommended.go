package aerostore

import (
	"context"

	"github.com/rtbd/rtbd/bidder/user"
)

// maxRecommended is the most recommended products per group a profile
// written here may hold (Put and SetRecommended).
const maxRecommended = 100

// SetRecommended replaces the Recommended products of uid's profile with
// rec, keeping its Viewed products and Segments, like
// pebblestore.Store.SetRecommended (a uid without a profile gets one holding rec
// only; nothing is written for an empty rec), and renews the profile's
// expiry. It is the read-modify-write RecordView does, checked by
// generation: the write expects the generation it read (create-only when
// there was no record), so a view recorded meanwhile makes it fail with a
// generation conflict, and the profile is read and set again; neither is
// lost. Errors: ctx's, user.ErrInvalidUID, user.ErrInvalidProfile (rec
// breaks user.CheckRecommended with the store's limits), user.ErrCorrupt
// (the stored profile is left as it is), ErrConflict, or the client's
// error.
func (s *Store) SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error {
	lim := user.Limits{MaxGroups: s.opts.MaxGroups, MaxViewed: s.opts.MaxViewed, MaxRecommended: maxRecommended}
	if err := user.CheckRecommended(uid, rec, lim); err != nil {
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
