package configs

import (
	"strings"
	"testing"
	"time"
)

func TestUserDefaults(t *testing.T) {
	c := mustDefault(t)
	want := User{Store: UserStoreAuto, MaxGroups: 20, MaxProductsPerGroup: 50, TTL: 720 * time.Hour}
	if c.User != want {
		t.Errorf("user defaults %+v, want %+v", c.User, want)
	}
}

func TestUserValidate(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string // want "" = valid
	}{
		{"user.store", "redis", ""},
		{"user.store", "aerospike", ""},
		{"user.store", "pebble", ""},
		{"user.store", "memcached", "user.store: must be one of"},
		{"user.max_groups", "0", "user.max_groups: must be >= 1"},
		{"user.max_products_per_group", "0", "user.max_products_per_group: must be >= 1"},
		{"user.ttl", "10h", ""},
		{"user.ttl", "500ms", "user.ttl: must be at least 1s"},
	} {
		c := mustDefault(t)
		if err := c.Set(tc.key, tc.value); err != nil {
			t.Fatalf("Set(%s, %q): %v", tc.key, tc.value, err)
		}
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s=%q: %v", tc.key, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s=%q: error %v, want one containing %q", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestUserStoreKind(t *testing.T) {
	for _, tc := range []struct {
		store, hosts, addr, want string
	}{
		{UserStoreAuto, "", "", UserStorePebble},
		{UserStoreAuto, "", "127.0.0.1:6379", UserStoreRedis},
		{UserStoreAuto, "10.0.0.1", "127.0.0.1:6379", UserStoreAerospike},
		{UserStorePebble, "10.0.0.1", "127.0.0.1:6379", UserStorePebble},
		{UserStoreRedis, "10.0.0.1", "", UserStoreRedis},
	} {
		c := mustDefault(t)
		c.User.Store, c.Aerospike.Hosts, c.Redis.Addr = tc.store, tc.hosts, tc.addr
		if got := c.UserStoreKind(); got != tc.want {
			t.Errorf("store %q, aerospike.hosts %q, redis.addr %q: %q, want %q", tc.store, tc.hosts, tc.addr, got, tc.want)
		}
	}
}
