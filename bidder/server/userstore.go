package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/recommended"
	"github.com/rtbd/rtbd/bidder/user/userstores"
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

// noClose is a shared store on a client the Server owns and closes itself.
type noClose struct{ userstores.Store }

func (noClose) Close() error { return nil }

// openUsers opens the user store user.store names (userstores.Open), on
// the Redis and Aerospike clients openSpend opened.
func (s *Server) openUsers(cfg *configs.Config, log *zap.Logger, reg prometheus.Registerer) error {
	po := userOptions(cfg)
	po.Logger, po.Registerer = log, reg
	st, err := userstores.Open(context.Background(), cfg, userstores.Options{Redis: s.rdb, Aerospike: s.aero, Pebble: po})
	var ce *userstores.ConfigError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("%w: %w", bidder.ErrOptions, err)
	case errors.Is(err, userstores.ErrLocked):
		return dataDirError(cfg.Bidder.DataDir, "", err)
	case err != nil:
		return fmt.Errorf("bidder: %w", err)
	case st.Embedded != nil:
		s.users = st.Embedded // the bid path reads the Pebble store itself
	default:
		s.users = noClose{st.Store}
	}
	s.usersOpened = userStoreInfo{limits: st.Limits, where: st.Where, embedded: st.Embedded != nil}
	log.Info("user store", zap.String("store", st.Kind))
	return nil
}

// userStoreInfo is what the Server keeps of userstores.Opened besides the
// store: what the recommendations route needs.
type userStoreInfo struct {
	limits   user.Limits
	where    string
	embedded bool
}

// recommendedWorkers is how many writes POST /admin/users/recommended
// runs at once on a shared store (Redis, Aerospike): a few, beside the
// bids' own calls. The embedded store takes one (each write is a Pebble
// batch; more would only contend on its stripe locks).
const recommendedWorkers = 8

// recommendedHandler serves POST /admin/users/recommended: an outside
// recommender's lines into this bidder's own user store (the way to load
// them while the bidder holds the embedded store). 501 when the store
// cannot set recommendations; a load in progress stops when Shutdown
// begins (503), so the admin listener drains at once.
func (s *Server) recommendedHandler(reg prometheus.Registerer) http.Handler {
	setter, _ := s.users.(recommended.Setter)
	o := recommended.HandlerOptions{Limits: s.usersOpened.limits, Workers: recommendedWorkers,
		Where: s.usersOpened.where, Logger: s.log, Registerer: reg}
	if s.usersOpened.embedded {
		o.Workers = 1
	}
	h := recommended.Handler(setter, o)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		stop := context.AfterFunc(s.loads, func() { cancel(context.Cause(s.loads)) })
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// errShuttingDown stops a load of POST /admin/users/recommended when
// Shutdown begins: the lines read so far are written, the answer says so.
var errShuttingDown = errors.New("the bidder is shutting down")
