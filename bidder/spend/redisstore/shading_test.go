package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
	"github.com/rtbd/rtbd/bidder/spend/spendtest"
)

func TestShadingSuite(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	spendtest.RunShadingSuite(t, func(t *testing.T) shading.Store {
		return redisstore.New(client(t, r.Addr), redisstore.Options{Prefix: fmt.Sprintf("t%d:", prefixSeq.Add(1))})
	}, spendtest.ShadingCaps{})
}

// TestShadingKeys checks the shading key layout and expiries the package
// comment promises, through a plain client: every key expires at the
// add's expiry, so the store holds no slot past it.
func TestShadingKeys(t *testing.T) {
	r := spendtest.StartRedis(t, spendtest.RedisOptions{})
	rdb := client(t, r.Addr)
	s := redisstore.New(rdb, redisstore.Options{Prefix: "k:"})
	ctx := context.Background()
	slot := time.Now().Truncate(time.Minute).Unix()
	c := shading.SlotCounts{Segment: 0x0400abcd, Slot: slot}
	c.N[shading.KindWins][17] = 3
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := s.AddShading(ctx, slot, []shading.SlotCounts{c}, []shading.SegmentID{c.Segment}, exp); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("k:shade:%d:400abcd", slot)
	if v, err := rdb.HGet(ctx, key, "w17").Int(); err != nil || v != 3 {
		t.Errorf("%s w17 = %d, %v; want 3", key, v, err)
	}
	idx := fmt.Sprintf("k:shade:%d:idx", slot)
	if ok, err := rdb.SIsMember(ctx, idx, fmt.Sprint(uint32(c.Segment))).Result(); err != nil || !ok {
		t.Errorf("%s lacks the segment: %v", idx, err)
	}
	for _, k := range []string{key, idx} {
		if at, err := rdb.ExpireTime(ctx, k).Result(); err != nil || at != time.Duration(exp.Unix())*time.Second {
			t.Errorf("%s expires at %v (%v), want %d", k, at, err, exp.Unix())
		}
	}
}
