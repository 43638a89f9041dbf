package auctionsim

import (
	"strings"
	"testing"
)

// TestAcceptance plays the default landscape (fixed seed, deterministic:
// a fake clock and seeded generators) with m and with win notices only,
// and checks the surplus against the oracle's, overall and per segment,
// the cost per win against bidding the value, and the recovery after
// every segment's competition moves +30%.
func TestAcceptance(t *testing.T) {
	for _, tc := range []struct {
		name             string
		m, loss          bool
		overall, perSeg  float64
		recoveryAuctions int
	}{
		{"min_to_win", true, true, 0.90, 0.75, 6000},
		{"wins_only", false, false, 0.80, 0.60, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.MinToWin, cfg.LossNotices = tc.m, tc.loss
			r := Run(cfg)
			var b strings.Builder
			r.Print(&b)
			t.Log("\n" + b.String())
			if got := r.Ratio(); got < tc.overall {
				t.Errorf("surplus ratio %.3f, want >= %.2f", got, tc.overall)
			}
			for _, s := range r.Segments {
				if got := s.Ratio(); got < tc.perSeg {
					t.Errorf("segment %s: surplus ratio %.3f, want >= %.2f", s.Name, got, tc.perSeg)
				}
			}
			if cpw := r.Total.Shaded.CostPerWin(); cpw > 0.70*cfg.Value {
				t.Errorf("cost per win %.3f, want <= 70%% of the value %.2f", cpw, cfg.Value)
			}
			if r.Recovery < 0 || r.Recovery > tc.recoveryAuctions {
				t.Errorf("recovery after the shift: %d auctions, want within %d", r.Recovery, tc.recoveryAuctions)
			}
		})
	}
}

// TestOracle checks the oracle against known optima: a landscape whose
// competition is far below the floor bids the floor; one far above the
// value has no expected surplus at any price.
func TestOracle(t *testing.T) {
	if p := OraclePrice(4, 1.5, 0.2, 0.1); p != 1.5 {
		t.Errorf("competition far below the floor: oracle %.3f, want the floor 1.5", p)
	}
	if p := OraclePrice(4, 0.5, 40, 0.1); (4-p)*lognormalCDF(p, 40, 0.1) > 1e-9 {
		t.Errorf("competition far above the value: oracle %.3f has an expected surplus", p)
	}
	p := OraclePrice(4, 0.5, 2, 0.3)
	if !(p > 2 && p < 4) {
		t.Errorf("oracle %.3f, want between the median and the value", p)
	}
}

// TestPacing plays the compressed days (fixed seed, fake clock) and checks
// the measured day of adaptive pacing: spend within 2% of the budget and
// above it by at most one flush interval's charges, every hour within 10%
// of the traffic-shaped target, and at least 10% more impressions per unit
// of spend than throttled even pacing (both with shading on), which must
// spend its budget too for the comparison to hold.
func TestPacing(t *testing.T) {
	r := RunPacing(Defaults())
	var b strings.Builder
	r.Print(&b)
	t.Log("\n" + b.String())
	a := r.Adaptive
	if d := a.Spend/r.Budget - 1; d < -0.02 || d > 0.02 {
		t.Errorf("adaptive daily spend %.3f, %.2f%% off the budget %.3f, want within 2%%", a.Spend, 100*d, r.Budget)
	}
	if a.Overshoot > a.MaxFlushCharges {
		t.Errorf("adaptive overshoot %.4f, want at most one flush interval's charges %.4f", a.Overshoot, a.MaxFlushCharges)
	}
	if a.MaxHourlyError > 0.10 {
		t.Errorf("adaptive hourly spend up to %.1f%% off the target, want within 10%%", 100*a.MaxHourlyError)
	}
	if d := r.Even.Spend/r.Budget - 1; d < -0.05 {
		t.Errorf("throttled even pacing spent %.3f of %.3f: the comparison wants both to spend the budget", r.Even.Spend, r.Budget)
	}
	if g := r.ImpressionGain(); g < 1.10 {
		t.Errorf("adaptive impressions per spend %.3f of throttled's, want >= 1.10", g)
	}
}
