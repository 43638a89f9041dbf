package aerostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/user"
)

// ErrConflict is returned by RecordView when the record kept changing under
// it (more than maxAttempts generation conflicts).
var ErrConflict = errors.New("aerostore: too many concurrent updates")

const maxAttempts = 32

// Store keeps user profiles in Aerospike, one record per user with the
// profile's user.AppendProfile bytes in bin "p". It satisfies the bidder's
// UserStore interface (Get, RecordView). Safe for concurrent use; it does
// not own the client.
type Store struct {
	c        *as.Client
	opts     aero.Options
	matchTTL time.Duration

	onKey func(*as.Key) // tests only: sees every key the store builds
}

// DefaultMatchSet is the set of match entries (PutMatch): a set of its own,
// since an entry's key could equal a uid.
const DefaultMatchSet = "match"

// WithMatchTTL sets the lifetime of match entries after their last write
// (0: the namespace's default-ttl) and returns s. Call it before s is used.
func (s *Store) WithMatchTTL(ttl time.Duration) *Store {
	s.matchTTL = ttl
	return s
}

// PutMatch stores the match entry key (user.MatchKey) -> uid: a record of
// DefaultMatchSet keyed by key with the uid in bin "u", living the match
// TTL (WithMatchTTL). Errors: user.ErrInvalidUID (key or uid), ctx's, or
// the client's error.
func (s *Store) PutMatch(ctx context.Context, key, uid string) error {
	if err := user.CheckUID(key); err != nil {
		return fmt.Errorf("match key: %w", err)
	}
	if err := user.CheckUID(uid); err != nil {
		return err
	}
	t, err := s.timeout(ctx)
	if err != nil {
		return err
	}
	k, err := s.matchKey(key)
	if err != nil {
		return err
	}
	wp := as.NewWritePolicy(0, uint32(s.matchTTL/time.Second))
	wp.TotalTimeout, wp.SocketTimeout = t, t
	wp.MaxRetries = 0
	if aerr := s.c.PutBins(wp, k, as.NewBin("u", uid)); aerr != nil {
		return fmt.Errorf("aerostore: put match: %w", aero.WriteErr(s.opts.Namespace, DefaultMatchSet, aerr))
	}
	return nil
}

// GetMatched resolves the match entry key to rtbd's uid, or to fallback
// when there is none (and fallback is not ""), appends that uid to dst and
// returns it (nil when neither), and reads its profile into p (found
// reports one). A hit costs two reads, one after the other (the entry,
// then the profile: Aerospike CE has no server-side join of two records),
// so a bid resolved through the match table waits about twice a profile
// read; a miss costs one more read (of fallback's profile). Bids carrying
// user.buyeruid pay nothing. Errors: as Get's.
func (s *Store) GetMatched(ctx context.Context, key, fallback string, dst []byte, p *user.Profile) ([]byte, bool, error) {
	p.Reset()
	if err := user.CheckUID(key); err != nil {
		return nil, false, err
	}
	t, err := s.timeout(ctx)
	if err != nil {
		return nil, false, err
	}
	k, err := s.matchKey(key)
	if err != nil {
		return nil, false, err
	}
	pol := as.NewPolicy()
	pol.TotalTimeout, pol.SocketTimeout = t, t
	rec, aerr := s.c.Get(pol, k, "u")
	u := ""
	switch {
	case aerr == nil:
		u, _ = rec.Bins["u"].(string)
	case !aerr.Matches(types.KEY_NOT_FOUND_ERROR):
		return nil, false, fmt.Errorf("aerostore: get match: %w", aerr)
	}
	if u == "" {
		u = fallback
	}
	if u == "" {
		return nil, false, nil
	}
	found, err := s.Get(ctx, u, p)
	return append(dst[:0], u...), found, err
}

// New returns a user store on c.
func New(c *as.Client, opts aero.Options) *Store {
	opts.Defaults()
	return &Store{c: c, opts: opts}
}

// key is the key of uid's profile (Options.KeyPrefix + uid).
func (s *Store) key(uid string) (*as.Key, error) {
	k, err := as.NewKey(s.opts.Namespace, s.opts.UserSet, s.opts.KeyPrefix+uid)
	if err != nil {
		return nil, fmt.Errorf("aerostore: user key: %w", err)
	}
	if s.onKey != nil {
		s.onKey(k)
	}
	return k, nil
}

// matchKey is the key of match entry key (Options.KeyPrefix + key).
func (s *Store) matchKey(key string) (*as.Key, error) {
	k, err := as.NewKey(s.opts.Namespace, DefaultMatchSet, s.opts.KeyPrefix+key)
	if err != nil {
		return nil, fmt.Errorf("aerostore: match key: %w", err)
	}
	if s.onKey != nil {
		s.onKey(k)
	}
	return k, nil
}

// Check writes and deletes a probe record in the user set with the TTL a
// profile write carries (UserTTL; 0 the namespace's default-ttl) and, when
// the match TTL differs, another in the match set with that one. It fails
// wrapping ErrTTLRefused, with a message naming nsup-period and the
// namespace, when the namespace refuses writes with a TTL (nsup-period 0,
// the server's default), so a bidder stops at start instead of failing
// every profile write.
func (s *Store) Check(ctx context.Context) error {
	if err := s.probe(ctx, s.opts.UserSet, s.opts.UserTTL); err != nil {
		return err
	}
	if s.matchTTL != s.opts.UserTTL {
		return s.probe(ctx, DefaultMatchSet, s.matchTTL)
	}
	return nil
}

func (s *Store) probe(ctx context.Context, set string, ttl time.Duration) error {
	t, err := s.timeout(ctx)
	if err != nil {
		return err
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	key, aerr := as.NewKey(s.opts.Namespace, set, s.opts.KeyPrefix+"probe|"+hex.EncodeToString(nonce[:]))
	if aerr != nil {
		return fmt.Errorf("aerostore: check key: %w", aerr)
	}
	wp := as.NewWritePolicy(0, uint32(ttl/time.Second))
	wp.TotalTimeout, wp.SocketTimeout = t, t
	if aerr := s.c.Put(wp, key, as.BinMap{"p": 1}); aerr != nil {
		return aero.CheckErr(s.opts.Namespace, set, aerr)
	}
	if _, aerr := s.c.Delete(wp, key); aerr != nil {
		return fmt.Errorf("aerostore: check namespace %q: delete probe: %w", s.opts.Namespace, aerr)
	}
	return nil
}

func (s *Store) timeout(ctx context.Context) (time.Duration, error) {
	return aero.CallTimeout(ctx, s.opts.Timeout)
}

// Get reads uid's profile into p (reset first) and reports whether there is
// one. The deadline of ctx bounds the call. Errors: ctx's, a uid that
// user.CheckUID rejects, user.ErrCorrupt for a stored value that does not
// decode, or the client's error. p is empty on error. Get allocates (the
// client's record), unlike the Pebble store.
func (s *Store) Get(ctx context.Context, uid string, p *user.Profile) (bool, error) {
	p.Reset()
	if err := user.CheckUID(uid); err != nil {
		return false, err
	}
	t, err := s.timeout(ctx)
	if err != nil {
		return false, err
	}
	k, err := s.key(uid)
	if err != nil {
		return false, err
	}
	pol := as.NewPolicy()
	pol.TotalTimeout, pol.SocketTimeout = t, t
	rec, aerr := s.c.Get(pol, k, "p")
	if aerr != nil {
		if aerr.Matches(types.KEY_NOT_FOUND_ERROR) {
			return false, nil
		}
		return false, fmt.Errorf("aerostore: get user: %w", aerr)
	}
	b, ok := rec.Bins["p"].([]byte)
	if !ok {
		return false, fmt.Errorf("aerostore: user %q: %w: bin p is %T", uid, user.ErrCorrupt, rec.Bins["p"])
	}
	if err := user.DecodeProfile(b, p); err != nil {
		p.Reset()
		return false, fmt.Errorf("aerostore: user %q: %w", uid, err)
	}
	return true, nil
}

// Put replaces uid's profile after p.Validate with the store's limits.
func (s *Store) Put(ctx context.Context, uid string, p *user.Profile) error {
	if err := user.CheckPut(uid, p, user.Limits{MaxGroups: s.opts.MaxGroups, MaxViewed: s.opts.MaxViewed, MaxRecommended: maxRecommended}); err != nil {
		return err
	}
	t, err := s.timeout(ctx)
	if err != nil {
		return err
	}
	k, err := s.key(uid)
	if err != nil {
		return err
	}
	wp := s.writePolicy(t)
	if aerr := s.c.PutBins(wp, k, as.NewBin("p", user.AppendProfile(nil, p))); aerr != nil {
		return fmt.Errorf("aerostore: put user: %w", aero.WriteErr(s.opts.Namespace, s.opts.UserSet, aerr))
	}
	return nil
}

func (s *Store) writePolicy(t time.Duration) *as.WritePolicy {
	wp := as.NewWritePolicy(0, uint32(s.opts.UserTTL/time.Second))
	wp.TotalTimeout, wp.SocketTimeout = t, t
	wp.MaxRetries = 0
	wp.SendKey = false
	return wp
}

// RecordView records that uid viewed product pid of group, like
// user.Store.RecordView: pid moves to the front of the group's viewed list,
// the group to the front of Viewed, and the oldest beyond MaxViewed and
// MaxGroups are dropped. It is a read-modify-write checked by generation
// and retried on conflict, so concurrent views are never lost (with a random backoff between
// attempts). Errors:
// ctx's, user.ErrInvalidUID, user.ErrInvalidProfile (group or pid <= 0),
// user.ErrCorrupt (the stored profile is left as it is), ErrConflict, or
// the client's error.
func (s *Store) RecordView(ctx context.Context, uid string, group, pid int64) error {
	if err := user.CheckUID(uid); err != nil {
		return err
	}
	if group <= 0 || pid <= 0 {
		return fmt.Errorf("%w: group %d, product %d", user.ErrInvalidProfile, group, pid)
	}
	return s.update(ctx, uid, "record view", func(p *user.Profile, _ bool) bool {
		p.RecordView(group, pid, s.opts.MaxGroups, s.opts.MaxViewed)
		return true
	})
}

// update is the read-modify-write of uid's profile checked by generation:
// apply changes the profile read (empty, found false, when there is none)
// and says whether to write it; the write expects the generation read
// (create-only when there was no record), and a conflict reads and
// applies again after a random backoff (at most maxAttempts times, then
// ErrConflict). what names the operation in errors.
func (s *Store) update(ctx context.Context, uid, what string, apply func(p *user.Profile, found bool) bool) error {
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
		rec, aerr := s.c.Get(pol, k, "p")
		wp := s.writePolicy(t)
		p.Reset()
		found := false
		switch {
		case aerr != nil && aerr.Matches(types.KEY_NOT_FOUND_ERROR):
			wp.RecordExistsAction = as.CREATE_ONLY
		case aerr != nil:
			return fmt.Errorf("aerostore: %s: %w", what, aerr)
		default:
			b, ok := rec.Bins["p"].([]byte)
			if !ok {
				return fmt.Errorf("aerostore: user %q: %w: bin p is %T", uid, user.ErrCorrupt, rec.Bins["p"])
			}
			if err := user.DecodeProfile(b, &p); err != nil {
				return fmt.Errorf("aerostore: user %q: %w", uid, err)
			}
			wp.GenerationPolicy = as.EXPECT_GEN_EQUAL
			wp.Generation = rec.Generation
			found = true
		}
		if !apply(&p, found) {
			return nil
		}
		aerr = s.c.PutBins(wp, k, as.NewBin("p", user.AppendProfile(nil, &p)))
		if aerr == nil {
			return nil
		}
		if aerr.Matches(types.GENERATION_ERROR, types.KEY_EXISTS_ERROR) {
			continue // someone else wrote first: read again
		}
		return fmt.Errorf("aerostore: %s: %w", what, aero.WriteErr(s.opts.Namespace, s.opts.UserSet, aerr))
	}
	return ErrConflict
}

// Options returns the options in force (defaults applied).
func (s *Store) Options() aero.Options { return s.opts }

// Options configures a Store (it reads Namespace, UserSet, UserTTL,
// Timeout, MaxViewed, MaxGroups and KeyPrefix), for callers outside the
// bidder's packages.
type Options = aero.Options

// Connect connects to the Aerospike cluster at hosts ("host:port,...")
// with the client's default policy, for callers outside the bidder's
// packages.
func Connect(hosts string) (*as.Client, error) { return aero.Connect(hosts, nil) }
