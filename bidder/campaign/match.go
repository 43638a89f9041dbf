package campaign

// Match: which campaigns of a Set may bid on one request's imp, with the
// reason each other campaign was rejected.

import (
	"slices"
	"strings"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/bidder/internal/ascii"
	"github.com/rtbd/rtbd/rtb/money"
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
