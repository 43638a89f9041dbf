package redisstore_test

import (
	"testing"

	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/internal/netfaulttest"
)

// TestChargeOnceLostReplies (acceptance): a proxy in front of a real
// redis-server lets Redis run each flush's scripts and then drops the
// reply (closing the connection) many times, so the Writer retries
// flushes whose outcome it does not know: every notice is charged exactly
// once, day, total and frequency.
func TestChargeOnceLostReplies(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{Persist: true})
	p := netfaulttest.Start(t, r.Addr)
	s := redisstore.New(client(t, p.Addr()), redisstore.Options{})
	p.DropEvery(3, 40)
	want, _ := spendtest.ChargeNotices(t, s, 1200)
	p.DropEvery(0, 0)
	spendtest.CheckCharged(t, "replies lost after Redis applied the flush", s, want, p.Dropped())
}
