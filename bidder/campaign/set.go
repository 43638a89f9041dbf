package campaign

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/internal/ascii"
	"github.com/rtbd/rtbd/rtb/money"
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

// Sizes of Match's per-call memos (on its stack).
const (
	maxDomainIDs = 16  // the request domain and its parents found in Set.domains
	maxSegIDs    = 64  // the user's segments found in Set.segs
	memoIDs      = 256 // bcat/badv verdicts memoised for cat/adomain ids below this
)

// view is what Match reads of one request and imp, computed once per call.
// It lives on Match's stack.
type view struct {
	s      *Set
	req    *openrtb2.BidRequest
	imp    *openrtb2.Imp
	nowNs  int64
	now    time.Time
	kind   int
	keyBad bool // site domain / app bundle present but unusable (too long)
	// ids of the site domain and its parent domains in Set.domains
	domIDs [maxDomainIDs]int32
	nDom   int
	bundle int32 // id in Set.bundles, -1 none
	pub    int32 // id in Set.pubs, -1 none
	// country: index in countryPairs, -1 unknown
	country  int
	country3 string
	region   string
	devType  adcom1.DeviceType
	os       string
	segIDs   [maxSegIDs]int32
	nSeg     int
	segAll   bool // more than maxSegIDs: fall back to string lookups
	userSegs []string
	loc      *time.Location // zone of wday/hour below
	wday     time.Weekday
	hour     int
	cat      memo // bcat verdicts by category id
	adom     memo // badv verdicts by adomain id
}

func (v *view) init(s *Set, req *openrtb2.BidRequest, imp *openrtb2.Imp, segs []string, now time.Time) {
	v.s, v.req, v.imp, v.now, v.nowNs, v.userSegs = s, req, imp, now, now.UnixNano(), segs
	v.bundle, v.pub, v.country = -1, -1, -1
	var pub *openrtb2.Publisher
	var buf [maxDomain]byte
	switch {
	case req.Site != nil:
		v.kind = kindSite
		d := req.Site.Domain
		if d == "" {
			d = hostOf(req.Site.Page)
		}
		d = strings.TrimSuffix(d, ".")
		if len(d) > len(buf) {
			v.keyBad = true
		} else if len(d) > 0 && len(s.domains) > 0 {
			b := ascii.AppendLower(buf[:0], d)
			for v.nDom < maxDomainIDs {
				if id, ok := s.domains[string(b)]; ok {
					v.domIDs[v.nDom] = id
					v.nDom++
				}
				i := indexByte(b, '.')
				if i < 0 {
					break
				}
				b = b[i+1:]
			}
		}
		pub = req.Site.Publisher
	case req.App != nil:
		v.kind = kindApp
		d := req.App.Bundle
		if len(d) > len(buf) {
			v.keyBad = true
		} else if len(d) > 0 && len(s.bundles) > 0 {
			if id, ok := s.bundles[string(ascii.AppendLower(buf[:0], d))]; ok {
				v.bundle = id
			}
		}
		pub = req.App.Publisher
	}
	if pub != nil && pub.ID != "" {
		if id, ok := s.pubs[pub.ID]; ok {
			v.pub = id
		}
	}
	var geo *openrtb2.Geo
	if d := req.Device; d != nil {
		v.devType, v.os, geo = d.DeviceType, d.OS, d.Geo
	}
	if (geo == nil || geo.Country == "") && req.User != nil && req.User.Geo != nil {
		geo = req.User.Geo
	}
	if geo != nil {
		if k, ok := lookupCountry(geo.Country); ok {
			v.country, v.country3 = int(k.idx), k.a3
		}
		v.region = geo.Region
	}
	if len(s.segs) > 0 {
		for _, sg := range segs {
			v.addSeg(sg)
		}
		if u := req.User; u != nil {
			for i := range u.Data {
				for j := range u.Data[i].Segment {
					v.addSeg(u.Data[i].Segment[j].ID)
				}
			}
		}
	}
}

func (v *view) addSeg(sg string) {
	id, ok := v.s.segs[sg]
	if !ok {
		return
	}
	if v.nSeg == maxSegIDs {
		v.segAll = true
		return
	}
	v.segIDs[v.nSeg] = id
	v.nSeg++
}

// hostOf returns the host of an http(s) URL without allocating ("" if none).
func hostOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	h := u[i+3:]
	if j := strings.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	if j := strings.LastIndexByte(h, '@'); j >= 0 {
		h = h[j+1:]
	}
	if j := strings.LastIndexByte(h, ':'); j >= 0 && !strings.Contains(h[j:], "]") {
		h = h[:j]
	}
	return h
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// localTime sets wday and hour for loc (cached: most campaigns share a zone).
func (v *view) localTime(loc *time.Location) {
	if v.loc == loc {
		return
	}
	t := v.now.In(loc)
	v.loc, v.wday, v.hour = loc, t.Weekday(), t.Hour()
}

// hasID reports whether the sorted list holds id.
func hasID(list []int32, id int32) bool {
	if len(list) <= 16 {
		for _, x := range list {
			if x == id {
				return true
			}
		}
		return false
	}
	_, ok := slices.BinarySearch(list, id)
	return ok
}

func hasAnyID(list []int32, ids []int32) bool {
	for _, id := range ids {
		if hasID(list, id) {
			return true
		}
	}
	return false
}

// Match appends to out the campaigns eligible for imp of req at now, in file
// order, and returns out. A campaign is eligible when all of these hold:
//
//   - status active; Start <= now < End; now in a daypart (in TimeZone);
//   - the imp accepts what it serves: a banner size (imp.banner.format[], or
//     imp.banner.w/h) in Creative.Sizes, or a native imp and Creative.Native,
//     or a video imp and Creative.VAST whose declared Creative.Video fits
//     it (VideoMismatch); Creative.Attr not in the imp's battr;
//   - deals: with imp.pmp.private_auction=1, or DealsOnly, one of Deals is
//     in imp.pmp.deals and admits the campaign (see MatchDeal);
//   - site traffic: site.domain (else the host of site.page), or a parent
//     domain of it, in SiteDomains if given, and not in SiteDomainsDeny; a
//     campaign with AppBundles and no SiteDomains skips site traffic. App
//     traffic likewise with app.bundle (exact, case-insensitive). With
//     neither site nor app, only campaigns with no site/app allow list;
//   - publisher id, country (device.geo, else user.geo), region, device type,
//     os in their lists when given;
//   - user segments: userSegments (the user's profile, may be nil) or
//     user.data[].segment[].id of the request meets UserSegments when given;
//   - request blocks: no Cat in bcat (bcat "IAB22" blocks "IAB22-1"), no
//     ADomain in badv (a badv domain blocks its subdomains), Bundle not in
//     bapp, Seat admitted by wseat/bseat (a non-empty wseat needs Seat).
//
// Match allocates nothing when out has room (Len() is enough), unless why
// is non-nil: then the reason of every campaign not matched is recorded in
// why (debug mode; one of the Reason constants). Safe for concurrent use;
// req and imp are only read.
func (s *Set) Match(req *openrtb2.BidRequest, imp *openrtb2.Imp, userSegments []string, now time.Time, out []*Campaign, why *Rejections) []*Campaign {
	if s == nil || req == nil || imp == nil {
		return out
	}
	var v view
	v.init(s, req, imp, userSegments, now)
	for _, c := range s.all {
		if r := v.check(c); r != "" {
			if why != nil {
				why.add(c.ID, r)
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// check returns "" if c matches, else the reason.
func (v *view) check(c *Campaign) string {
	ix := c.ix
	if ix == nil {
		return ReasonNotIndexed
	}
	if !ix.active {
		return ReasonPaused
	}
	if v.nowNs < ix.startNs {
		return ReasonNotStarted
	}
	if v.nowNs >= ix.endNs {
		return ReasonEnded
	}
	if r := v.media(c); r != "" {
		return r
	}
	imp := v.imp
	if ix.dealsOnly || imp.PMP != nil && imp.PMP.PrivateAuction == 1 {
		if dealIndex(c, imp) < 0 {
			if ix.dealsOnly {
				return ReasonDealsOnly
			}
			return ReasonDeal
		}
	}
	if r := v.inventory(ix); r != "" {
		return r
	}
	if ix.countries != nil && (v.country < 0 || ix.countries[v.country/64]&(1<<uint(v.country%64)) == 0) {
		return ReasonCountry
	}
	if len(ix.regions) > 0 && !v.inRegions(ix.regions) {
		return ReasonRegion
	}
	if ix.devMask != 0 && (v.devType <= 0 || v.devType > 31 || ix.devMask&(1<<uint(v.devType)) == 0) {
		return ReasonDeviceType
	}
	if len(c.Targeting.OS) > 0 && !equalFoldAny(c.Targeting.OS, v.os) {
		return ReasonOS
	}
	if ix.hours != nil {
		v.localTime(c.TimeZone)
		if ix.hours[v.wday]&(1<<uint(v.hour)) == 0 {
			return ReasonDaypart
		}
	}
	if ix.segs != nil && !v.hasSegment(c, ix) {
		return ReasonSegment
	}
	return v.blocks(c, ix)
}

// media checks the imp accepts one of the campaign's creatives.
func (v *view) media(c *Campaign) string {
	imp := v.imp
	ok := false
	if imp.Banner != nil {
		_, _, ok = c.BannerSize(imp)
	}
	ok = ok || imp.Native != nil && c.Creative.Native
	videoWhy := "" // the VAST template's declared video does not fit the imp's
	if !ok && imp.Video != nil && c.Creative.VAST != "" {
		videoWhy = c.VideoMismatch(imp.Video)
		ok = videoWhy == ""
	}
	if !ok && videoWhy != "" {
		return videoWhy
	}
	if !ok {
		switch {
		case imp.Banner != nil && imp.Native == nil && imp.Video == nil:
			return ReasonBanner
		case imp.Native != nil && imp.Banner == nil && imp.Video == nil:
			return ReasonNative
		case imp.Video != nil && imp.Banner == nil && imp.Native == nil:
			return ReasonVideo
		}
		return ReasonMedia
	}
	if len(c.Creative.Attr) > 0 {
		if imp.Banner != nil && attrBlocked(c.Creative.Attr, imp.Banner.BAttr) ||
			imp.Video != nil && attrBlocked(c.Creative.Attr, imp.Video.BAttr) ||
			imp.Native != nil && attrBlocked(c.Creative.Attr, imp.Native.BAttr) {
			return ReasonBattr
		}
	}
	return ""
}

func attrBlocked(have, blocked []adcom1.CreativeAttribute) bool {
	for _, a := range have {
		for _, b := range blocked {
			if a == b {
				return true
			}
		}
	}
	return false
}

// inventory checks site/app allow and deny lists and publisher ids.
func (v *view) inventory(ix *index) string {
	switch v.kind {
	case kindSite:
		if ix.siteAllow != nil {
			if !hasAnyID(ix.siteAllow, v.domIDs[:v.nDom]) {
				return ReasonSiteDomain
			}
		} else if ix.appAllow != nil {
			return ReasonAppOnly
		}
		if ix.siteDeny != nil {
			if v.keyBad {
				return reasonDomainTooLong
			}
			if hasAnyID(ix.siteDeny, v.domIDs[:v.nDom]) {
				return ReasonSiteDeny
			}
		}
	case kindApp:
		if ix.appAllow != nil {
			if v.bundle < 0 || !hasID(ix.appAllow, v.bundle) {
				return ReasonAppBundle
			}
		} else if ix.siteAllow != nil {
			return ReasonSiteOnly
		}
		if ix.appDeny != nil {
			if v.keyBad {
				return reasonBundleTooLong
			}
			if v.bundle >= 0 && hasID(ix.appDeny, v.bundle) {
				return ReasonAppDeny
			}
		}
	default:
		if ix.siteAllow != nil || ix.appAllow != nil {
			return ReasonNoSiteApp
		}
	}
	if ix.pubs != nil && (v.pub < 0 || !hasID(ix.pubs, v.pub)) {
		return ReasonPublisher
	}
	return ""
}

func (v *view) inRegions(rs []region) bool {
	if v.region == "" {
		return false
	}
	for i := range rs {
		r := &rs[i]
		if strings.EqualFold(r.full, v.region) ||
			r.sub != "" && r.country3 == v.country3 && strings.EqualFold(r.sub, v.region) {
			return true
		}
	}
	return false
}

func equalFoldAny(list []string, s string) bool {
	if s == "" {
		return false
	}
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func (v *view) hasSegment(c *Campaign, ix *index) bool {
	if !v.segAll {
		return hasAnyID(ix.segs, v.segIDs[:v.nSeg])
	}
	// Too many segments for the memo: compare strings.
	for _, s := range v.userSegs {
		if slices.Contains(c.Targeting.UserSegments, s) {
			return true
		}
	}
	if u := v.req.User; u != nil {
		for i := range u.Data {
			for j := range u.Data[i].Segment {
				if slices.Contains(c.Targeting.UserSegments, u.Data[i].Segment[j].ID) {
					return true
				}
			}
		}
	}
	return false
}

// blocks checks the request's bcat, badv, bapp, wseat and bseat.
func (v *view) blocks(c *Campaign, ix *index) string {
	req := v.req
	if len(req.BCat) > 0 {
		for _, id := range ix.cats {
			if v.cat.blocked(id, v.s.catStr[id], req.BCat, catBlocked) {
				return ReasonBcat
			}
		}
	}
	if len(req.BAdv) > 0 {
		for _, id := range ix.adoms {
			if v.adom.blocked(id, v.s.adomStr[id], req.BAdv, domainUnder) {
				return ReasonBadv
			}
		}
	}
	if c.Bundle != "" {
		for _, b := range req.BApp {
			if strings.EqualFold(b, c.Bundle) {
				return ReasonBapp
			}
		}
	}
	if !seatAllowed(c.Seat, req.WSeat) {
		return ReasonSeat
	}
	if c.Seat != "" {
		for _, b := range req.BSeat {
			if b == c.Seat {
				return ReasonSeat
			}
		}
	}
	return ""
}

// memo holds one request's verdicts for the ids below memoIDs: done says
// which ids were checked, bad which of those are blocked.
type memo struct{ done, bad [memoIDs / 64]uint64 }

// blocked reports whether an entry of list blocks s (blocks(s, entry)),
// memoised per request for id, the id of s.
func (m *memo) blocked(id int32, s string, list []string, blocks func(s, b string) bool) bool {
	w, bit := id/64, uint64(1)<<uint(id%64)
	if id < memoIDs && m.done[w]&bit != 0 {
		return m.bad[w]&bit != 0
	}
	bad := false
	for _, b := range list {
		if blocks(s, b) {
			bad = true
			break
		}
	}
	if id < memoIDs {
		m.done[w] |= bit
		if bad {
			m.bad[w] |= bit
		}
	}
	return bad
}

// catBlocked: b blocks cat itself and its subcategories (IAB22 blocks IAB22-1).
func catBlocked(cat, b string) bool {
	if len(cat) == len(b) {
		return strings.EqualFold(cat, b)
	}
	return len(cat) > len(b) && len(b) > 0 && cat[len(b)] == '-' && strings.EqualFold(cat[:len(b)], b)
}

// domainUnder reports whether d is parent or a subdomain of it, ignoring case.
func domainUnder(d, parent string) bool {
	parent = strings.TrimSuffix(parent, ".")
	if parent == "" {
		return false
	}
	if len(d) == len(parent) {
		return strings.EqualFold(d, parent)
	}
	return len(d) > len(parent) && d[len(d)-len(parent)-1] == '.' && strings.EqualFold(d[len(d)-len(parent):], parent)
}

func seatAllowed(seat string, wseat []string) bool {
	if len(wseat) == 0 {
		return true
	}
	if seat == "" {
		return false
	}
	for _, s := range wseat {
		if s == seat {
			return true
		}
	}
	return false
}

// dealIndex returns the index in imp.pmp.deals of the first deal that c
// bids on and that admits it, or -1.
func dealIndex(c *Campaign, imp *openrtb2.Imp) int {
	if imp == nil || imp.PMP == nil || len(c.Deals) == 0 {
		return -1
	}
	for i := range imp.PMP.Deals {
		d := &imp.PMP.Deals[i]
		if d.ID == "" || !slices.Contains(c.Deals, d.ID) || !seatAllowed(c.Seat, d.WSeat) {
			continue
		}
		if len(d.WADomain) > 0 && !adomainAllowed(c.ADomain, d.WADomain) {
			continue
		}
		return i
	}
	return -1
}

func adomainAllowed(have, allowed []string) bool {
	for _, a := range have {
		for _, w := range allowed {
			if domainUnder(a, w) {
				return true
			}
		}
	}
	return false
}

// MatchDeal returns the deal c should bid through on imp: the first deal of
// imp.pmp.deals (in the exchange's order) whose id is in c.Deals and whose
// wseat (if any) lists c.Seat and wadomain (if any) one of c.ADomain (or a
// parent domain of it). floorMicros is the deal's bidfloor in micros of
// floorCur, the deal's bidfloorcur ("USD" when absent, as the spec says);
// 0 if the deal has no floor (the imp's own bidfloor is the caller's call).
// ok is false when no deal applies: the campaign bids in the open auction,
// unless the imp is a private auction or c.DealsOnly (Match has then already
// left c out). Allocates nothing; safe for concurrent use.
func (s *Set) MatchDeal(c *Campaign, imp *openrtb2.Imp) (dealID string, floorMicros int64, floorCur string, ok bool) {
	i := dealIndex(c, imp)
	if i < 0 {
		return "", 0, "", false
	}
	d := &imp.PMP.Deals[i]
	cur := d.BidFloorCur
	if cur == "" {
		cur = "USD"
	}
	return d.ID, money.FromFloat(d.BidFloor), cur, true
}
