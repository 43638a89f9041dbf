// Package redisstore keeps user profiles in a Redis shared by a fleet of
// bidders: one string key per user, Prefix + "u:" + uid, holding the
// profile's user.AppendProfile bytes, with a key expiry of Options.TTL set
// by every write (RecordView, Put) and never touched by a read.
//
// RecordView is a read-modify-write under WATCH/MULTI/EXEC (optimistic:
// a concurrent write of the same key aborts the EXEC, and the view is read
// and applied again), so concurrent views of one user are never lost.
//
// Redis bounds nothing by itself: configure maxmemory with the volatile-lru
// policy so that the least recently used profiles (every profile key has an
// expiry) are evicted before the server refuses writes.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/user"
)

// ErrConflict is returned by RecordView when the profile kept changing
// under it (more than maxAttempts aborted transactions).
var ErrConflict = errors.New("redisstore: too many concurrent updates")

const maxAttempts = 32

// DefaultPrefix is the default key prefix (config redis.prefix).
const DefaultPrefix = "rtbd:"

// Options configure a Store. Zero values take the defaults noted.
type Options struct {
	// Prefix starts every key. Default "rtbd:".
	Prefix string
	// TTL is the lifetime of a profile after its last write. 0: no expiry.
	TTL time.Duration
	// MatchTTL is the lifetime of a match entry (PutMatch) after its last
	// write. 0: no expiry.
	MatchTTL time.Duration
	// MaxViewed, MaxGroups and MaxRecommended bound profiles like
	// user.Options. Defaults 50, 20 and 100.
	MaxViewed, MaxGroups, MaxRecommended int
}

// Store keeps profiles in Redis. Safe for concurrent use; it does not own
// the client.
type Store struct {
	c    redis.UniversalClient
	opts Options
}

// New returns a store on c.
func New(c redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.MaxViewed <= 0 {
		opts.MaxViewed = 50
	}
	if opts.MaxGroups <= 0 {
		opts.MaxGroups = 20
	}
	if opts.MaxRecommended <= 0 {
		opts.MaxRecommended = 100
	}
	return &Store{c: c, opts: opts}
}

func (s *Store) key(uid string) string { return s.opts.Prefix + "u:" + uid }

func (s *Store) matchKey(key string) string { return s.opts.Prefix + "m:" + key }

// PutMatch stores the match entry key (user.MatchKey) -> uid at Prefix +
// "m:" + key, expiring MatchTTL from now. Errors: user.ErrInvalidUID (key
// or uid) or the client's error.
func (s *Store) PutMatch(ctx context.Context, key, uid string) error {
	if err := user.CheckUID(key); err != nil {
		return fmt.Errorf("match key: %w", err)
	}
	if err := user.CheckUID(uid); err != nil {
		return err
	}
	if err := s.c.Set(ctx, s.matchKey(key), uid, s.opts.MatchTTL).Err(); err != nil {
		return fmt.Errorf("redisstore: put match: %w", err)
	}
	return nil
}

// matchedScript reads a match entry and, when there is one, the profile of
// its uid: one round trip. The profile key is built in the script from
// ARGV[1] (the prefix), so it needs a single Redis (or a cluster whose
// keys of a fleet share one slot), as the rest of rtbd's Redis use does.
var matchedScript = redis.NewScript(`
local uid = redis.call('GET', KEYS[1])
if not uid then uid = ARGV[2] end
if uid == '' then return false end
local p = redis.call('GET', ARGV[1] .. 'u:' .. uid)
if not p then return {uid} end
return {uid, p}
`)

// GetMatched resolves the match entry key to rtbd's uid, or to fallback
// when there is none (and fallback is not ""), appends that uid to dst and
// returns it (nil when neither), and reads its profile into p (found
// reports one), in one round trip (a Lua script). Errors: as Get's.
func (s *Store) GetMatched(ctx context.Context, key, fallback string, dst []byte, p *user.Profile) ([]byte, bool, error) {
	p.Reset()
	if err := user.CheckUID(key); err != nil {
		return nil, false, err
	}
	res, err := matchedScript.Run(ctx, s.c, []string{s.matchKey(key)}, s.opts.Prefix, fallback).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redisstore: get matched: %w", err)
	}
	if len(res) == 0 {
		return nil, false, nil
	}
	u, _ := res[0].(string)
	if u == "" {
		return nil, false, nil
	}
	uid := append(dst[:0], u...)
	if len(res) < 2 {
		return uid, false, nil
	}
	b, _ := res[1].(string)
	if err := user.DecodeProfile([]byte(b), p); err != nil {
		p.Reset()
		return uid, false, fmt.Errorf("redisstore: user %q: %w", u, err)
	}
	return uid, true, nil
}

// Get reads uid's profile into p (reset first) and reports whether there is
// one. It does not renew the profile's expiry. The deadline of ctx bounds
// the call. Errors: ctx's, user.ErrInvalidUID, user.ErrCorrupt, or the
// client's error; p is empty on error.
func (s *Store) Get(ctx context.Context, uid string, p *user.Profile) (bool, error) {
	p.Reset()
	if err := user.CheckUID(uid); err != nil {
		return false, err
	}
	b, err := s.c.Get(ctx, s.key(uid)).Bytes()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("redisstore: get: %w", err)
	}
	if err := user.DecodeProfile(b, p); err != nil {
		p.Reset()
		return false, fmt.Errorf("redisstore: user %q: %w", uid, err)
	}
	return true, nil
}

// Put replaces uid's profile after p.Validate with the store's limits, and
// sets its expiry.
func (s *Store) Put(ctx context.Context, uid string, p *user.Profile) error {
	if err := user.CheckPut(uid, p, s.limits()); err != nil {
		return err
	}
	if err := s.c.Set(ctx, s.key(uid), user.AppendProfile(nil, p), s.opts.TTL).Err(); err != nil {
		return fmt.Errorf("redisstore: put: %w", err)
	}
	return nil
}

func (s *Store) limits() user.Limits {
	return user.Limits{MaxGroups: s.opts.MaxGroups, MaxViewed: s.opts.MaxViewed, MaxRecommended: s.opts.MaxRecommended}
}

// RecordView records that uid viewed product pid of group, like
// user.Store.RecordView (the oldest beyond MaxViewed and MaxGroups are
// dropped), and renews the profile's expiry. Errors: ctx's,
// user.ErrInvalidUID, user.ErrInvalidProfile (group or pid <= 0),
// user.ErrCorrupt (the stored profile is left as it is), ErrConflict, or
// the client's error.
func (s *Store) RecordView(ctx context.Context, uid string, group, pid int64) error {
	if err := user.CheckUID(uid); err != nil {
		return err
	}
	if group <= 0 || pid <= 0 {
		return fmt.Errorf("%w: view of product %d in group %d: ids must be > 0", user.ErrInvalidProfile, pid, group)
	}
	return s.update(ctx, uid, "record view", func(p *user.Profile, _ bool) bool {
		p.RecordView(group, pid, s.opts.MaxGroups, s.opts.MaxViewed)
		return true
	})
}

// update is the read-modify-write of uid's profile under
// WATCH/MULTI/EXEC: apply changes the profile read (empty, found false,
// when there is none) and says whether to write it; a concurrent write of
// the key aborts the EXEC, and the profile is read and applied again (at
// most maxAttempts times, then ErrConflict). what names the operation in
// errors.
func (s *Store) update(ctx context.Context, uid, what string, apply func(p *user.Profile, found bool) bool) error {
	key := s.key(uid)
	var p user.Profile
	tx := func(tx *redis.Tx) error {
		p.Reset()
		found := false
		b, err := tx.Get(ctx, key).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return err
		default:
			if err := user.DecodeProfile(b, &p); err != nil {
				return fmt.Errorf("user %q: %w", uid, err)
			}
			found = true
		}
		if !apply(&p, found) {
			return nil
		}
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
		err := s.c.Watch(ctx, tx, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue // someone else wrote first: read again
		}
		if err != nil {
			return fmt.Errorf("redisstore: %s: %w", what, err)
		}
		return nil
	}
	return ErrConflict
}
