package demo_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/user"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
	"github.com/rtbd/rtbd/gen/demo"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// TestUsersToConfiguredRedis: `rtbd gen -users N -config FILE` with
// redis.addr set writes the profiles to Redis, with user.ttl's expiry, and
// they are the same profiles WriteUsers puts in Pebble.
func TestUsersToConfiguredRedis(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	cfg := filepath.Join(t.TempDir(), "rtbd.yaml")
	if err := os.WriteFile(cfg, []byte("redis:\n  addr: "+r.Addr+"\n  prefix: \"demo:\"\nuser:\n  ttl: 2h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := usersMain("-users", "3", "-config", cfg, "-products", "300", "-groups", "3", "-seed", "2")
	if err != nil || !strings.Contains(out, "wrote 3 user profiles") || !strings.Contains(out, "redis "+r.Addr) {
		t.Fatalf("gen -users -config: %v %q", err, out)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	ctx := context.Background()
	o := demo.Options{Products: 300, Groups: 3, Seed: 2}
	stock := demo.NewStock(o)
	s := redisstore.New(c, redisstore.Options{Prefix: "demo:"})
	for i := 1; i <= 3; i++ {
		var got, want user.Profile
		demo.UserProfile(i, o, stock, &want)
		found, err := s.Get(ctx, demo.UserID(i), &got)
		if err != nil || !found || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s in Redis: %v %v %+v, want %+v", demo.UserID(i), found, err, got, want)
		}
		if ttl := c.TTL(ctx, "demo:u:"+demo.UserID(i)).Val(); ttl <= 0 {
			t.Errorf("%s has no expiry (TTL %v)", demo.UserID(i), ttl)
		}
	}
}

// TestDemoRedis: `rtbd gen -demo -redis ADDR` writes redis.addr into the
// demo's configuration and loads the demo users into Redis.
func TestDemoRedis(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	dir := filepath.Join(t.TempDir(), "d")
	out, _, err := demoMain("-demo", "-out", dir, "-products", "300", "-groups", "3", "-users", "4", "-seed", "2", "-redis", r.Addr)
	if err != nil || !strings.Contains(out, "users      redis "+r.Addr) {
		t.Fatalf("gen -demo -redis: %v %q", err, out)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, demo.ConfigFile))
	if err != nil || !strings.Contains(string(cfg), r.Addr) {
		t.Fatalf("demo config lacks redis.addr %s: %v\n%s", r.Addr, err, cfg)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	var p user.Profile
	found, err := redisstore.New(c, redisstore.Options{}).Get(context.Background(), demo.UserID(4), &p)
	if err != nil || !found {
		t.Fatalf("%s in Redis: %v %v", demo.UserID(4), found, err)
	}
}

// TestDemoAerospike: `rtbd gen -demo -aerospike HOSTS -aerospike-namespace
// NS` writes both into the demo's configuration and loads the demo users
// into that namespace; without the flag the default namespace, which this
// cluster lacks, is refused with an error naming it.
func TestDemoAerospike(t *testing.T) {
	srv, err := aerospiketest.Start(aerospiketest.Options{Namespace: "demo-ns"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := filepath.Join(t.TempDir(), "d")
	args := []string{"-demo", "-out", dir, "-products", "300", "-groups", "3", "-users", "4", "-seed", "2", "-aerospike", srv.Addr()}
	if _, _, err := demoMain(args...); err == nil || !strings.Contains(err.Error(), `no namespace "rtbd"`) {
		t.Fatalf("gen -demo -aerospike without the cluster's namespace: %v, want an error naming namespace rtbd", err)
	}
	dir = filepath.Join(t.TempDir(), "d")
	args[2] = dir
	out, _, err := demoMain(append(args, "-aerospike-namespace", "demo-ns")...)
	if err != nil || !strings.Contains(out, "users      aerospike "+srv.Addr()) {
		t.Fatalf("gen -demo -aerospike -aerospike-namespace: %v %q", err, out)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, demo.ConfigFile))
	if err != nil || !strings.Contains(string(cfg), "namespace: demo-ns") || !strings.Contains(string(cfg), srv.Addr()) {
		t.Fatalf("demo config lacks aerospike.namespace demo-ns or hosts %s: %v\n%s", srv.Addr(), err, cfg)
	}
	if n := srv.Records(); n != 4 {
		t.Errorf("%d records in the namespace, want the 4 demo users", n)
	}
}
