package server

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/internal/aero"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/aerostore"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
	"github.com/rtbd/rtbd/configs"
)

// ProfileStore is the user store a Server opens (user.store): the bid
// path's UserStore, Put to load profiles, and Close. Put and RecordView
// renew a profile's expiry (user.ttl); Get never does.
type ProfileStore interface {
	bidder.UserStore
	Put(ctx context.Context, uid string, p *user.Profile) error
	Close() error
}

// sharedUsers is a store on a client the Server owns and closes itself.
type sharedUsers interface {
	bidder.UserStore
	bidder.MatchStore
	Put(ctx context.Context, uid string, p *user.Profile) error
}

type noClose struct{ sharedUsers }

func (noClose) Close() error { return nil }

// openUsers opens the user store user.store names, on the Redis and
// Aerospike clients openSpend opened.
func (s *Server) openUsers(cfg *configs.Config, log *zap.Logger, reg prometheus.Registerer) error {
	kind := cfg.UserStoreKind()
	u := cfg.User
	switch kind {
	case configs.UserStoreRedis:
		if s.rdb == nil {
			return fmt.Errorf("%w: user.store redis needs redis.addr", bidder.ErrOptions)
		}
		s.users = noClose{redisstore.New(s.rdb, redisstore.Options{Prefix: cfg.Redis.Prefix,
			TTL: u.TTL, MatchTTL: u.MatchTTL, MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup})}
	case configs.UserStoreAerospike:
		if s.aero == nil {
			return fmt.Errorf("%w: user.store aerospike needs aerospike.hosts", bidder.ErrOptions)
		}
		st := aerostore.NewUserStore(s.aero, aero.Options{Namespace: cfg.Aerospike.Namespace,
			UserTTL: u.TTL, MaxGroups: u.MaxGroups, MaxViewed: u.MaxProductsPerGroup}).WithMatchTTL(u.MatchTTL)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := st.Check(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("bidder: aerospike.namespace (user.store aerospike): %w", err)
		}
		s.users = noClose{st}
	default:
		uo := userOptions(cfg)
		uo.Logger, uo.Registerer = log, reg
		db, err := pebblestore.Open(filepath.Join(cfg.Bidder.DataDir, "users"), uo)
		if err != nil {
			return dataDirError(cfg.Bidder.DataDir, "", err)
		}
		s.users = db
	}
	log.Info("user store", zap.String("store", kind))
	return nil
}
