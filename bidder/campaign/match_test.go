package campaign

import (
	"reflect"
	"testing"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/rtbd/rtbd/rtb/money"
)

// wed is Wednesday 2026-05-13 03:00 UTC (12:00 in Tokyo).
var wed = time.Date(2026, 5, 13, 3, 0, 0, 0, time.UTC)

func baseCampaign() *Campaign {
	return &Campaign{
		ID:             "c",
		ADomain:        []string{"shop-example.com"},
		Cat:            []string{"IAB22-4"},
		ProductGroupID: 1,
		Status:         StatusActive,
		TimeZone:       time.UTC,
		Currency:       "USD",
		BidCPMMicros:   1_000_000,
		Strategy:       Strategy{Type: StrategyFixed},
		Pacing:         PacingEven,
		BidShading:     ShadingAuto,
		Creative:       Creative{Template: TemplateLight, Sizes: [][2]int64{{300, 250}}},
	}
}

func ptr[T any](v T) *T { return &v }

func baseRequest() *openrtb2.BidRequest {
	return &openrtb2.BidRequest{
		ID:  "r",
		Imp: []openrtb2.Imp{{ID: "1", Banner: &openrtb2.Banner{W: ptr[int64](300), H: ptr[int64](250)}}},
		Site: &openrtb2.Site{Domain: "www.example.com", Page: "https://www.example.com/a",
			Publisher: &openrtb2.Publisher{ID: "pub1"}},
		Device: &openrtb2.Device{DeviceType: adcom1.DevicePhone, OS: "iOS",
			Geo: &openrtb2.Geo{Country: "JPN", Region: "13"}},
		User: &openrtb2.User{ID: "u", Data: []openrtb2.Data{{ID: "d", Segment: []openrtb2.Segment{{ID: "seg-req"}}}}},
	}
}

func toApp(r *openrtb2.BidRequest) {
	r.Site = nil
	r.App = &openrtb2.App{Bundle: "com.Example.App", Publisher: &openrtb2.Publisher{ID: "pub1"}}
}

func mustSet(tb testing.TB, cs ...*Campaign) *Set {
	tb.Helper()
	s, err := NewSet(cs)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestMatch(t *testing.T) {
	tokyo := mustLoc(t, "Asia/Tokyo")
	cases := []struct {
		name string
		camp func(*Campaign)
		req  func(*openrtb2.BidRequest)
		segs []string
		now  time.Time
		want string // reason; "" = matched
	}{
		{name: "baseline"},
		{name: "paused", camp: func(c *Campaign) { c.Status = StatusPaused }, want: ReasonPaused},
		// Flight dates.
		{name: "before start", camp: func(c *Campaign) { c.Start = wed.Add(time.Second) }, want: ReasonNotStarted},
		{name: "at start", camp: func(c *Campaign) { c.Start = wed }},
		{name: "at end (exclusive)", camp: func(c *Campaign) { c.End = wed }, want: ReasonEnded},
		{name: "before end", camp: func(c *Campaign) { c.End = wed.Add(time.Nanosecond) }},
		{name: "end date in tz, last minute", camp: func(c *Campaign) { c.TimeZone = tokyo; c.End = time.Date(2026, 5, 14, 0, 0, 0, 0, tokyo) },
			now: time.Date(2026, 5, 13, 23, 59, 0, 0, tokyo)},
		{name: "end date in tz, next day", camp: func(c *Campaign) { c.TimeZone = tokyo; c.End = time.Date(2026, 5, 14, 0, 0, 0, 0, tokyo) },
			now: time.Date(2026, 5, 13, 15, 0, 0, 0, time.UTC), want: ReasonEnded},
		// Site domains.
		{name: "site allow subdomain", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"example.com"} }},
		{name: "site allow exact", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"www.example.com"} }},
		{name: "site allow other", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"other.com"} }, want: ReasonSiteDomain},
		{name: "site allow not a suffix match", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"ample.com"} }, want: ReasonSiteDomain},
		{name: "site allow child of request", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"a.www.example.com"} }, want: ReasonSiteDomain},
		{name: "site allow upper-case request", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"example.com"} },
			req: func(r *openrtb2.BidRequest) { r.Site.Domain = "WWW.Example.COM." }},
		{name: "site allow from page", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"example.com"} },
			req: func(r *openrtb2.BidRequest) {
				r.Site.Domain = ""
				r.Site.Page = "https://user@Shop.Example.com:8443/x?y#z"
			}},
		{name: "site allow no domain", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"example.com"} },
			req: func(r *openrtb2.BidRequest) { r.Site.Domain = ""; r.Site.Page = "" }, want: ReasonSiteDomain},
		{name: "site deny parent", camp: func(c *Campaign) { c.Targeting.SiteDomainsDeny = []string{"example.com"} }, want: ReasonSiteDeny},
		{name: "site deny other", camp: func(c *Campaign) { c.Targeting.SiteDomainsDeny = []string{"foo.com"} }},
		{name: "site deny too long domain", camp: func(c *Campaign) { c.Targeting.SiteDomainsDeny = []string{"foo.com"} },
			req: func(r *openrtb2.BidRequest) { r.Site.Domain = string(make([]byte, 300)) }, want: reasonDomainTooLong},
		{name: "site traffic, app-only campaign", camp: func(c *Campaign) { c.Targeting.AppBundles = []string{"com.example.app"} }, want: ReasonAppOnly},
		{name: "site traffic, site and app lists", camp: func(c *Campaign) {
			c.Targeting.AppBundles = []string{"com.example.app"}
			c.Targeting.SiteDomains = []string{"example.com"}
		}},
		// App bundles.
		{name: "app, no lists", req: toApp},
		{name: "app allow, case-insensitive", camp: func(c *Campaign) { c.Targeting.AppBundles = []string{"com.example.app"} }, req: toApp},
		{name: "app allow other", camp: func(c *Campaign) { c.Targeting.AppBundles = []string{"com.other"} }, req: toApp, want: ReasonAppBundle},
		{name: "app allow prefix only", camp: func(c *Campaign) { c.Targeting.AppBundles = []string{"com.example"} }, req: toApp, want: ReasonAppBundle},
		{name: "app deny", camp: func(c *Campaign) { c.Targeting.AppBundlesDeny = []string{"com.example.app"} }, req: toApp, want: ReasonAppDeny},
		{name: "app traffic, site-only campaign", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"example.com"} }, req: toApp, want: ReasonSiteOnly},
		{name: "app traffic, site deny only", camp: func(c *Campaign) { c.Targeting.SiteDomainsDeny = []string{"example.com"} }, req: toApp},
		{name: "neither site nor app", camp: func(c *Campaign) { c.Targeting.SiteDomains = []string{"example.com"} },
			req: func(r *openrtb2.BidRequest) { r.Site = nil }, want: ReasonNoSiteApp},
		{name: "neither site nor app, no lists", req: func(r *openrtb2.BidRequest) { r.Site = nil }},
		// Publisher.
		{name: "publisher in list", camp: func(c *Campaign) { c.Targeting.PublisherIDs = []string{"x", "pub1"} }},
		{name: "publisher in list, app", camp: func(c *Campaign) { c.Targeting.PublisherIDs = []string{"pub1"} }, req: toApp},
		{name: "publisher not in list", camp: func(c *Campaign) { c.Targeting.PublisherIDs = []string{"x"} }, want: ReasonPublisher},
		{name: "publisher missing", camp: func(c *Campaign) { c.Targeting.PublisherIDs = []string{"x"} },
			req: func(r *openrtb2.BidRequest) { r.Site.Publisher = nil }, want: ReasonPublisher},
		// Geo.
		{name: "country alpha-2 in file", camp: func(c *Campaign) { c.Targeting.Countries = []string{"JP"} }},
		{name: "country lower-case request", camp: func(c *Campaign) { c.Targeting.Countries = []string{"JPN"} },
			req: func(r *openrtb2.BidRequest) { r.Device.Geo.Country = "jpn" }},
		{name: "country alpha-2 request", camp: func(c *Campaign) { c.Targeting.Countries = []string{"JPN"} },
			req: func(r *openrtb2.BidRequest) { r.Device.Geo.Country = "JP" }},
		{name: "country other", camp: func(c *Campaign) { c.Targeting.Countries = []string{"USA", "KR"} }, want: ReasonCountry},
		{name: "country missing", camp: func(c *Campaign) { c.Targeting.Countries = []string{"JPN"} },
			req: func(r *openrtb2.BidRequest) { r.Device.Geo = nil }, want: ReasonCountry},
		{name: "country from user.geo", camp: func(c *Campaign) { c.Targeting.Countries = []string{"USA"} },
			req: func(r *openrtb2.BidRequest) { r.Device.Geo = nil; r.User.Geo = &openrtb2.Geo{Country: "USA"} }},
		{name: "region plain", camp: func(c *Campaign) { c.Targeting.Regions = []string{"13"} }},
		{name: "region ISO 3166-2", camp: func(c *Campaign) { c.Targeting.Regions = []string{"jp-13"} }},
		{name: "region ISO 3166-2 other country", camp: func(c *Campaign) { c.Targeting.Regions = []string{"US-13"} }, want: ReasonRegion},
		{name: "region other", camp: func(c *Campaign) { c.Targeting.Regions = []string{"14"} }, want: ReasonRegion},
		// Device.
		{name: "device mobile matches phone", camp: func(c *Campaign) { c.Targeting.DeviceTypes = []adcom1.DeviceType{adcom1.DeviceMobile} }},
		{name: "device phone", camp: func(c *Campaign) { c.Targeting.DeviceTypes = []adcom1.DeviceType{adcom1.DevicePC, adcom1.DevicePhone} }},
		{name: "device pc only", camp: func(c *Campaign) { c.Targeting.DeviceTypes = []adcom1.DeviceType{adcom1.DevicePC} }, want: ReasonDeviceType},
		{name: "device phone vs request mobile", camp: func(c *Campaign) { c.Targeting.DeviceTypes = []adcom1.DeviceType{adcom1.DevicePhone} },
			req: func(r *openrtb2.BidRequest) { r.Device.DeviceType = adcom1.DeviceMobile }, want: ReasonDeviceType},
		{name: "device missing", camp: func(c *Campaign) { c.Targeting.DeviceTypes = []adcom1.DeviceType{adcom1.DeviceMobile} },
			req: func(r *openrtb2.BidRequest) { r.Device = nil }, want: ReasonDeviceType},
		{name: "os case-insensitive", camp: func(c *Campaign) { c.Targeting.OS = []string{"android", "IOS"} }},
		{name: "os other", camp: func(c *Campaign) { c.Targeting.OS = []string{"android"} }, want: ReasonOS},
		// Segments.
		{name: "segment from profile", camp: func(c *Campaign) { c.Targeting.UserSegments = []string{"s1"} }, segs: []string{"s0", "s1"}},
		{name: "segment from request", camp: func(c *Campaign) { c.Targeting.UserSegments = []string{"seg-req"} }},
		{name: "segment none", camp: func(c *Campaign) { c.Targeting.UserSegments = []string{"s9"} }, segs: []string{"s1"}, want: ReasonSegment},
		{name: "segment no user", camp: func(c *Campaign) { c.Targeting.UserSegments = []string{"seg-req"} },
			req: func(r *openrtb2.BidRequest) { r.User = nil }, want: ReasonSegment},
		// Sizes and media.
		{name: "size from format list", camp: func(c *Campaign) { c.Creative.Sizes = [][2]int64{{728, 90}} },
			req: func(r *openrtb2.BidRequest) {
				r.Imp[0].Banner = &openrtb2.Banner{Format: []openrtb2.Format{{W: 300, H: 250}, {W: 728, H: 90}}}
			}},
		{name: "size not in format list", camp: func(c *Campaign) { c.Creative.Sizes = [][2]int64{{160, 600}} },
			req: func(r *openrtb2.BidRequest) {
				r.Imp[0].Banner = &openrtb2.Banner{Format: []openrtb2.Format{{W: 300, H: 250}, {W: 728, H: 90}}}
			}, want: ReasonBanner},
		{name: "size w/h other", camp: func(c *Campaign) { c.Creative.Sizes = [][2]int64{{250, 300}} }, want: ReasonBanner},
		{name: "banner without size", req: func(r *openrtb2.BidRequest) { r.Imp[0].Banner = &openrtb2.Banner{} }, want: ReasonBanner},
		{name: "native imp, native creative", camp: func(c *Campaign) { c.Creative.Native = true },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].Banner = nil; r.Imp[0].Native = &openrtb2.Native{Request: "{}"} }},
		{name: "native imp, banner creative", req: func(r *openrtb2.BidRequest) {
			r.Imp[0].Banner = nil
			r.Imp[0].Native = &openrtb2.Native{Request: "{}"}
		}, want: ReasonNative},
		{name: "video imp without vast", req: func(r *openrtb2.BidRequest) {
			r.Imp[0].Banner = nil
			r.Imp[0].Video = &openrtb2.Video{MIMEs: []string{"video/mp4"}}
		}, want: ReasonVideo},
		{name: "video imp with vast", camp: func(c *Campaign) { c.Creative.VAST = "<VAST/>" }, req: func(r *openrtb2.BidRequest) {
			r.Imp[0].Banner = nil
			r.Imp[0].Video = &openrtb2.Video{MIMEs: []string{"video/mp4"}}
		}},
		{name: "multi-format imp, native fits", camp: func(c *Campaign) { c.Creative.Sizes = nil; c.Creative.Native = true },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].Native = &openrtb2.Native{Request: "{}"} }},
		{name: "multi-format imp, nothing fits", camp: func(c *Campaign) { c.Creative.Sizes = [][2]int64{{1, 1}} },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].Native = &openrtb2.Native{Request: "{}"} }, want: ReasonMedia},
		{name: "audio imp", req: func(r *openrtb2.BidRequest) { r.Imp[0].Banner = nil; r.Imp[0].Audio = &openrtb2.Audio{} }, want: ReasonMedia},
		{name: "battr blocks attr", camp: func(c *Campaign) { c.Creative.Attr = []adcom1.CreativeAttribute{1} },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].Banner.BAttr = []adcom1.CreativeAttribute{3, 1} }, want: ReasonBattr},
		{name: "battr other", camp: func(c *Campaign) { c.Creative.Attr = []adcom1.CreativeAttribute{1} },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].Banner.BAttr = []adcom1.CreativeAttribute{3} }},
		// Request blocks.
		{name: "bcat parent blocks child", req: func(r *openrtb2.BidRequest) { r.BCat = []string{"IAB1", "IAB22"} }, want: ReasonBcat},
		{name: "bcat exact", req: func(r *openrtb2.BidRequest) { r.BCat = []string{"IAB22-4"} }, want: ReasonBcat},
		{name: "bcat sibling", req: func(r *openrtb2.BidRequest) { r.BCat = []string{"IAB22-1", "IAB2"} }},
		{name: "bcat child does not block parent", camp: func(c *Campaign) { c.Cat = []string{"IAB22"} },
			req: func(r *openrtb2.BidRequest) { r.BCat = []string{"IAB22-4"} }},
		{name: "badv exact", req: func(r *openrtb2.BidRequest) { r.BAdv = []string{"apple.com", "Shop-Example.com"} }, want: ReasonBadv},
		{name: "badv parent domain", camp: func(c *Campaign) { c.ADomain = []string{"www.shop.com"} },
			req: func(r *openrtb2.BidRequest) { r.BAdv = []string{"shop.com"} }, want: ReasonBadv},
		{name: "badv suffix not domain", req: func(r *openrtb2.BidRequest) { r.BAdv = []string{"example.com"} }},
		{name: "bapp", camp: func(c *Campaign) { c.Bundle = "com.shop.app" },
			req: func(r *openrtb2.BidRequest) { r.BApp = []string{"com.shop.app"} }, want: ReasonBapp},
		{name: "wseat without seat", req: func(r *openrtb2.BidRequest) { r.WSeat = []string{"s1"} }, want: ReasonSeat},
		{name: "wseat with seat", camp: func(c *Campaign) { c.Seat = "s1" }, req: func(r *openrtb2.BidRequest) { r.WSeat = []string{"s0", "s1"} }},
		{name: "bseat", camp: func(c *Campaign) { c.Seat = "s1" }, req: func(r *openrtb2.BidRequest) { r.BSeat = []string{"s1"} }, want: ReasonSeat},
		// Deals.
		{name: "private auction, deal", camp: func(c *Campaign) { c.Deals = []string{"d1"} },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d0"}, openrtb2.Deal{ID: "d1"}) }},
		{name: "private auction, no deal", camp: func(c *Campaign) { c.Deals = []string{"d2"} },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d1"}) }, want: ReasonDeal},
		{name: "private auction, campaign without deals",
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d1"}) }, want: ReasonDeal},
		{name: "open auction with deals, campaign without deals",
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(0, openrtb2.Deal{ID: "d1"}) }},
		{name: "deals_only, no pmp", camp: func(c *Campaign) { c.Deals = []string{"d1"}; c.DealsOnly = true }, want: ReasonDealsOnly},
		{name: "deals_only, deal", camp: func(c *Campaign) { c.Deals = []string{"d1"}; c.DealsOnly = true },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(0, openrtb2.Deal{ID: "d1"}) }},
		{name: "deal wseat other", camp: func(c *Campaign) { c.Deals = []string{"d1"}; c.Seat = "s1" },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d1", WSeat: []string{"s2"}}) }, want: ReasonDeal},
		{name: "deal wseat no seat", camp: func(c *Campaign) { c.Deals = []string{"d1"} },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d1", WSeat: []string{"s2"}}) }, want: ReasonDeal},
		{name: "deal wseat ok", camp: func(c *Campaign) { c.Deals = []string{"d1"}; c.Seat = "s2" },
			req: func(r *openrtb2.BidRequest) { r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d1", WSeat: []string{"s2"}}) }},
		{name: "deal wadomain other", camp: func(c *Campaign) { c.Deals = []string{"d1"} },
			req: func(r *openrtb2.BidRequest) {
				r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d1", WADomain: []string{"other.com"}})
			}, want: ReasonDeal},
		{name: "deal wadomain ok", camp: func(c *Campaign) { c.Deals = []string{"d1"} },
			req: func(r *openrtb2.BidRequest) {
				r.Imp[0].PMP = pmp(1, openrtb2.Deal{ID: "d1", WADomain: []string{"other.com", "shop-example.com"}})
			}},
		// Dayparts (UTC here; time zones in TestDayparts).
		{name: "daypart in", camp: func(c *Campaign) {
			c.Targeting.Dayparts = []Daypart{{Days: []time.Weekday{time.Wednesday}, StartHour: 3, EndHour: 4}}
		}},
		{name: "daypart other day", camp: func(c *Campaign) {
			c.Targeting.Dayparts = []Daypart{{Days: []time.Weekday{time.Tuesday}, StartHour: 0, EndHour: 24}}
		}, want: ReasonDaypart},
		{name: "daypart end exclusive", camp: func(c *Campaign) { c.Targeting.Dayparts = []Daypart{{StartHour: 1, EndHour: 3}} }, want: ReasonDaypart},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := baseCampaign()
			if tc.camp != nil {
				tc.camp(c)
			}
			req := baseRequest()
			if tc.req != nil {
				tc.req(req)
			}
			now := tc.now
			if now.IsZero() {
				now = wed
			}
			s := mustSet(t, c)
			var why Rejections
			out := s.Match(req, &req.Imp[0], tc.segs, now, nil, &why)
			if tc.want == "" {
				if len(out) != 1 || out[0] != s.All()[0] || len(why.ByCampaign) != 0 {
					t.Fatalf("not matched: %v", why.ByCampaign)
				}
			} else {
				if len(out) != 0 || why.ByCampaign["c"] != tc.want {
					t.Fatalf("matched %d, reason %q, want %q", len(out), why.ByCampaign["c"], tc.want)
				}
			}
			// Without Rejections, the same answer.
			if n := len(s.Match(req, &req.Imp[0], tc.segs, now, nil, nil)); n != len(out) {
				t.Fatalf("without why: %d matches, with: %d", n, len(out))
			}
		})
	}
}

func pmp(private int8, deals ...openrtb2.Deal) *openrtb2.PMP {
	return &openrtb2.PMP{PrivateAuction: private, Deals: deals}
}

func TestMatchOrderAndAppend(t *testing.T) {
	a, b, c := baseCampaign(), baseCampaign(), baseCampaign()
	a.ID, b.ID, c.ID = "a", "b", "c"
	b.Targeting.Countries = []string{"USA"}
	s := mustSet(t, a, b, c)
	req := baseRequest()
	out := make([]*Campaign, 1, 8)
	out = s.Match(req, &req.Imp[0], nil, wed, out, nil)
	if len(out) != 3 || out[0] != nil || out[1].ID != "a" || out[2].ID != "c" {
		t.Fatalf("out %v", out)
	}
	if got := (*Set)(nil).Match(req, &req.Imp[0], nil, wed, nil, nil); got != nil {
		t.Fatal("nil set matched")
	}
	if got := s.Match(req, nil, nil, wed, nil, nil); got != nil {
		t.Fatal("nil imp matched")
	}
	// A campaign not built by Parse is never matched (no index).
	s2 := &Set{all: []*Campaign{baseCampaign()}}
	var why Rejections
	if out := s2.Match(req, &req.Imp[0], nil, wed, nil, &why); len(out) != 0 || why.ByCampaign["c"] != ReasonNotIndexed {
		t.Fatalf("unindexed: %v %v", out, why)
	}
}

func TestDayparts(t *testing.T) {
	tokyo := mustLoc(t, "Asia/Tokyo")
	ny := mustLoc(t, "America/New_York")
	weekdays := []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}
	jp := baseCampaign()
	jp.ID, jp.TimeZone = "jp", tokyo
	jp.Targeting.Dayparts = []Daypart{{Days: weekdays, StartHour: 8, EndHour: 22}}
	us := baseCampaign()
	us.ID, us.TimeZone = "us", ny
	us.Targeting.Dayparts = []Daypart{{Days: []time.Weekday{time.Saturday, time.Sunday}, StartHour: 22, EndHour: 2}}
	s := mustSet(t, jp, us)
	cases := []struct {
		now  time.Time
		want []string
	}{
		// Monday 2026-01-05 23:30 UTC is Tuesday 08:30 in Tokyo.
		{time.Date(2026, 1, 5, 23, 30, 0, 0, time.UTC), []string{"jp"}},
		// Monday 12:59 UTC = Monday 21:59 JST; 13:00 UTC = 22:00 JST (end exclusive).
		{time.Date(2026, 1, 5, 12, 59, 0, 0, time.UTC), []string{"jp"}},
		{time.Date(2026, 1, 5, 13, 0, 0, 0, time.UTC), nil},
		// Sunday 2026-01-04 22:30 UTC is Monday 07:30 JST: too early.
		{time.Date(2026, 1, 4, 22, 30, 0, 0, time.UTC), nil},
		// Saturday 2026-01-10 22:00 in New York (Sunday 03:00 UTC).
		{time.Date(2026, 1, 10, 22, 0, 0, 0, ny), []string{"us"}},
		// Sunday 01:59 New York: the Saturday window running past midnight.
		{time.Date(2026, 1, 11, 1, 59, 0, 0, ny), []string{"us"}},
		// Monday 01:00 New York: the Sunday window running past midnight
		// (and Monday 15:00 in Tokyo).
		{time.Date(2026, 1, 12, 1, 0, 0, 0, ny), []string{"jp", "us"}},
		// Monday 02:00 New York: outside (Tokyo: 16:00, inside).
		{time.Date(2026, 1, 12, 2, 0, 0, 0, ny), []string{"jp"}},
		// Friday 23:00 New York = Saturday 13:00 in Tokyo: neither.
		{time.Date(2026, 1, 9, 23, 0, 0, 0, ny), nil},
		// Summer time: Saturday 2026-07-11 22:30 EDT = Sunday 02:30 UTC; Tokyo is Sunday too.
		{time.Date(2026, 7, 12, 2, 30, 0, 0, time.UTC), []string{"us"}},
	}
	for _, tc := range cases {
		req := baseRequest()
		var ids []string
		for _, c := range s.Match(req, &req.Imp[0], nil, tc.now, nil, nil) {
			ids = append(ids, c.ID)
		}
		if !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("%s: matched %v, want %v", tc.now.UTC().Format(time.RFC3339), ids, tc.want)
		}
	}
}

func TestMatchDeal(t *testing.T) {
	c := baseCampaign()
	c.Deals = []string{"d2", "d3"}
	c.Seat = "s1"
	s := mustSet(t, c)
	c = s.All()[0]
	imp := &openrtb2.Imp{ID: "1", PMP: pmp(0,
		openrtb2.Deal{ID: "d1", BidFloor: 9},
		openrtb2.Deal{ID: "d2", BidFloor: 2.5, WSeat: []string{"other"}},
		openrtb2.Deal{ID: "d3", BidFloor: 1.234567, BidFloorCur: "JPY", WSeat: []string{"s1"}},
		openrtb2.Deal{ID: "d2", BidFloor: 0.5},
	)}
	id, floor, cur, ok := s.MatchDeal(c, imp)
	if !ok || id != "d3" || floor != 1_234_567 || cur != "JPY" {
		t.Fatalf("MatchDeal = %q %d %q %v", id, floor, cur, ok)
	}
	imp.PMP.Deals[2].WSeat = nil
	imp.PMP.Deals[2], imp.PMP.Deals[3] = imp.PMP.Deals[3], imp.PMP.Deals[2]
	id, floor, cur, ok = s.MatchDeal(c, imp)
	if !ok || id != "d2" || floor != 500_000 || cur != "USD" {
		t.Fatalf("MatchDeal = %q %d %q %v", id, floor, cur, ok)
	}
	if _, _, _, ok := s.MatchDeal(c, &openrtb2.Imp{ID: "1"}); ok {
		t.Fatal("no pmp: ok")
	}
	if _, _, _, ok := s.MatchDeal(c, nil); ok {
		t.Fatal("nil imp: ok")
	}
	for in, want := range map[float64]int64{-1: 0, 0: 0, 0.1: 100_000, 1e300: 1<<63 - 1} {
		if got := money.FromFloat(in); got != want {
			t.Errorf("money.FromFloat(%g) = %d, want %d", in, got, want)
		}
	}
}

func TestBidMicros(t *testing.T) {
	tokyo := mustLoc(t, "Asia/Tokyo")
	c := baseCampaign()
	c.BidCPMMicros = 2_000_000
	req := baseRequest()
	if got := c.BidMicros(req, wed); got != 2_000_000 {
		t.Fatalf("fixed: %d", got)
	}
	c.TimeZone = tokyo
	c.Strategy = Strategy{Type: StrategyMultiplier,
		DeviceType: map[adcom1.DeviceType]float64{adcom1.DeviceMobile: 1.5, adcom1.DevicePC: 0.5},
		Country:    map[string]float64{"JPN": 1.1},
		Hour:       map[int]float64{12: 2}, // 12:00 in Tokyo = 03:00 UTC
	}
	cases := []struct {
		name string
		req  func(*openrtb2.BidRequest)
		now  time.Time
		want int64
	}{
		{"all three (phone uses mobile)", nil, wed, 6_600_000},
		{"pc, other hour", func(r *openrtb2.BidRequest) { r.Device.DeviceType = adcom1.DevicePC }, wed.Add(time.Hour), 1_100_000},
		{"tv: no multiplier, alpha-2 country", func(r *openrtb2.BidRequest) {
			r.Device.DeviceType = adcom1.DeviceTV
			r.Device.Geo.Country = "jp"
		}, wed.Add(time.Hour), 2_200_000},
		{"no device", func(r *openrtb2.BidRequest) { r.Device = nil }, wed, 4_000_000},
	}
	for _, tc := range cases {
		req := baseRequest()
		if tc.req != nil {
			tc.req(req)
		}
		if got := c.BidMicros(req, tc.now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestBannerSize(t *testing.T) {
	c := baseCampaign()
	c.Creative.Sizes = [][2]int64{{728, 90}, {300, 250}}
	imp := &openrtb2.Imp{Banner: &openrtb2.Banner{Format: []openrtb2.Format{{W: 320, H: 50}, {W: 300, H: 250}, {W: 728, H: 90}}}}
	if w, h, ok := c.BannerSize(imp); !ok || w != 300 || h != 250 {
		t.Fatalf("%d %d %v", w, h, ok)
	}
	if _, _, ok := c.BannerSize(&openrtb2.Imp{}); ok {
		t.Fatal("no banner")
	}
}
