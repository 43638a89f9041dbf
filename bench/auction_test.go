package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/auctionsim"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
)

// TestAuctionCommand: `rtbd bench auction` prints both shading runs and,
// with pacing days, the pacing table; bad flags are usage errors.
func TestAuctionCommand(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"auction", "-value", "0"},
		{"auction", "-pacing-budget", "1.5"},
		{"auction", "-shift", "-1"},
		{"auction", "extra", "-measure", "x"},
		{"auction", "-bidders", "0"},
		{"auction", "-bidders", "3", "-sync", "0s"},
	} {
		var out, errb bytes.Buffer
		if err := Main(ctx, args, &out, &errb); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: %v, want ErrUsage", args, err)
		}
	}
	var out, errb bytes.Buffer
	if err := Main(ctx, []string{"auction", "-learn", "2000", "-measure", "4000", "-after", "4000", "-pacing-days", "2", "-pacing-auctions", "20000"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m: true", "m: false", "near-floor", "cost per win", "after a +30% shift", "pacing: 2 days", "throttled even"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestAuctionFleet: three bidders sharing one redis-server (bid shading's
// fleet counts), every bid made by a random bidder and its notice landing
// on a random one, earn within 0.03 of one bidder's surplus, with m and
// with win notices only; bidder 1, restarted in the middle of the measured
// auctions, prices its bids of its first second from the fleet's estimate
// (shaded, below the value), not at the value nor by cold exploration.
func TestAuctionFleet(t *testing.T) {
	if _, err := os.Stat(DefaultRedisServer); err != nil {
		t.Skipf("!!! %s not found: the fleet's shading NOT TESTED (make deps installs it) !!!", DefaultRedisServer)
	}
	s := newRedisServer(DefaultRedisServer, t.TempDir(), "")
	if err := s.start(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	defer s.stop(5 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	for _, m := range []bool{true, false} {
		cfg := auctionsim.Defaults()
		cfg.Learn, cfg.Measure, cfg.After, cfg.Shift = 12_000, 12_000, 0, 0
		cfg.MinToWin, cfg.LossNotices = m, m
		one := auctionsim.Run(cfg)
		fc := cfg
		fc.Bidders, fc.SyncEvery, fc.RestartAt = 3, 5*time.Second, -1
		fc.Store = redisstore.New(rdb, redisstore.Options{Prefix: fmt.Sprintf("t:%v:", m)})
		fleet := auctionsim.Run(fc)
		var b strings.Builder
		fleet.Print(&b)
		t.Logf("m %v: one bidder %.3f\n%s", m, one.Ratio(), b.String())
		if fleet.Err != nil {
			t.Fatal(fleet.Err)
		}
		if d := fleet.Ratio() - one.Ratio(); d < -0.03 || d > 0.03 {
			t.Errorf("m %v: 3 bidders' surplus ratio %.3f, one bidder's %.3f: want within 0.03", m, fleet.Ratio(), one.Ratio())
		}
		rs := fleet.Restart
		if rs.Loaded == 0 || rs.Bids == 0 {
			t.Fatalf("m %v: the restarted bidder loaded %d segments and made %d bids in its first second", m, rs.Loaded, rs.Bids)
		}
		if shaded := rs.ByHow[shading.HowShaded] + rs.ByHow[shading.HowExplored]; shaded != rs.Bids || rs.MeanShade > 0.9 {
			t.Errorf("m %v: the restarted bidder's first second: %d of %d bids shaded (%+v), mean price %.3f of the value; want all shaded, well below the value",
				m, shaded, rs.Bids, rs.ByHow, rs.MeanShade)
		}
	}
}
