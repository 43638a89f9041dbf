package userstores_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/pebblestore"
	"github.com/rtbd/rtbd/bidder/user/userstores"
	"github.com/rtbd/rtbd/bidder/user/usertest"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

func defaults(t *testing.T) *configs.Config {
	t.Helper()
	cfg, err := configs.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Bidder.DataDir = t.TempDir()
	return cfg
}

// roundTrip puts a profile through st and reads it back.
func roundTrip(t *testing.T, st *userstores.Opened) {
	t.Helper()
	ctx := context.Background()
	want := usertest.SampleProfile()
	if err := st.Put(ctx, "u1", want); err != nil {
		t.Fatalf("%s: Put: %v", st.Where, err)
	}
	var got user.Profile
	if found, err := st.Get(ctx, "u1", &got); err != nil || !found || !usertest.EqualProfiles(&got, want) {
		t.Fatalf("%s: Get = %v, %v, %+v; want %+v", st.Where, found, err, got, want)
	}
}

func TestMissingAddress(t *testing.T) {
	for _, c := range []struct{ store, key string }{{configs.UserStoreRedis, "redis.addr"}, {configs.UserStoreAerospike, "aerospike.hosts"}} {
		cfg := defaults(t)
		cfg.User.Store = c.store
		_, err := userstores.Open(context.Background(), cfg, userstores.Options{})
		var ce *userstores.ConfigError
		if !errors.As(err, &ce) || ce.Key != c.key || err.Error() != "user.store "+c.store+" needs "+c.key {
			t.Errorf("user.store %s without %s: %v, want a ConfigError naming %s", c.store, c.key, err, c.key)
		}
	}
}

func TestPebble(t *testing.T) {
	cfg := defaults(t)
	cfg.User.MaxGroups = 3
	st, err := userstores.Open(context.Background(), cfg, userstores.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if want := filepath.Join(cfg.Bidder.DataDir, userstores.Dir); st.Kind != configs.UserStorePebble || st.Where != want || st.Embedded == nil {
		t.Errorf("Kind %q, Where %q, Embedded %v; want pebble in %s", st.Kind, st.Where, st.Embedded != nil, want)
	}
	if st.Limits.MaxGroups != 3 || st.Limits.MaxRecommended != userstores.MaxRecommended {
		t.Errorf("Limits %+v, want user.max_groups 3", st.Limits)
	}
	roundTrip(t, st)
	if o := userstores.PebbleOptions(cfg, pebblestore.Options{}); o.MaxGroups != 3 || o.TTL != cfg.User.TTL || o.MatchTTL != cfg.User.MatchTTL {
		t.Errorf("PebbleOptions %+v: not the user section's", o)
	}
}

func TestRedis(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	cfg := defaults(t)
	cfg.Redis.Addr = r.Addr

	// Its own client, closed by Close.
	st, err := userstores.Open(context.Background(), cfg, userstores.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != configs.UserStoreRedis || st.Where != "redis "+r.Addr || st.Embedded != nil {
		t.Errorf("Kind %q, Where %q, Embedded %v", st.Kind, st.Where, st.Embedded != nil)
	}
	roundTrip(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(context.Background(), "u2", usertest.SampleProfile()); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("Put after Close: %v, want the closed client's error", err)
	}

	// A caller's client stays open.
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	st, err = userstores.Open(context.Background(), cfg, userstores.Options{Redis: c})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Errorf("the caller's client after Close: %v", err)
	}
}

func TestAerospikeNamespace(t *testing.T) {
	srv, err := aerospiketest.Start(aerospiketest.Options{Namespace: "users"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg := defaults(t)
	cfg.Aerospike.Hosts, cfg.Aerospike.Namespace = srv.Addr(), "users"
	st, err := userstores.Open(context.Background(), cfg, userstores.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != configs.UserStoreAerospike || st.Where != "aerospike "+srv.Addr() {
		t.Errorf("Kind %q, Where %q", st.Kind, st.Where)
	}
	roundTrip(t, st)
	st.Close()

	cfg.Aerospike.Namespace = "absent"
	if _, err := userstores.Open(context.Background(), cfg, userstores.Options{}); err == nil || !strings.Contains(err.Error(), "aerospike.namespace") {
		t.Errorf("a namespace the cluster lacks: %v, want an error naming aerospike.namespace", err)
	}
}
