package configs

import (
	"strings"
	"testing"
	"time"
)

func TestShadingDefaults(t *testing.T) {
	c := mustDefault(t)
	want := Shading{HalfLife: 30 * time.Minute, MaxSegments: 4096, MinObservations: 100, Explore: 0.05, ExploreCold: 0.25, RefreshInterval: time.Second,
		FleetInterval: 5 * time.Second, FleetSlot: 5 * time.Minute, FleetHorizon: 2 * time.Hour}
	if c.Shading != want {
		t.Errorf("shading defaults %+v, want %+v", c.Shading, want)
	}
}

func TestShadingValidate(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string // want "" = valid
	}{
		{"shading.half_life", "0s", "shading.half_life: must be > 0"},
		{"shading.max_segments", "8", "shading.max_segments: must be >= 16"},
		{"shading.min_observations", "0", "shading.min_observations: must be between 1 and 1000000"},
		{"shading.explore", "0.6", "shading.explore: must be between 0 and 0.5"},
		{"shading.explore", "0", ""},
		{"shading.explore_cold", "1.5", "shading.explore_cold: must be between 0 and 1"},
		{"shading.explore_cold", "-0.1", "shading.explore_cold: must be between 0 and 1"},
		{"shading.explore_cold", "0", ""},
		{"shading.explore_cold", "1", ""},
		{"shading.refresh_interval", "0s", "shading.refresh_interval: must be > 0"},
		{"shading.fleet_interval", "-1s", "shading.fleet_interval: must be >= 0"},
		{"shading.fleet_interval", "0s", ""},
		{"shading.fleet_slot", "1500ms", "shading.fleet_slot: must be whole seconds"},
		{"shading.fleet_horizon", "9m", "shading.fleet_horizon: must be at least two fleet_slot"},
	} {
		c := mustDefault(t)
		if err := c.Set(tc.key, tc.value); err != nil {
			t.Fatalf("Set(%s, %q): %v", tc.key, tc.value, err)
		}
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s=%q: %v", tc.key, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s=%q: error %v, want one containing %q", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestExchangesShadingKeys(t *testing.T) {
	c, err := load(writeFile(t, `
exchanges:
  gam:
    loss_notices: true
    notice_wait: 2m
  pbs:
    notice_wait: 2h
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if x := c.Exchanges["gam"]; !x.LossNotices || x.NoticeWait != 2*time.Minute {
		t.Errorf("gam: %+v", x)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "exchanges.pbs.notice_wait: must be between 0 (60s) and 1h") {
		t.Errorf("notice_wait 2h: %v", err)
	}
}
