package userstores

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/aerostore"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
	"github.com/rtbd/rtbd/configs"
)

// Dir is the embedded store's directory inside bidder.data_dir.
const Dir = "users"

// MaxRecommended is the most recommended products per group every store
// accepts (Limits.MaxRecommended).
const MaxRecommended = 100

// ConfigError is a configuration that names a shared store without its
// address: "user.store redis needs redis.addr". Callers wrap it in their
// own usage error.
type ConfigError struct {
	Store string // user.store: configs.UserStoreRedis or configs.UserStoreAerospike
	Key   string // the key it needs: redis.addr or aerospike.hosts
}

func (e *ConfigError) Error() string { return "user.store " + e.Store + " needs " + e.Key }

// ErrLocked is wrapped by Open's error when the embedded store is open in
// another process (a running bidder on the same bidder.data_dir): Pebble
// allows one process per directory.
var ErrLocked = errors.New("userstores: the embedded user store is held by another process")

// Store is what every user store does: the bid path's reads and views,
// the match table, Put of a whole profile, and SetRecommended of an
// outside recommender's lists.
type Store interface {
	Get(ctx context.Context, uid string, p *user.Profile) (found bool, err error)
	RecordView(ctx context.Context, uid string, group, pid int64) error
	Put(ctx context.Context, uid string, p *user.Profile) error
	PutMatch(ctx context.Context, key, uid string) error
	GetMatched(ctx context.Context, key, fallback string, dst []byte, p *user.Profile) (uid []byte, found bool, err error)
	SetRecommended(ctx context.Context, uid string, rec []user.GroupIDs) error
}

// Options are what a caller adds to the configuration. The zero value opens
// its own clients and a Pebble store with pebblestore's defaults.
type Options struct {
	// Redis is the client of redis.addr the store uses. nil: Open connects
	// one, and Opened.Close closes it. A caller's client stays the
	// caller's to close.
	Redis *redis.Client
	// Aerospike is the client of aerospike.hosts the store uses, as Redis.
	Aerospike *as.Client
	// Pebble are the embedded store's options; Open sets TTL, MatchTTL,
	// MaxGroups and MaxViewed from the user section, the rest (Logger,
	// Registerer, BlockCacheBytes...) is the caller's.
	Pebble pebblestore.Options
}

// Opened is a user store opened by Open. Close it once done.
type Opened struct {
	Store
	// Kind is the store's configs.UserStore* name.
	Kind string
	// Where names it: the Pebble directory, or "redis ADDR" or
	// "aerospike HOSTS".
	Where string
	// Embedded is the Pebble store (one process's at a time), nil for a
	// shared one; through it a loader may write in bulk.
	Embedded *pebblestore.Store
	// Limits are the ones Put and SetRecommended check: user.max_groups,
	// user.max_products_per_group, MaxRecommended.
	Limits user.Limits
	close  func() error
}

// Close closes the store and the client Open connected (not a caller's).
func (o *Opened) Close() error { return o.close() }

// Open opens the user store cfg names, on o's clients where given. Its
// errors name the config key: *ConfigError for a missing address, the
// namespace check's for aerospike.namespace, ErrLocked for an embedded
// store held by another process.
func Open(ctx context.Context, cfg *configs.Config, o Options) (*Opened, error) {
	u := cfg.User
	st := &Opened{Kind: cfg.UserStoreKind(), close: func() error { return nil },
		Limits: user.Limits{MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup, MaxRecommended: MaxRecommended}}
	switch st.Kind {
	case configs.UserStoreRedis:
		if cfg.Redis.Addr == "" {
			return nil, &ConfigError{Store: st.Kind, Key: "redis.addr"}
		}
		c := o.Redis
		if c == nil {
			c = redis.NewClient(&redis.Options{Addr: cfg.Redis.Addr, ContextTimeoutEnabled: true})
			st.close = c.Close
		}
		st.Store = redisstore.New(c, redisstore.Options{Prefix: cfg.Redis.Prefix, TTL: u.TTL, MatchTTL: u.MatchTTL,
			MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup})
		st.Where = "redis " + cfg.Redis.Addr
	case configs.UserStoreAerospike:
		if cfg.Aerospike.Hosts == "" {
			return nil, &ConfigError{Store: st.Kind, Key: "aerospike.hosts"}
		}
		c := o.Aerospike
		if c == nil {
			var err error
			if c, err = aero.Connect(cfg.Aerospike.Hosts, nil); err != nil {
				return nil, fmt.Errorf("userstores: aerospike.hosts: %w", err)
			}
			st.close = func() error { c.Close(); return nil }
		}
		s := aerostore.New(c, aero.Options{Namespace: cfg.Aerospike.Namespace, UserTTL: u.TTL,
			MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup}).WithMatchTTL(u.MatchTTL)
		if err := check(ctx, s); err != nil {
			_ = st.close()
			return nil, fmt.Errorf("userstores: aerospike.namespace (user.store aerospike): %w", err)
		}
		st.Store, st.Where = s, "aerospike "+cfg.Aerospike.Hosts
	default:
		dir := filepath.Join(cfg.Bidder.DataDir, Dir)
		s, err := pebblestore.Open(dir, PebbleOptions(cfg, o.Pebble))
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (a running bidder on bidder.data_dir %s?); the embedded store is one process's: keep profiles in Redis or Aerospike (user.store) to share them: %w",
				ErrLocked, dir, cfg.Bidder.DataDir, err)
		}
		if err != nil {
			return nil, fmt.Errorf("userstores: bidder.data_dir %s: %w", dir, err)
		}
		st.Store, st.Embedded, st.Where, st.close = s, s, dir, s.Close
	}
	return st, nil
}

// PebbleOptions are o with the user section's expiries and caps: the
// embedded store's options Open uses.
func PebbleOptions(cfg *configs.Config, o pebblestore.Options) pebblestore.Options {
	u := cfg.User
	o.TTL, o.MatchTTL, o.MaxGroups, o.MaxViewed = u.TTL, u.MatchTTL, u.MaxGroups, u.MaxProductsPerGroup
	return o
}

// check is s.Check within 5s: does aerospike.namespace exist.
func check(ctx context.Context, s *aerostore.Store) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.Check(ctx)
}
