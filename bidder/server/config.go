package server

import (
	"net/netip"

	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/shading"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/overload"
)

// shadingFromConfig maps the shading section to Options.Shading.
func shadingFromConfig(c configs.Shading) *shading.Options {
	off := func(share float64) float64 {
		if share == 0 {
			return -1 // off (the zero value of shading.Options is its default)
		}
		return share
	}
	o := &shading.Options{MaxSegments: c.MaxSegments, HalfLife: c.HalfLife, MinObservations: c.MinObservations,
		Explore: off(c.Explore), ExploreCold: off(c.ExploreCold)}
	if c.FleetInterval > 0 {
		o.Fleet = &shading.FleetOptions{Slot: c.FleetSlot, Horizon: c.FleetHorizon, Interval: c.FleetInterval}
	}
	return o
}

// rateLimitsFromConfig maps bidder.rate_limits (validated: every trusted
// proxy parses as a prefix or an address).
func rateLimitsFromConfig(c configs.RateLimits) bidder.RateLimitOptions {
	o := bidder.RateLimitOptions{Sources: c.Sources,
		Event:    overload.Limit{Rate: c.Event.Rate, Burst: c.Event.Burst},
		UserSync: overload.Limit{Rate: c.UserSync.Rate, Burst: c.UserSync.Burst},
		Match:    overload.Limit{Rate: c.Match.Rate, Burst: c.Match.Burst}}
	for _, s := range c.TrustedProxies {
		if p, err := netip.ParsePrefix(s); err == nil {
			o.TrustedProxies = append(o.TrustedProxies, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			o.TrustedProxies = append(o.TrustedProxies, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return o
}
