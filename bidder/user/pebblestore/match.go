package pebblestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rtbd/rtbd/bidder/user"
)

// appendMatchKey appends the Pebble key of a match entry: "m" + key (a
// profile's is "u" + uid).
func appendMatchKey(dst []byte, key string) []byte {
	dst = append(dst, 'm')
	return append(dst, key...)
}

// PutMatch stores the match entry key (see user.MatchKey) -> uid, living
// Options.MatchTTL from now (0: no expiry). A later PutMatch of key
// replaces it. Errors: ctx's, user.ErrInvalidUID (key or uid), user.ErrClosed, or an
// I/O error.
func (s *Store) PutMatch(ctx context.Context, key, uid string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := user.CheckUID(key); err != nil {
		return fmt.Errorf("match key: %w", err)
	}
	if err := user.CheckUID(uid); err != nil {
		return err
	}
	st, err := s.lockStripe(key)
	if err != nil {
		return err
	}
	defer s.unlockStripe(st)
	st.key = appendMatchKey(st.key[:0], key)
	exp := int64(math.MaxInt64)
	if s.opts.MatchTTL > 0 {
		exp = time.Now().Add(s.opts.MatchTTL).UnixNano()
	}
	st.val = append(st.val[:0], stampTag)
	st.val = binary.BigEndian.AppendUint64(st.val, uint64(exp))
	st.val = append(st.val, uid...)
	if err := s.db.Set(st.key, st.val, pebble.NoSync); err != nil {
		return fmt.Errorf("user: put match: %w", err)
	}
	return nil
}

// GetMatched resolves the match entry key to rtbd's uid, or to fallback
// when there is no live entry (and fallback is not ""), appends that uid to
// dst and returns it (nil when neither), and reads its profile into p like
// Get (found reports a profile). Both reads are local. It allocates
// nothing once dst and p have room (as Get). Errors: as Get's; a key that
// fails user.CheckUID is user.ErrInvalidUID.
func (s *Store) GetMatched(ctx context.Context, key, fallback string, dst []byte, p *user.Profile) (uid []byte, found bool, err error) {
	p.Reset()
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if !user.ValidUID(key) {
		return nil, false, user.CheckUID(key)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, false, user.ErrClosed
	}
	kp := s.keys.Get().(*[]byte)
	k := appendMatchKey((*kp)[:0], key)
	v, closer, err := s.db.Get(k)
	*kp = k
	s.keys.Put(kp)
	switch {
	case err == nil:
		if body, live := unstamp(v, time.Now()); live && len(v) > stampLen && v[0] == stampTag {
			uid = append(dst[:0], body...)
		}
		_ = closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		s.mu.RUnlock()
		return nil, false, fmt.Errorf("user: get match: %w", err)
	}
	s.mu.RUnlock()
	if uid == nil && fallback != "" { // none, or expired (overwritten by the next /match)
		uid = append(dst[:0], fallback...)
	}
	if uid == nil {
		return nil, false, nil
	}
	found, err = s.Get(ctx, unsafe.String(unsafe.SliceData(uid), len(uid)), p)
	return uid, found, err
}

// Count scans the store and returns how many profiles and match entries it
// holds, expired ones included until a read or a compaction drops them. It
// reads every key: for tests and operators, not for a serving path.
func (s *Store) Count() (profiles, matches int, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, 0, user.ErrClosed
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return 0, 0, fmt.Errorf("user: count: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		switch k := it.Key(); {
		case len(k) > 0 && k[0] == 'u':
			profiles++
		case len(k) > 0 && k[0] == 'm':
			matches++
		}
	}
	if err := it.Close(); err != nil {
		return 0, 0, fmt.Errorf("user: count: %w", err)
	}
	return profiles, matches, nil
}
