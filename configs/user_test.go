package configs

import (
	"reflect"
	"testing"
	"time"
)

func TestUserDefaults(t *testing.T) {
	c := mustDefault(t)
	want := User{Store: UserStoreAuto, MaxGroups: 20, MaxProductsPerGroup: 50, TTL: 720 * time.Hour,
		Cookie: Cookie{Name: "rtbd_uid", MaxAge: 8760 * time.Hour}, SyncRedirectHosts: []string{}, MatchTTL: 720 * time.Hour}
	if !reflect.DeepEqual(c.User, want) {
		t.Errorf("user defaults %+v, want %+v", c.User, want)
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
