package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rtbd/rtbd/bidder/auctionsim"
	"github.com/rtbd/rtbd/bidder/spend/redisstore"
)

// auctionMain is `rtbd bench auction`: bid shading against the oracle on
// the simulated exchange (bidder/auctionsim), with the minimum bid
// to win and with win notices only, each played again by -bidders sharing
// a redis-server; then the pacing simulation. Deterministic for a -seed.
func auctionMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench auction", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	cfg := auctionsim.Defaults()
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the draws (the same seed gives the same figures)")
	fs.Float64Var(&cfg.Value, "value", cfg.Value, "the bidder's value, CPM")
	fs.IntVar(&cfg.Learn, "learn", cfg.Learn, "auctions to learn from before measuring")
	fs.IntVar(&cfg.Measure, "measure", cfg.Measure, "measured auctions")
	fs.IntVar(&cfg.After, "after", cfg.After, "auctions after the shift (0: no shift)")
	fs.Float64Var(&cfg.Shift, "shift", cfg.Shift, "the shift of every segment's competition after the measured auctions (0.3: +30%)")
	fs.DurationVar(&cfg.HalfLife, "half-life", cfg.HalfLife, "shading.half_life of the simulated bidder (fake time: one auction every 50ms)")
	fs.IntVar(&cfg.PacingDays, "pacing-days", cfg.PacingDays, "pacing: days simulated, the last measured (0: no pacing simulation)")
	fs.IntVar(&cfg.PacingAuctions, "pacing-auctions", cfg.PacingAuctions, "pacing: auctions per day")
	fs.Float64Var(&cfg.PacingBudget, "pacing-budget", cfg.PacingBudget, "pacing: the daily budget as a share of what bidding the shaded value everywhere spends")
	bidders := fs.Int("bidders", 1, "bidders sharing one redis-server for the fleet runs (1: no fleet runs)")
	syncEvery := fs.Duration("sync", 5*time.Second, "fleet runs: how often each bidder syncs with the store (shading.fleet_interval; fake time)")
	restartAt := fs.Int("restart-at", -1, "fleet runs: the auction at which bidder 1 restarts (-1: in the middle of the measured auctions, 0: never)")
	redisExe := fs.String("redis-server", DefaultRedisServer, "fleet runs: the redis-server binary to start")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if cfg.Value <= 0 || cfg.Learn < 0 || cfg.Measure <= 0 || cfg.After < 0 || cfg.Shift <= -1 || cfg.HalfLife <= 0 || cfg.PacingDays < 0 || cfg.PacingAuctions <= 0 || !(cfg.PacingBudget > 0 && cfg.PacingBudget <= 1) ||
		*bidders < 1 || *bidders > 64 || *syncEvery <= 0 || *restartAt < -1 {
		return fmt.Errorf("%w: rtbd bench auction: -value, -measure, -half-life, -sync and -pacing-auctions must be > 0, -learn, -after and -pacing-days >= 0, -shift > -1, -pacing-budget in (0, 1], -bidders 1 to 64, -restart-at >= -1", ErrUsage)
	}
	var rdb *redis.Client
	if *bidders > 1 {
		srv := newRedisServer(*redisExe, os.TempDir(), "") // persistence off: nothing is written to its -dir
		if err := srv.start(context.Background(), false); err != nil {
			return fmt.Errorf("rtbd bench auction: start %s: %w", *redisExe, err)
		}
		defer srv.stop(5 * time.Second)
		rdb = redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		defer rdb.Close()
	}
	for _, m := range []bool{true, false} {
		cfg.MinToWin, cfg.LossNotices = m, m
		r := auctionsim.Run(cfg)
		r.Print(stdout)
		fmt.Fprintln(stdout)
		if *bidders > 1 {
			fc := cfg
			fc.Bidders, fc.SyncEvery, fc.RestartAt = *bidders, *syncEvery, *restartAt
			fc.Store = redisstore.New(rdb, redisstore.Options{Prefix: fmt.Sprintf("bench:auction:%v:", m)})
			fr := auctionsim.Run(fc)
			if fr.Err != nil {
				return fmt.Errorf("rtbd bench auction: the fleet's store: %w", fr.Err)
			}
			fr.Print(stdout)
			fmt.Fprintf(stdout, "%d bidders' surplus ratio %.3f vs one bidder's %.3f: %+.3f\n\n", *bidders, fr.Ratio(), r.Ratio(), fr.Ratio()-r.Ratio())
		}
	}
	if cfg.PacingDays > 0 {
		auctionsim.RunPacing(cfg).Print(stdout)
	}
	return nil
}
