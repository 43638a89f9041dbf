package campaign

import (
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/dsa"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/rtb/money"
)

// Values of Campaign.Status.
const (
	StatusActive = "active"
	StatusPaused = "paused"
)

// Values of Strategy.Type.
const (
	StrategyFixed      = "fixed"
	StrategyMultiplier = "multiplier"
)

// Values of Campaign.Pacing.
const (
	PacingEven = "even"
	PacingASAP = "asap"
)

// Values of Campaign.BidShading.
const (
	// ShadingAuto shades the campaign's bids in first-price auctions
	// (package bidder/shading): the default.
	ShadingAuto = "auto"
	// ShadingOff bids the campaign's value in every auction.
	ShadingOff = "off"
)

// Values of Creative.Template.
const (
	TemplateLight  = "light"
	TemplateMedium = "medium"
	TemplateHeavy  = "heavy"
)

// Campaign is one parsed, validated campaign. It is immutable once loaded:
// the campaigns of a Set are shared by every goroutine that holds the Set, so
// callers must not modify them (nor the slices and maps they hold).
//
// Money is in micros: millionths of Currency's unit (1.25 USD = 1250000).
type Campaign struct {
	ID, Name, Advertiser string
	// ADomain are the advertiser domains (bid.adomain), lower case.
	ADomain []string
	// Cat are the IAB content categories of the ads (bid.cat), e.g. "IAB22".
	Cat []string
	// ProductGroupID is the catalog product group the creative's products come from.
	ProductGroupID int64
	// Status is StatusActive or StatusPaused.
	Status string
	// Start and End bound the flight: the campaign bids when
	// Start <= now < End. Zero means open-ended. A YYYY-MM-DD date in the
	// file is midnight in TimeZone; an end date covers that whole day (End is
	// the next midnight).
	Start, End time.Time
	// TimeZone is the zone of dayparting, hour multipliers and flight dates
	// (and of daily budgets). Never nil after Parse (UTC
	// by default).
	TimeZone *time.Location
	// Currency is the ISO 4217 code of the bid and budgets (default "USD").
	Currency string
	// BidCPMMicros is the base bid: CPM in micros of Currency (> 0).
	BidCPMMicros int64
	// Strategy turns the base bid into the bid for one request; see BidMicros.
	Strategy Strategy
	// DailyBudgetMicros and TotalBudgetMicros are in micros of Currency; 0 =
	// unlimited. Parsed here, enforced by the spend package.
	DailyBudgetMicros, TotalBudgetMicros int64
	// FrequencyCap is parsed here and enforced by the spend package.
	FrequencyCap FrequencyCap
	// Pacing is PacingEven (default) or PacingASAP; enforced by the spend package.
	Pacing string
	// BidShading is ShadingAuto (default) or ShadingOff: whether the bidder
	// shades the campaign's first-price bids below its value.
	BidShading string
	// Targeting restricts the traffic the campaign bids on; see Set.Match.
	Targeting Targeting
	// Creative describes what the campaign can serve.
	Creative Creative
	// Deals are the deal ids (imp.pmp.deals[].id) this campaign bids on.
	Deals []string
	// DealsOnly makes the campaign bid only through one of Deals.
	DealsOnly bool
	// Seat is the optional buyer seat id of the campaign at the exchange
	// (seatbid.seat). A request's or deal's non-empty wseat admits only
	// campaigns whose Seat is listed; a request's bseat blocks its Seat.
	Seat string
	// Bundle is the optional bundle of the app the campaign advertises
	// (bid.bundle); a request's bapp listing it blocks the campaign.
	Bundle string
	// DSA is the campaign's EU Digital Services Act transparency (bid
	// ext.dsa: behalf, paid); zero: none, and no bid where a request
	// requires it (see package bidder/dsa).
	DSA dsa.Setting
	// Supply is which supply paths the campaign bids through; zero: any
	// (see package bidder/supply).
	Supply supply.Policy

	ix *index // matching data built by Parse; nil for campaigns built in code
}

// Strategy is the bidding strategy: StrategyFixed bids BidCPMMicros;
// StrategyMultiplier bids BidCPMMicros times the multipliers that apply
// (each map is optional; a missing key means x1).
type Strategy struct {
	Type string
	// DeviceType multipliers by device.devicetype. For phone (4) and tablet
	// (5) with no entry of their own, the mobile (1) entry applies.
	DeviceType map[adcom1.DeviceType]float64
	// Country multipliers by ISO 3166-1 alpha-3 code (device.geo.country).
	Country map[string]float64
	// Hour multipliers by hour of day 0-23 in the campaign's TimeZone.
	Hour map[int]float64
}

// FrequencyCap limits impressions per user: at most Impressions per Period.
// The zero value means no cap. Enforced by the spend package.
type FrequencyCap struct {
	Impressions int
	Period      time.Duration
}

// Targeting restricts the traffic a campaign bids on. Every list is
// optional: empty means any. Set.Match documents the rules.
type Targeting struct {
	// SiteDomains (allow) and SiteDomainsDeny match site.domain (or the host
	// of site.page when domain is empty): the domain itself or any subdomain.
	// Lower case.
	SiteDomains, SiteDomainsDeny []string
	// AppBundles (allow) and AppBundlesDeny match app.bundle exactly, case
	// insensitively. Lower case.
	AppBundles, AppBundlesDeny []string
	// PublisherIDs match site.publisher.id or app.publisher.id exactly.
	PublisherIDs []string
	// Countries are ISO 3166-1 alpha-3 codes, as OpenRTB sends
	// device.geo.country (alpha-2 is accepted in the file and normalised).
	Countries []string
	// Regions match device.geo.region, case insensitively. An entry
	// "US-CA" (ISO 3166-2) also matches region "CA" in country USA.
	Regions []string
	// DeviceTypes match device.devicetype; DeviceMobile (1) also matches
	// phone (4) and tablet (5).
	DeviceTypes []adcom1.DeviceType
	// OS match device.os case insensitively ("ios" matches "iOS").
	OS []string
	// UserSegments: the user must have one of these segments (from the
	// user profile, or user.data[].segment[].id of the request).
	UserSegments []string
	// Dayparts: the campaign bids only in one of these windows, in TimeZone.
	Dayparts []Daypart
}

// Daypart is a weekly time window in the campaign's time zone: the hours
// StartHour <= h < EndHour of each of Days (every day when Days is empty).
// When StartHour > EndHour the window runs past midnight into the next day
// (22 to 6 on fri is fri 22:00 to sat 06:00).
type Daypart struct {
	Days      []time.Weekday
	StartHour int // 0-23
	EndHour   int // 1-24, != StartHour
}

// Creative describes what a campaign can serve.
type Creative struct {
	// Template is TemplateLight, TemplateMedium or TemplateHeavy; see Quantities.
	Template string
	// Sizes are the banner sizes served, {w, h} in DIPS.
	Sizes [][2]int64
	// Native: the campaign serves OpenRTB Native 1.2 ads.
	Native bool
	// VAST is an optional VAST template; empty means no video.
	VAST string
	// VASTPlainHTTP: the VAST template has an http:// URL (a MediaFile, a
	// tracker, a resource: anything but XML namespace and schema location
	// attributes), so it is not served on secure imps (imp.secure=1). Set
	// when the campaigns load (see PlainHTTPInVAST).
	VASTPlainHTTP bool
	// ClickBase is an optional absolute http(s) URL the landing pages are
	// built on (the bidder defines its use); empty = the products' own URLs.
	ClickBase string
	// Attr are the creative attributes the ads have (bid.attr); an imp whose
	// battr lists one of them is not matched. Usually empty.
	Attr []adcom1.CreativeAttribute
	// Video is what the VAST template declares of its ad (mimes,
	// protocols, duration, plcmt, size); the zero value declares nothing
	// and the template bids on every video imp. See VideoMismatch.
	Video Video
}

// Quantities returns how many products the template shows, as the
// ProductMastersRequest's quantities: at most viewed products (product1)
// and at most recommended products (product2). The totals are the talk's
// 3/15/30 for light/medium/heavy, a third viewed and two thirds recommended.
// An unknown template counts as medium.
func (c Creative) Quantities() (viewed, recommended int32) {
	switch c.Template {
	case TemplateLight:
		return 1, 2
	case TemplateHeavy:
		return 10, 20
	default:
		return 5, 10
	}
}

// BidMicros returns the campaign's bid for req at now: CPM in micros of
// Currency, BidCPMMicros times the Strategy's multipliers for the request's
// device type, country (device.geo.country) and hour (in TimeZone), rounded
// to the micro and saturated (money.Scale). It allocates nothing and is safe
// for concurrent use.
func (c *Campaign) BidMicros(req *openrtb2.BidRequest, now time.Time) int64 {
	s := &c.Strategy
	if s.Type != StrategyMultiplier {
		return c.BidCPMMicros
	}
	m := 1.0
	var dev *openrtb2.Device
	if req != nil {
		dev = req.Device
	}
	if dev != nil && len(s.DeviceType) > 0 {
		if f, ok := s.DeviceType[dev.DeviceType]; ok {
			m *= f
		} else if dev.DeviceType == adcom1.DevicePhone || dev.DeviceType == adcom1.DeviceTablet {
			if f, ok := s.DeviceType[adcom1.DeviceMobile]; ok {
				m *= f
			}
		}
	}
	if dev != nil && dev.Geo != nil && len(s.Country) > 0 {
		if a3, ok := CountryAlpha3(dev.Geo.Country); ok {
			if f, ok := s.Country[a3]; ok {
				m *= f
			}
		}
	}
	if len(s.Hour) > 0 {
		if f, ok := s.Hour[now.In(c.location()).Hour()]; ok {
			m *= f
		}
	}
	return money.Scale(c.BidCPMMicros, m)
}

// BannerSize returns the first banner size of imp (imp.banner.format in
// order, then imp.banner.w/h) that the campaign serves, and false if imp has
// no banner or none of its sizes is in Creative.Sizes. It allocates nothing.
func (c *Campaign) BannerSize(imp *openrtb2.Imp) (w, h int64, ok bool) {
	if imp == nil || imp.Banner == nil {
		return 0, 0, false
	}
	b := imp.Banner
	for i := range b.Format {
		f := &b.Format[i]
		if c.servesSize(f.W, f.H) {
			return f.W, f.H, true
		}
	}
	if b.W != nil && b.H != nil && c.servesSize(*b.W, *b.H) {
		return *b.W, *b.H, true
	}
	return 0, 0, false
}

func (c *Campaign) servesSize(w, h int64) bool {
	if w <= 0 || h <= 0 {
		return false
	}
	for _, s := range c.Creative.Sizes {
		if s[0] == w && s[1] == h {
			return true
		}
	}
	return false
}

func (c *Campaign) location() *time.Location {
	if c.TimeZone == nil {
		return time.UTC
	}
	return c.TimeZone
}
