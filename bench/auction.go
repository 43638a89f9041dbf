package bench

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rtbd/rtbd/bench/internal/auctionsim"
	"github.com/rtbd/rtbd/internal/cliflag"
)

// auctionMain is `rtbd bench auction`: the harness's first-price exchange
// (bench/internal/auctionsim) played in-process on a fake clock against
// bid shading (with the minimum bid to win, and with win notices only,
// each with a +30% shift of every landscape after the measured auctions),
// then the pacing simulation (a compressed day, 5x peak to trough).
// Deterministic for a -seed: no wall clock is measured.
func auctionMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench auction", flag.ContinueOnError)
	fs.Usage = func() { Usage(stderr) }
	def := auctionsim.Defaults()
	pdef := auctionsim.PacingDefaults()
	seed := fs.Uint64("seed", def.Seed, "seed of the draws (the same seed gives the same figures)")
	value := fs.Float64("value", def.Value, "the bidder's value, CPM")
	learn := fs.Int("learn", def.Learn, "auctions to learn from before measuring")
	measure := fs.Int("measure", def.Measure, "measured auctions")
	after := fs.Int("after", def.After, "auctions after the shift (0: no shift)")
	shift := fs.Float64("shift", def.Shift, "the shift of every segment's competition after the measured auctions (0.3: +30%)")
	halfLife := fs.Duration("half-life", def.Shading.HalfLife, "shading.half_life of the simulated bidder (fake time: one auction every 50ms)")
	days := fs.Int("pacing-days", pdef.Days, "pacing: days simulated, the last measured (0: no pacing simulation)")
	perDay := fs.Int("pacing-auctions", pdef.AuctionsPerDay, "pacing: auctions per day")
	share := fs.Float64("pacing-budget", pdef.BudgetShare, "pacing: the daily budget as a share of what bidding the shaded value everywhere spends")
	seeFlags(fs)
	if err := cliflag.Parse(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: rtbd bench auction takes no arguments, got %q", ErrUsage, fs.Args())
	}
	if *value <= 0 || *learn < 0 || *measure <= 0 || *after < 0 || *shift <= -1 || *halfLife <= 0 || *days < 0 || *perDay <= 0 || !(*share > 0 && *share <= 1) {
		return fmt.Errorf("%w: rtbd bench auction: -value, -measure, -half-life and -pacing-auctions must be > 0, -learn, -after and -pacing-days >= 0, -shift > -1, -pacing-budget in (0, 1]", ErrUsage)
	}
	for _, m := range []bool{true, false} {
		cfg := def
		cfg.Seed, cfg.Value, cfg.Learn, cfg.Measure, cfg.After, cfg.Shift = *seed, *value, *learn, *measure, *after, *shift
		if *after == 0 {
			cfg.Shift = 0
		}
		cfg.Shading.HalfLife = *halfLife
		cfg.MinToWin, cfg.LossNotices = m, m
		start := time.Now()
		r := auctionsim.Run(cfg)
		r.Print(stdout)
		fmt.Fprintf(stderr, "(%d auctions played in %s)\n", cfg.Learn+cfg.Measure+cfg.After, time.Since(start).Round(time.Millisecond))
		fmt.Fprintln(stdout)
	}
	if *days > 0 {
		p := pdef
		p.Seed, p.Value, p.Days, p.AuctionsPerDay, p.BudgetShare = *seed, *value, *days, *perDay, *share
		auctionsim.RunPacing(p).Print(stdout)
	}
	return nil
}
