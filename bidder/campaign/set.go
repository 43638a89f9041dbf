package campaign

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
)

// Set is an immutable snapshot of parsed campaigns with the indexes Match
// uses. It is safe for concurrent use; a reload builds a new Set.
type Set struct {
	name    string
	all     []*Campaign
	byID    map[string]*Campaign
	byGroup map[int64][]*Campaign

	// Dictionaries of the strings campaigns target or are blocked by: Match
	// looks the request's values up once, then compares small int ids per
	// campaign.
	domains dict // site_domains and site_domains_deny
	bundles dict // app_bundles and app_bundles_deny
	pubs    dict // publisher_ids
	segs    dict // user_segments
	cats    dict // Cat, for the per-request bcat memo
	adoms   dict // ADomain, for the per-request badv memo
	catStr  []string
	adomStr []string
}

// dict numbers distinct strings from 0.
type dict map[string]int32

func (d dict) id(s string) int32 {
	if v, ok := d[s]; ok {
		return v
	}
	v := int32(len(d))
	d[s] = v
	return v
}

// ids returns the sorted ids of list (nil for an empty list).
func (d dict) ids(list []string) []int32 {
	if len(list) == 0 {
		return nil
	}
	out := make([]int32, len(list))
	for i, s := range list {
		out[i] = d.id(s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// index is the matching data of one campaign, built once at load.
type index struct {
	active            bool
	dealsOnly         bool
	startNs, endNs    int64      // flight as Unix ns; math.MinInt64 / MaxInt64 when open
	hours             *[7]uint32 // bit h of hours[weekday] = bids at hour h; nil = always
	siteAllow         []int32    // sorted ids in Set.domains; nil = any
	siteDeny          []int32
	appAllow, appDeny []int32    // ids in Set.bundles
	pubs              []int32    // ids in Set.pubs
	segs              []int32    // ids in Set.segs
	cats, adoms       []int32    // ids in Set.cats, Set.adoms
	countries         *[4]uint64 // bit i = country i of countryPairs; nil = any
	regions           []region
	devMask           uint32 // bit t = device type t allowed; 0 = any
}

// region is a targeting.regions entry; "US-CA" is {full "US-CA", country3
// "USA", sub "CA"}.
type region struct {
	full, country3, sub string
}

func newSet(name string, cs []*Campaign) *Set {
	s := &Set{
		name:    name,
		all:     cs,
		byID:    make(map[string]*Campaign, len(cs)),
		byGroup: make(map[int64][]*Campaign),
		domains: dict{}, bundles: dict{}, pubs: dict{}, segs: dict{}, cats: dict{}, adoms: dict{},
	}
	ixs := make([]index, len(cs)) // contiguous, for Match's scan
	for i, c := range cs {
		ixs[i] = s.buildIndex(c)
		c.ix = &ixs[i]
		s.byID[c.ID] = c
		s.byGroup[c.ProductGroupID] = append(s.byGroup[c.ProductGroupID], c)
	}
	s.catStr = inverse(s.cats)
	s.adomStr = inverse(s.adoms)
	return s
}

func inverse(d dict) []string {
	out := make([]string, len(d))
	for s, id := range d {
		out[id] = s
	}
	return out
}

func (s *Set) buildIndex(c *Campaign) index {
	t := &c.Targeting
	ix := index{
		active:    c.Status == StatusActive,
		dealsOnly: c.DealsOnly,
		startNs:   math.MinInt64,
		endNs:     math.MaxInt64,
		siteAllow: s.domains.ids(t.SiteDomains),
		siteDeny:  s.domains.ids(t.SiteDomainsDeny),
		appAllow:  s.bundles.ids(t.AppBundles),
		appDeny:   s.bundles.ids(t.AppBundlesDeny),
		pubs:      s.pubs.ids(t.PublisherIDs),
		segs:      s.segs.ids(t.UserSegments),
		cats:      s.cats.ids(c.Cat),
		adoms:     s.adoms.ids(c.ADomain),
	}
	if !c.Start.IsZero() {
		ix.startNs = c.Start.UnixNano()
	}
	if !c.End.IsZero() {
		ix.endNs = c.End.UnixNano()
	}
	for _, code := range t.Countries {
		if k, ok := lookupCountry(code); ok {
			if ix.countries == nil {
				ix.countries = new([4]uint64)
			}
			ix.countries[k.idx/64] |= 1 << (k.idx % 64)
		}
	}
	for _, r := range t.Regions {
		e := region{full: r}
		if cc, sub, ok := strings.Cut(r, "-"); ok && len(cc) == 2 {
			if a3, ok := CountryAlpha3(cc); ok {
				e.country3, e.sub = a3, sub
			}
		}
		ix.regions = append(ix.regions, e)
	}
	for _, d := range t.DeviceTypes {
		if d > 0 && d < 32 {
			ix.devMask |= 1 << uint(d)
		}
		if d == adcom1.DeviceMobile {
			ix.devMask |= 1<<uint(adcom1.DevicePhone) | 1<<uint(adcom1.DeviceTablet)
		}
	}
	if len(t.Dayparts) > 0 {
		var h [7]uint32
		for _, d := range t.Dayparts {
			days := d.Days
			if len(days) == 0 {
				days = []time.Weekday{0, 1, 2, 3, 4, 5, 6}
			}
			for _, wd := range days {
				if wd < 0 || wd > 6 {
					continue
				}
				if d.StartHour < d.EndHour {
					for hr := max(d.StartHour, 0); hr < min(d.EndHour, 24); hr++ {
						h[wd] |= 1 << uint(hr)
					}
					continue
				}
				// Past midnight: the rest of wd, then the start of the next day.
				for hr := max(d.StartHour, 0); hr < 24; hr++ {
					h[wd] |= 1 << uint(hr)
				}
				for hr := 0; hr < min(d.EndHour, 24); hr++ {
					h[(wd+1)%7] |= 1 << uint(hr)
				}
			}
		}
		ix.hours = &h
	}
	return ix
}

// Name returns the name the Set was parsed under (the file path for LoadFile).
func (s *Set) Name() string { return s.name }

// All returns every campaign, paused ones included, in file order. The slice
// is shared: do not modify it.
func (s *Set) All() []*Campaign {
	if s == nil {
		return nil
	}
	return s.all
}

// Len returns the number of campaigns, paused ones included.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.all)
}

// Get returns the campaign with id (paused ones included).
func (s *Set) Get(id string) (*Campaign, bool) {
	if s == nil {
		return nil, false
	}
	c, ok := s.byID[id]
	return c, ok
}

// ByProductGroup returns the campaigns of a product group in file order
// (paused ones included). The slice is shared: do not modify it.
func (s *Set) ByProductGroup(id int64) []*Campaign {
	if s == nil {
		return nil
	}
	return s.byGroup[id]
}

// Counts returns the number of active and paused campaigns.
func (s *Set) Counts() (active, paused int) {
	for _, c := range s.All() {
		if c.Status == StatusActive {
			active++
		} else {
			paused++
		}
	}
	return active, paused
}

// Rejections records, in debug mode, why each campaign did not match.
type Rejections struct {
	ByCampaign map[string]string // campaign id -> reason text
}

func (r *Rejections) add(id, reason string) {
	if r.ByCampaign == nil {
		r.ByCampaign = make(map[string]string)
	}
	r.ByCampaign[id] = reason
}

// Reasons Match gives in Rejections.
const (
	ReasonPaused        = "status: paused"
	ReasonNotStarted    = "flight: before start"
	ReasonEnded         = "flight: ended"
	ReasonDaypart       = "dayparts: outside the campaign's hours"
	ReasonBanner        = "creative: no banner size of the imp in creative.sizes"
	ReasonNative        = "creative: native imp and creative.native is false"
	ReasonVideo         = "creative: video imp and no creative.vast"
	ReasonMedia         = "creative: no banner size, native or vast the imp accepts"
	ReasonBattr         = "creative: attr blocked by the imp's battr"
	ReasonDeal          = "deals: private auction and no deal of the campaign (with its seat and adomain allowed)"
	ReasonDealsOnly     = "deals: deals_only and no deal of the campaign (with its seat and adomain allowed)"
	ReasonSiteDomain    = "targeting: site domain not in site_domains"
	ReasonSiteDeny      = "targeting: site domain in site_domains_deny"
	ReasonAppOnly       = "targeting: site traffic, the campaign targets app_bundles only"
	ReasonAppBundle     = "targeting: app bundle not in app_bundles"
	ReasonAppDeny       = "targeting: app bundle in app_bundles_deny"
	ReasonSiteOnly      = "targeting: app traffic, the campaign targets site_domains only"
	ReasonNoSiteApp     = "targeting: request has neither site nor app"
	ReasonPublisher     = "targeting: publisher id not in publisher_ids"
	ReasonCountry       = "targeting: country not in countries"
	ReasonRegion        = "targeting: region not in regions"
	ReasonDeviceType    = "targeting: device type not in device_types"
	ReasonOS            = "targeting: os not in os"
	ReasonSegment       = "targeting: user has none of user_segments"
	ReasonBcat          = "blocked: a cat is in the request's bcat"
	ReasonBadv          = "blocked: an adomain is in the request's badv"
	ReasonBapp          = "blocked: bundle is in the request's bapp"
	ReasonSeat          = "blocked: seat not allowed by the request's wseat/bseat"
	ReasonNotIndexed    = "internal: campaign not built by Parse"
	reasonDomainTooLong = "targeting: site domain unusable (too long)"
	reasonBundleTooLong = "targeting: app bundle unusable (too long)"
)

// Kinds of inventory.
const (
	kindNone = iota
	kindSite
	kindApp
)
