package bidder

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
	"github.com/rtbd/rtbd/rtb"
)

// TestNoticesRedisTwoBidders: two bidders (two Writers) share one real
// redis-server. Bills accepted by the first are in Redis after its flush,
// exactly; the second learns the fleet's spend from its refresh loop and
// stops bidding on the campaign (nbr 501) within a few flush intervals,
// without having served a single impression itself.
func TestNoticesRedisTwoBidders(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	newStore := func() *redisstore.Store {
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { rdb.Close() })
		return redisstore.New(rdb, redisstore.Options{Prefix: "rtbd-test:"})
	}
	set := moneyCampaigns(t, "    total_budget: 0.002\n")
	const interval = 50 * time.Millisecond
	a := newMoneyFixtureOn(t, set, newStore(), interval)
	b := newMoneyFixtureOn(t, set, newStore(), interval)

	b.bidOnce(userBulk, 0)                      // b bids: the campaign is registered and refreshed
	for _, p := range []string{"1.5", "0.75"} { // 1500 + 750 micros >= 2000
		g := a.bidOnce(userBulk, 0)
		if st := a.notice(g.burl, p); st != 204 {
			t.Fatalf("bill %s on a: status %d", p, st)
		}
	}
	a.bidOnce(userBulk, rtb.NoBidBudgetExhausted)

	// b stops within a few flush intervals (bounded wait, no timing assert).
	store := newStore()
	spendtest.WaitFor(t, 10*time.Second, "bidder b sees the fleet's spend", func() bool {
		st := b.bg.Status(*b.b.budgetOf(set, mustGet(t, set, "money")), b.clock.Now())
		return st.FleetTotalMicros >= 2250
	})
	b.bidOnce(userBulk, rtb.NoBidBudgetExhausted)

	if err := a.w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	tot, err := store.Read(context.Background(), []string{"money"}, a.clock.Now().Format("2006-01-02"))
	if err != nil || len(tot) != 1 || tot[0].TotalMicros != 2250 || tot[0].DayMicros != 2250 || tot[0].TotalImps != 2 {
		t.Fatalf("redis totals %+v %v, want 2250 micros, 2 impressions", tot, err)
	}
}
