package demo

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/userstores"
	"github.com/rtbd/rtbd/configs"
)

// profilePutter is the part of a shared user store LoadUsers writes with.
type profilePutter interface {
	Put(ctx context.Context, uid string, p *user.Profile) error
}

// LoadUsers writes the profiles of demo users 1..o.Users (as WriteUsers)
// into the user store cfg configures (userstores.Open: Pebble in
// bidder.data_dir/users, Redis at redis.addr, or Aerospike at
// aerospike.hosts), with cfg's user.ttl and caps, so the profiles expire
// like those a bidder writes. It returns the number written and where they
// went.
func LoadUsers(ctx context.Context, cfg *configs.Config, o Options, log *zap.Logger) (n int, where string, err error) {
	o, stock, err := demoStock(o)
	if err != nil {
		return 0, "", err
	}
	st, err := userstores.Open(ctx, cfg, userstores.Options{Pebble: pebblestore.Options{Logger: log}})
	if ce := (*userstores.ConfigError)(nil); errors.As(err, &ce) {
		return 0, "", fmt.Errorf("%w: %w", ErrBadOptions, err)
	} else if err != nil {
		return 0, "", fmt.Errorf("demo: users: %w", err)
	}
	defer func() {
		if cerr := st.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("demo: users: %w", cerr)
		}
	}()
	if st.Embedded != nil {
		n, err = bulkPutUsers(ctx, st.Embedded, o, stock)
	} else {
		n, err = putUsers(ctx, st, o, stock)
	}
	return n, st.Where, err
}

// putUsers writes the demo users one Put at a time.
func putUsers(ctx context.Context, s profilePutter, o Options, stock *Stock) (int, error) {
	var p user.Profile
	for i := 1; i <= o.Users; i++ {
		UserProfile(i, o, stock, &p)
		if err := s.Put(ctx, UserID(i), &p); err != nil {
			return i - 1, fmt.Errorf("demo: users: %w", err)
		}
	}
	return o.Users, nil
}
