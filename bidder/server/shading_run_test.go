package server

import (
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/configs"
)

// TestShadingRestart: a bidder's shading counts outlive it in its spend
// store (the embedded Pebble one here): what it learned is flushed at
// Shutdown, and the bidder started again on the same data dir loads it
// before serving, so its first first-price bid is shaded; with
// shading.fleet_interval 0s (not shared) it starts from no data.
func TestShadingRestart(t *testing.T) {
	cfg := testConfig(t)
	s, shutdown := startStoppable(t, cfg)
	train(s.Bidder.Shader(), time.Now())
	if err := shutdown(); err != nil {
		t.Fatal(err)
	}
	id := shading.Segment(0, "a new publisher", shading.FormatBanner, 300, 250)
	s2, shutdown2 := startStoppable(t, cfg)
	d := s2.Bidder.Shader().Price(id, shading.FirstPrice, true, 4_000_000, 200_000)
	if d.How != shading.HowShaded && d.How != shading.HowExplored || d.Price >= 4_000_000 {
		t.Errorf("the restarted bidder's first first-price bid: %+v, want shaded by the exchange's estimate", d)
	}
	if err := shutdown2(); err != nil {
		t.Fatal(err)
	}
	cfg.Shading.FleetInterval = 0
	s3, _ := startStoppable(t, cfg)
	if d := s3.Bidder.Shader().Price(id, shading.FirstPrice, true, 4_000_000, 200_000); d.How == shading.HowShaded {
		t.Errorf("with shading.fleet_interval 0s a restarted bidder shaded from the store: %+v", d)
	}
}

// train teaches sh, at the exchange level of exchange 0, a landscape whose
// competition is at most 0.05 CPM (every bid wins, with its m).
func train(sh *shading.Shader, now time.Time) {
	id := shading.Segment(0, "training", shading.FormatBanner, 1, 1)
	start := now.Add(-time.Hour)
	for i := range 2000 {
		at := start.Add(time.Duration(i) * time.Second)
		price := int64(100_000 + i%50*10_000)
		sh.Bid(id, price, at)
		sh.Observe(id, price, at, true, int64(10_000+i%40*1000), true, at)
	}
	sh.Refresh(now)
}

// TestShadingExploreCold: shading.explore_cold is the share of a segment
// without data whose first-price bids are priced between 30% of the value
// and the value; 0 leaves every such bid at the value.
func TestShadingExploreCold(t *testing.T) {
	const value, floor = 4_000_000, 200_000
	cold := func(cfg *configs.Config) (explored int) {
		s, shutdown := startStoppable(t, cfg)
		defer shutdown()
		id := shading.Segment(0, "a publisher never bid on", shading.FormatBanner, 300, 250)
		for range 400 {
			d := s.Bidder.Shader().Price(id, shading.FirstPrice, true, value, floor)
			switch {
			case d.How == shading.HowExploredCold && d.Price >= value*3/10 && d.Price <= value:
				explored++
			case d.How != shading.HowNoData || d.Price != value:
				t.Fatalf("bid of a segment without data: %+v, want the value %d or a cold exploration within [30%%, 100%%] of it", d, value)
			}
		}
		return explored
	}
	cfg := testConfig(t)
	if n := cold(cfg); n == 0 || n == 400 {
		t.Errorf("shading.explore_cold %v: %d of 400 cold bids explored, want some and not all", cfg.Shading.ExploreCold, n)
	}
	cfg = testConfig(t)
	cfg.Shading.ExploreCold = 0
	if n := cold(cfg); n != 0 {
		t.Errorf("shading.explore_cold 0: %d of 400 cold bids explored, want none", n)
	}
}
