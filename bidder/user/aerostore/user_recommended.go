package aerostore

import (
	"context"
	"fmt"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/user"
)

// maxRecommended is the most recommended products per group a profile
// written here may hold (Put and SetRecommended).
const maxRecommended = 100

// SetRecommended replaces the Recommended products of uid's profile with
// rec, keeping its Viewed products and Segments, like
// user.Store.SetRecommended (a uid without a profile gets one holding rec
// only; nothing is written for an empty rec), and renews the profile's
// expiry. It is a read-modify-write checked by generation, like
// RecordView: the write expects the generation it read (create-only when
// there was no record), so a view recorded meanwhile makes it fail with a
// generation conflict, and the profile is read and set again; neither is
// lost. Errors: ctx's, user.ErrInvalidUID, user.ErrInvalidProfile (rec
// breaks user.CheckRecommended with the store's limits), user.ErrCorrupt
// (the stored profile is left as it is), ErrConflict, or the client's
// error.
func (s *UserStore) SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error {
	lim := user.Limits{MaxGroups: s.opts.MaxGroups, MaxViewed: s.opts.MaxViewed, MaxRecommended: maxRecommended}
	if err := user.CheckRecommended(uid, rec, lim); err != nil {
		return err
	}
	k, err := s.key(uid)
	if err != nil {
		return err
	}
	var p user.Profile
	for attempt := range maxAttempts {
		if err := user.ConflictBackoff(ctx, attempt); err != nil {
			return err
		}
		t, err := s.timeout(ctx)
		if err != nil {
			return err
		}
		pol := as.NewPolicy()
		pol.TotalTimeout, pol.SocketTimeout = t, t
		rec0, aerr := s.c.Get(pol, k, "p")
		wp := s.writePolicy(t)
		p.Reset()
		switch {
		case aerr != nil && aerr.Matches(types.KEY_NOT_FOUND_ERROR):
			if len(rec) == 0 {
				return nil
			}
			wp.RecordExistsAction = as.CREATE_ONLY
		case aerr != nil:
			return fmt.Errorf("aerostore: set recommended: %w", aerr)
		default:
			b, ok := rec0.Bins["p"].([]byte)
			if !ok {
				return fmt.Errorf("aerostore: user %q: %w: bin p is %T", uid, user.ErrCorrupt, rec0.Bins["p"])
			}
			if err := user.DecodeProfile(b, &p); err != nil {
				return fmt.Errorf("aerostore: user %q: %w", uid, err)
			}
			wp.GenerationPolicy = as.EXPECT_GEN_EQUAL
			wp.Generation = rec0.Generation
		}
		p.SetRecommended(rec)
		aerr = s.c.PutBins(wp, k, as.NewBin("p", user.AppendProfile(nil, &p)))
		if aerr == nil {
			return nil
		}
		if aerr.Matches(types.GENERATION_ERROR, types.KEY_EXISTS_ERROR) {
			continue // a view was recorded meanwhile: read again
		}
		return fmt.Errorf("aerostore: set recommended: %w", aero.WriteErr(s.opts.Namespace, s.opts.UserSet, aerr))
	}
	return ErrConflict
}
