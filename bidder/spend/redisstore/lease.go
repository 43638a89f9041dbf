package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The instance lease (spend.LeaseStore): {P}lease:ID holds the holder's
// name and expires after the lease's TTL (PX); taking and renewing is one
// script (set when absent or already ours), releasing another (delete when
// ours), so two bidders never both hold it.

const takeLeaseLua = `
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ''
end
return v`

const releaseLeaseLua = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

var (
	takeLease    = redis.NewScript(takeLeaseLua)
	releaseLease = redis.NewScript(releaseLeaseLua)
)

func (s *Store) leaseKey(id string) string { return s.opts.Prefix + "lease:" + id }

// TakeLease implements spend.LeaseStore.
func (s *Store) TakeLease(ctx context.Context, id, holder string, ttl time.Duration) (bool, string, error) {
	v, err := takeLease.Run(ctx, s.rdb, []string{s.leaseKey(id)}, holder, ttl.Milliseconds()).Text()
	if err != nil {
		return false, "", fmt.Errorf("redisstore: lease %s: %w", id, err)
	}
	return v == "", v, nil
}

// ReleaseLease implements spend.LeaseStore.
func (s *Store) ReleaseLease(ctx context.Context, id, holder string) error {
	if err := releaseLease.Run(ctx, s.rdb, []string{s.leaseKey(id)}, holder).Err(); err != nil {
		return fmt.Errorf("redisstore: lease %s: %w", id, err)
	}
	return nil
}
