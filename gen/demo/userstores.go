package demo

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/aerostore"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
	"github.com/rtbd/rtbd/configs"
)

// profilePutter is the part of a shared user store LoadUsers writes with.
type profilePutter interface {
	Put(ctx context.Context, uid string, p *user.Profile) error
}

// LoadUsers writes the profiles of demo users 1..o.Users (as WriteUsers)
// into the user store cfg configures (cfg.UserStoreKind: Pebble in
// bidder.data_dir/users, Redis at redis.addr, or Aerospike at
// aerospike.hosts), with cfg's user.ttl and caps, so the profiles expire
// like those a bidder writes. It returns the number written and where they
// went.
func LoadUsers(ctx context.Context, cfg *configs.Config, o Options, log *zap.Logger) (n int, where string, err error) {
	if log == nil {
		log = zap.NewNop()
	}
	u := cfg.User
	switch kind := cfg.UserStoreKind(); kind {
	case configs.UserStoreRedis:
		if cfg.Redis.Addr == "" {
			return 0, "", fmt.Errorf("%w: user.store redis needs redis.addr", ErrBadOptions)
		}
		c := redis.NewClient(&redis.Options{Addr: cfg.Redis.Addr, ContextTimeoutEnabled: true})
		defer c.Close()
		s := redisstore.New(c, redisstore.Options{Prefix: cfg.Redis.Prefix, TTL: u.TTL,
			MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup})
		n, err = putUsers(ctx, s, o)
		return n, "redis " + cfg.Redis.Addr, err
	case configs.UserStoreAerospike:
		if cfg.Aerospike.Hosts == "" {
			return 0, "", fmt.Errorf("%w: user.store aerospike needs aerospike.hosts", ErrBadOptions)
		}
		c, err := aerostore.Connect(cfg.Aerospike.Hosts)
		if err != nil {
			return 0, "", fmt.Errorf("demo: users: aerospike.hosts: %w", err)
		}
		defer c.Close()
		s := aerostore.NewUserStore(c, aerostore.Options{Namespace: cfg.Aerospike.Namespace, UserTTL: u.TTL,
			MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup})
		n, err = putUsers(ctx, s, o)
		return n, "aerospike " + cfg.Aerospike.Hosts, err
	default:
		dir := filepath.Join(cfg.Bidder.DataDir, UsersDir)
		n, err = writeUsersPebble(ctx, dir, o, pebblestore.Options{Logger: log, TTL: u.TTL,
			MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup})
		return n, dir, err
	}
}

// putUsers writes the demo users one Put at a time.
func putUsers(ctx context.Context, s profilePutter, o Options) (int, error) {
	o, stock, err := demoStock(o)
	if err != nil {
		return 0, err
	}
	var p user.Profile
	for i := 1; i <= o.Users; i++ {
		UserProfile(i, o, stock, &p)
		if err := s.Put(ctx, UserID(i), &p); err != nil {
			return i - 1, fmt.Errorf("demo: users: %w", err)
		}
	}
	return o.Users, nil
}
