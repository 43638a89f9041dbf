package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/bidder/user/redisstore"
	"github.com/rtbd/rtbd/bidder/user/usertest"
)

func TestConformance(t *testing.T) {
	srv := spendtest.StartRedis(t, spendtest.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	var n atomic.Int64
	usertest.Run(t, func(t *testing.T, lim usertest.Limits) usertest.Store {
		return redisstore.New(c, redisstore.Options{Prefix: fmt.Sprintf("t%d:", n.Add(1)),
			MaxGroups: lim.MaxGroups, MaxViewed: lim.MaxViewed, TTL: lim.TTL, MatchTTL: lim.MatchTTL})
	})
}

// TestExpirySet: every write leaves the key with an expiry, so that a
// volatile-lru maxmemory policy can evict it.
func TestExpirySet(t *testing.T) {
	srv := spendtest.StartRedis(t, spendtest.RedisOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	s := redisstore.New(c, redisstore.Options{TTL: 720 * time.Hour})
	ctx := context.Background()
	if err := s.RecordView(ctx, "u", 1, 2); err != nil {
		t.Fatal(err)
	}
	ttl, err := c.TTL(ctx, "rtbd:u:u").Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("TTL of the profile key = %v, %v; want an expiry", ttl, err)
	}
}
