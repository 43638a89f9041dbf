package pebblestore

import (
	"context"
	"fmt"
	"time"

	"github.com/rtbd/rtbd/bidder/user"
)

// SetRecommended replaces the Recommended products of uid's profile with
// rec (an outside recommender's lists: per group, product ids best first;
// not retained), keeping its Viewed products and Segments; an empty rec
// removes them, so the bidder falls back to the products similar to the
// viewed ones. A uid without a profile gets one holding rec only (nothing
// is written for an empty rec). It is a read-modify-write under uid's
// stripe lock, the one RecordView takes, so neither a view recorded
// meanwhile nor rec is lost. It renews the profile's expiry. Durability as
// RecordView's. Errors: ctx's, user.ErrInvalidUID, user.ErrInvalidProfile (rec breaks
// user.CheckRecommended with the store's limits), user.ErrClosed, user.ErrCorrupt (the
// stored profile does not decode; it is left as it is), or an I/O error.
func (s *Store) SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := user.CheckRecommended(uid, rec, s.limits()); err != nil {
		return err
	}
	st, err := s.lockStripe(uid)
	if err != nil {
		return err
	}
	defer s.unlockStripe(st)
	if err := s.load(st.key, &st.p); err != nil {
		return fmt.Errorf("pebblestore: uid %q: %w", uid, err)
	}
	if st.p.IsEmpty() && len(rec) == 0 {
		return nil
	}
	st.p.SetRecommended(rec)
	st.val = appendStamped(st.val[:0], &st.p, s.opts.TTL, time.Now())
	if err := s.setProfile(uid, st); err != nil {
		return fmt.Errorf("pebblestore: set recommended: %w", err)
	}
	return nil
}
