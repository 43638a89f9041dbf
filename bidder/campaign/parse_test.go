package campaign

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // tests must not depend on the machine's zoneinfo

	"github.com/prebid/openrtb/v20/adcom1"

	"github.com/rtbd/rtbd/bidder/dsa"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/rtb/money"
)

func mustLoc(tb testing.TB, name string) *time.Location {
	tb.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// diffCampaigns returns "" if a and b hold equal campaigns (times compared
// as instants, zones by name, index data ignored), else a description.
func diffCampaigns(a, b []*Campaign) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d campaigns, want %d", len(a), len(b))
	}
	norm := func(c *Campaign) Campaign {
		x := *c
		x.ix = nil
		x.Start, x.End = x.Start.UTC(), x.End.UTC()
		x.TimeZone = nil
		return x
	}
	for i := range a {
		if a[i].location().String() != b[i].location().String() {
			return fmt.Sprintf("campaign %d: time zone %s, want %s", i, a[i].location(), b[i].location())
		}
		x, y := norm(a[i]), norm(b[i])
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("campaign %d:\n got %+v\nwant %+v", i, x, y)
		}
	}
	return ""
}

func TestDocExampleIsTestdata(t *testing.T) {
	file, err := os.ReadFile("testdata/campaigns.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, docExample(t)) {
		t.Fatal("testdata/campaigns.yaml differs from the example in doc.go; keep them identical")
	}
}

func TestParseFullExample(t *testing.T) {
	s, err := LoadFile("testdata/campaigns.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tokyo := mustLoc(t, "Asia/Tokyo")
	want := []*Campaign{{
		ID:             "summer-sale-jp",
		Name:           "Summer sale, Japan",
		Advertiser:     "Example Shop",
		ADomain:        []string{"shop-example.com"},
		Cat:            []string{"IAB22", "IAB22-4"},
		ProductGroupID: 1122,
		Status:         StatusActive,
		Start:          time.Date(2026, 7, 1, 0, 0, 0, 0, tokyo),
		End:            time.Date(2026, 9, 1, 0, 0, 0, 0, tokyo),
		TimeZone:       tokyo,
		Currency:       "JPY",
		BidCPMMicros:   180_500_000,
		Strategy: Strategy{
			Type:       StrategyMultiplier,
			DeviceType: map[adcom1.DeviceType]float64{adcom1.DeviceMobile: 1.2, adcom1.DevicePC: 0.8},
			Country:    map[string]float64{"JPN": 1.1},
			Hour:       map[int]float64{18: 1.3, 19: 1.3},
		},
		DailyBudgetMicros: 50_000_000_000,
		TotalBudgetMicros: 1_500_000_000_000,
		FrequencyCap:      FrequencyCap{Impressions: 3, Period: 24 * time.Hour},
		Pacing:            PacingEven,
		BidShading:        ShadingAuto,
		Targeting: Targeting{
			SiteDomains:     []string{"example.com", "news.example.jp"},
			SiteDomainsDeny: []string{"bad.example.com"},
			AppBundles:      []string{"com.example.app", "628677149"},
			AppBundlesDeny:  []string{"com.example.bad"},
			PublisherIDs:    []string{"8953", "pub-1"},
			Countries:       []string{"JPN", "KOR"},
			Regions:         []string{"JP-13", "27"},
			DeviceTypes:     []adcom1.DeviceType{adcom1.DeviceMobile, adcom1.DevicePC, adcom1.DeviceSetTopBox},
			OS:              []string{"ios", "android"},
			UserSegments:    []string{"auto-intender", "12341318394918"},
			Dayparts: []Daypart{
				{Days: []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}, StartHour: 8, EndHour: 22},
				{Days: []time.Weekday{time.Saturday, time.Sunday}, StartHour: 22, EndHour: 2},
			},
		},
		Creative: Creative{
			Template:  TemplateMedium,
			Sizes:     [][2]int64{{300, 250}, {728, 90}, {320, 50}},
			Native:    true,
			VAST:      `<VAST version="4.0"></VAST>`,
			ClickBase: "https://shop-example.com/lp",
			Attr:      []adcom1.CreativeAttribute{1},
			Video: Video{Mimes: []string{"video/mp4"}, Protocols: []adcom1.MediaCreativeSubtype{7}, Duration: 15,
				Plcmt: []adcom1.VideoPlcmtSubtype{1, 2}, W: 640, H: 360},
		},
		Deals:  []string{"AB-Agency1-0001"},
		Seat:   "Agency1",
		Bundle: "com.example.shop",
		DSA:    dsa.Setting{Behalf: "Shop Example Ltd", Paid: "Agency1 GmbH"},
		Supply: supply.Policy{CompleteOnly: true, MaxHops: 3, AuthorizedOnly: true},
	}, {
		ID:             "retargeting-us",
		ADomain:        []string{"shop-example.com"},
		ProductGroupID: 7,
		Status:         StatusPaused,
		TimeZone:       time.UTC,
		Currency:       "USD",
		BidCPMMicros:   1_250_000,
		Strategy:       Strategy{Type: StrategyFixed},
		Pacing:         PacingEven,
		BidShading:     ShadingAuto,
		Creative:       Creative{Template: TemplateLight, Sizes: [][2]int64{{300, 250}}},
	}}
	if d := diffCampaigns(s.All(), want); d != "" {
		t.Fatal(d)
	}
	if s.Len() != 2 || s.Name() != "testdata/campaigns.yaml" {
		t.Fatalf("Len %d Name %q", s.Len(), s.Name())
	}
	if c, ok := s.Get("retargeting-us"); !ok || c.ProductGroupID != 7 {
		t.Fatalf("Get: %v %v", c, ok)
	}
	if g := s.ByProductGroup(1122); len(g) != 1 || g[0].ID != "summer-sale-jp" {
		t.Fatalf("ByProductGroup: %v", g)
	}
	if a, p := s.Counts(); a != 1 || p != 1 {
		t.Fatalf("Counts %d %d", a, p)
	}
	v, r := s.All()[0].Creative.Quantities()
	if v+r != 15 {
		t.Fatalf("medium quantities %d+%d, want 15", v, r)
	}
}

func TestQuantities(t *testing.T) {
	for tmpl, total := range map[string]int32{TemplateLight: 3, TemplateMedium: 15, TemplateHeavy: 30} {
		v, r := Creative{Template: tmpl}.Quantities()
		if v+r != total || v <= 0 || r <= 0 {
			t.Errorf("%s: %d+%d, want total %d", tmpl, v, r, total)
		}
	}
}

// valid is a minimal valid campaign; invalid cases edit it.
const valid = `campaigns:
  - id: a
    adomain: [shop.com]
    product_group_id: 1
    status: active
    bid_cpm: 1.5
    creative: {template: light, sizes: ["300x250"]}
`

func TestParseMinimal(t *testing.T) {
	s, err := Parse([]byte(valid), "x")
	if err != nil {
		t.Fatal(err)
	}
	c := s.All()[0]
	if c.BidCPMMicros != 1_500_000 || c.Currency != "USD" || c.Pacing != PacingEven || c.TimeZone != time.UTC ||
		c.Strategy.Type != StrategyFixed {
		t.Fatalf("defaults: %+v", c)
	}
	if s, err := Parse([]byte("campaigns: []\n"), "x"); err != nil || s.Len() != 0 {
		t.Fatalf("empty list: %v %v", s, err)
	}
}

func TestParseInvalid(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(valid, old) {
			panic("test: " + old)
		}
		return strings.Replace(valid, old, new, 1)
	}
	second := valid + strings.TrimPrefix(valid, "campaigns:\n")
	cases := []struct {
		name string
		yaml string
		want []string // each must start one problem (key path first)
	}{
		{"empty file", "", []string{"campaigns: missing"}},
		{"comment only", "# nothing\n", []string{"campaigns: missing"}},
		{"no campaigns key", "other: 1\n", []string{"other: unknown key", "campaigns: missing"}},
		{"campaigns null", "campaigns:\n", []string{"campaigns: missing"}},
		{"campaigns not list", "campaigns: 3\n", []string{"campaigns: must be a list"}},
		{"syntax", "campaigns: [\n", []string{"yaml: line"}},
		{"two documents", valid + "---\ncampaigns: []\n", []string{"more than one YAML document"}},
		{"unknown key", edit("    status:", "    budget: 3\n    status:"), []string{"campaigns[0].budget: unknown key"}},
		{"unknown key typo", edit("    creative:", "    targeting: {contries: [JP]}\n    creative:"),
			[]string{`campaigns[0].targeting.contries: unknown key (did you mean "countries"?)`}},
		{"duplicate key", edit("    status: active", "    status: active\n    status: paused"), []string{"campaigns[0].status: duplicate key"}},
		{"duplicate id", second, []string{`campaigns[1].id: duplicate id "a" (also campaigns[0])`}},
		{"missing id", edit("  - id: a\n    adomain", "  - adomain"), []string{"campaigns[0].id: missing"}},
		{"bad id", edit("id: a", "id: a b"), []string{"campaigns[0].id:"}},
		{"campaign not mapping", "campaigns: [3]\n", []string{"campaigns[0]: must be a mapping"}},
		{"missing adomain", edit("    adomain: [shop.com]\n", ""), []string{"campaigns[0].adomain: missing"}},
		{"bad adomain", edit("[shop.com]", "[shop.com, http://x.com/]"), []string{"campaigns[0].adomain[1]:"}},
		{"bad cat", edit("    status:", "    cat: [IAB22, Shopping]\n    status:"), []string{`campaigns[0].cat[1]: "Shopping" is not an IAB category`}},
		{"empty product group", edit("product_group_id: 1", "product_group_id: 0"), []string{"campaigns[0].product_group_id: must be > 0"}},
		{"missing product group", edit("    product_group_id: 1\n", ""), []string{"campaigns[0].product_group_id: missing"}},
		{"product group not int", edit("product_group_id: 1", "product_group_id: one"), []string{`campaigns[0].product_group_id: "one" is not an integer`}},
		{"bad status", edit("status: active", "status: running"), []string{`campaigns[0].status: "running" is not one of active, paused`}},
		{"missing status", edit("    status: active\n", ""), []string{"campaigns[0].status: missing"}},
		{"bad bid_shading", edit("    status: active", "    status: active\n    bid_shading: always"), []string{`campaigns[0].bid_shading: "always" is not one of auto, off`}},
		{"bid zero", edit("bid_cpm: 1.5", "bid_cpm: 0"), []string{"campaigns[0].bid_cpm: must be > 0"}},
		{"bid negative", edit("bid_cpm: 1.5", "bid_cpm: -1"), []string{"campaigns[0].bid_cpm: must be > 0"}},
		{"bid missing", edit("    bid_cpm: 1.5\n", ""), []string{"campaigns[0].bid_cpm: missing"}},
		{"bid too precise", edit("bid_cpm: 1.5", "bid_cpm: 1.0000001"), []string{"campaigns[0].bid_cpm:"}},
		{"bid not number", edit("bid_cpm: 1.5", "bid_cpm: 1e3"), []string{"campaigns[0].bid_cpm:"}},
		{"bid list", edit("bid_cpm: 1.5", "bid_cpm: [1]"), []string{"campaigns[0].bid_cpm: must be a single value"}},
		{"negative budgets", edit("    status:", "    daily_budget: -1\n    total_budget: -2.5\n    status:"),
			[]string{"campaigns[0].daily_budget: must be >= 0", "campaigns[0].total_budget: must be >= 0"}},
		{"daily over total", edit("    status:", "    daily_budget: 10\n    total_budget: 5\n    status:"), []string{"campaigns[0].daily_budget: must be <= total_budget"}},
		{"end before start", edit("    status:", "    start: 2026-05-02\n    end: 2026-05-01\n    status:"), []string{"campaigns[0].end: must be after start"}},
		{"end equals start", edit("    status:", "    start: 2026-05-02T00:00:00Z\n    end: 2026-05-02T00:00:00Z\n    status:"), []string{"campaigns[0].end: must be after start"}},
		{"bad date", edit("    status:", "    start: 2026-13-01\n    status:"), []string{`campaigns[0].start: "2026-13-01" is not an RFC 3339 time`}},
		{"unknown time zone", edit("    status:", "    time_zone: Mars/Olympus\n    status:"), []string{`campaigns[0].time_zone: unknown time zone "Mars/Olympus"`}},
		{"local time zone", edit("    status:", "    time_zone: Local\n    status:"), []string{`campaigns[0].time_zone: unknown time zone`}},
		{"bad currency", edit("    status:", "    currency: usx\n    status:"), []string{`campaigns[0].currency: "usx" is not an ISO 4217 code`}},
		{"bad pacing", edit("    status:", "    pacing: fast\n    status:"), []string{`campaigns[0].pacing: "fast" is not one of even, asap`}},
		{"bad strategy type", edit("    status:", "    strategy: {type: smart}\n    status:"), []string{`campaigns[0].strategy.type: "smart" is not one of fixed, multiplier`}},
		{"multipliers with fixed", edit("    status:", "    strategy: {device_type: {pc: 2}}\n    status:"), []string{"campaigns[0].strategy.type: multipliers are given but type is fixed"}},
		{"bad multipliers", edit("    status:", "    strategy:\n      type: multiplier\n      device_type: {watch: 2, pc: 0}\n      country: {XX: 1.1, JP: abc}\n      hour: {\"24\": 1.2, \"3\": -1}\n    status:"),
			[]string{`campaigns[0].strategy.device_type.watch: unknown device type "watch"`, "campaigns[0].strategy.device_type.pc: must be > 0",
				`campaigns[0].strategy.country.XX: unknown country "XX"`, `campaigns[0].strategy.country.JP: "abc" is not a number`,
				`campaigns[0].strategy.hour.24: hour "24" is not 0-23`, "campaigns[0].strategy.hour.3: must be > 0"}},
		{"same country twice", edit("    status:", "    strategy: {type: multiplier, country: {JP: 1.1, JPN: 1.2}}\n    status:"), []string{"campaigns[0].strategy.country.JPN: country JPN given twice"}},
		{"frequency cap", edit("    status:", "    frequency_cap: {impressions: -1, period: soon}\n    status:"),
			[]string{"campaigns[0].frequency_cap.impressions: must be 0-1000000", `campaigns[0].frequency_cap.period: "soon" is not a positive duration`}},
		{"frequency cap without period", edit("    status:", "    frequency_cap: {impressions: 3}\n    status:"), []string{"campaigns[0].frequency_cap.period: missing"}},
		{"targeting lists", edit("    status:", "    targeting:\n      countries: [JP, ZZ]\n      device_types: [mobile, watch]\n      site_domains: [ok.com, \"bad domain\"]\n      os: [ios, \"\"]\n    status:"),
			[]string{`campaigns[0].targeting.countries[1]: unknown country "ZZ"`, `campaigns[0].targeting.device_types[1]: unknown device type "watch"`,
				`campaigns[0].targeting.site_domains[1]: "bad domain" is not a domain name`, "campaigns[0].targeting.os[1]: must not be empty"}},
		{"targeting list twice", edit("    status:", "    targeting: {countries: [JP, JPN]}\n    status:"), []string{`campaigns[0].targeting.countries[1]: "JPN" is listed twice`}},
		{"targeting not list", edit("    status:", "    targeting: {countries: JP}\n    status:"), []string{"campaigns[0].targeting.countries: must be a list"}},
		{"dayparts", edit("    status:", "    targeting:\n      dayparts:\n        - {days: [mon, funday], start_hour: 24, end_hour: 0}\n        - {start_hour: 5, end_hour: 5}\n        - {days: [mon]}\n    status:"),
			[]string{`campaigns[0].targeting.dayparts[0].days[1]: "funday" is not a day`, "campaigns[0].targeting.dayparts[0].start_hour: must be 0-23",
				"campaigns[0].targeting.dayparts[0].end_hour: must be 1-24", "campaigns[0].targeting.dayparts[1].end_hour: must differ from start_hour",
				"campaigns[0].targeting.dayparts[2].start_hour: missing", "campaigns[0].targeting.dayparts[2].end_hour: missing"}},
		{"bad size", edit(`sizes: ["300x250"]`, `sizes: ["300x250", "300y250", "0x50"]`),
			[]string{`campaigns[0].creative.sizes[1]: "300y250" is not WxH`, `campaigns[0].creative.sizes[2]: "0x50" is not WxH`}},
		{"bad template", edit("template: light", "template: huge"), []string{`campaigns[0].creative.template: "huge" is not one of light, medium, heavy`}},
		{"missing template", edit("template: light, ", ""), []string{"campaigns[0].creative.template: missing"}},
		{"creative serves nothing", edit(`, sizes: ["300x250"]`, ""), []string{"campaigns[0].creative: serves nothing"}},
		{"missing creative", edit(`    creative: {template: light, sizes: ["300x250"]}`+"\n", ""), []string{"campaigns[0].creative: missing"}},
		{"bad vast", edit(`sizes: ["300x250"]`, `vast: "<xml/>"`), []string{"campaigns[0].creative.vast: is not a VAST document"}},
		{"bad click base", edit(`sizes: ["300x250"]`, `sizes: ["300x250"], click_base: "/lp"`), []string{`campaigns[0].creative.click_base: "/lp" is not an absolute http(s) URL`}},
		{"native not bool", edit(`sizes: ["300x250"]`, `native: yes`), []string{`campaigns[0].creative.native: "yes" is not true or false`}},
		{"null list items keep their place", edit("    status:", "    targeting:\n      os: [ios, ~, \"\"]\n      dayparts: [~, {days: [mon, mon], start_hour: 1, end_hour: 2}]\n    status:"),
			[]string{"campaigns[0].targeting.os[1]: must not be empty", "campaigns[0].targeting.os[2]: must not be empty",
				"campaigns[0].targeting.dayparts[0]: empty daypart", "campaigns[0].targeting.dayparts[1].days[1]: mon is listed twice"}},
		{"wrong kinds keep their place", edit(`sizes: ["300x250"]`, `sizes: [[1], "300y250"], attr: [x, 0]`),
			[]string{"campaigns[0].creative.sizes[0]: must be a single value", `campaigns[0].creative.sizes[1]: "300y250" is not WxH`,
				`campaigns[0].creative.attr[0]: "x" is not an integer`, "campaigns[0].creative.attr[1]: must be a creative attribute"}},
		{"deals only without deals", edit("    status:", "    deals_only: true\n    status:"), []string{"campaigns[0].deals_only: is true but deals is empty"}},
		{"dsa without paid", edit("    status:", "    dsa: {behalf: Shop}\n    status:"), []string{"campaigns[0].dsa.paid: missing: who the ad is shown on behalf of (behalf) and who paid for it (paid), as bid.ext.dsa carries them"}},
		{"dsa over 100 bytes", edit("    status:", "    dsa: {behalf: Shop, paid: "+strings.Repeat("é", 51)+"}\n    status:"), []string{"campaigns[0].dsa.paid: must be at most 100 bytes (Prebid Server drops a longer one), got 102"}},
		{"negative max_hops", edit("    status:", "    supply: {max_hops: -1}\n    status:"), []string{"campaigns[0].supply.max_hops: must be >= 0 (0: any number of nodes), got -1"}},
		{"unknown supply key", edit("    status:", "    supply: {authorised_only: true}\n    status:"), []string{"campaigns[0].supply.authorised_only: unknown key (did you mean \"authorized_only\"?)"}},
		{"merge key", "base: &b {adomain: [x.com]}\n" + valid, []string{"base: unknown key"}},
		{"alias bomb", aliasBomb(), []string{"too many YAML nodes"}},
		{"too many problems", "campaigns: [" + strings.Repeat("3, ", 1000) + "3]\n", func() []string {
			w := make([]string, maxProblems)
			for i := range w {
				w[i] = fmt.Sprintf("campaigns[%d]: must be a mapping", i)
			}
			return append(w, "too many problems; stopped")
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.yaml), "campaigns.yaml")
			if err == nil {
				t.Fatalf("no error; parsed %d campaigns", s.Len())
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %T %v, want *ValidationError", err, err)
			}
			for _, w := range tc.want {
				found := false
				for _, p := range ve.Problems {
					found = found || strings.HasPrefix(p, w)
				}
				if !found {
					t.Errorf("no problem starting with %q in:\n  %s", w, strings.Join(ve.Problems, "\n  "))
				}
			}
			if len(ve.Problems) != len(tc.want) && tc.name != "alias bomb" {
				t.Errorf("%d problems, want %d:\n  %s", len(ve.Problems), len(tc.want), strings.Join(ve.Problems, "\n  "))
			}
			if !strings.Contains(err.Error(), ve.Problems[0]) || !strings.HasPrefix(err.Error(), "campaign: campaigns.yaml: ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

// aliasBomb is a small file whose campaigns are aliases of one campaign
// with a long list: expanded, far more nodes than maxNodes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString(strings.Replace(valid, "  - id: a", "  - &c\n    id: a", 1))
	b.WriteString("    targeting: {os: [")
	for i := range 20_000 {
		fmt.Fprintf(&b, "o%d, ", i)
	}
	b.WriteString("x]}\n")
	b.WriteString(strings.Repeat("  - *c\n", 100))
	return b.String()
}

func TestParseCollectsEveryProblem(t *testing.T) {
	// Problems in three campaigns: all are reported, in campaign order.
	y := `campaigns:
  - id: ok
    adomain: [shop.com]
    product_group_id: 1
    status: active
    bid_cpm: 1
    creative: {template: light, sizes: ["300x250"]}
  - id: bad1
    adomain: [shop.com]
    product_group_id: 0
    status: active
    bid_cpm: 1
    creative: {template: light, sizes: ["300x250"]}
  - id: bad2
    adomain: [shop.com]
    product_group_id: 2
    status: active
    bid_cpm: 0
    creative: {template: light, sizes: ["300x250", "300y250"]}
`
	_, err := Parse([]byte(y), "f")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err %v", err)
	}
	want := []string{
		"campaigns[1].product_group_id: must be > 0, got 0 (line 10)",
		"campaigns[2].bid_cpm: must be > 0, got 0 (line 18)",
		`campaigns[2].creative.sizes[1]: "300y250" is not WxH (such as 300x250) (line 19)`,
	}
	if !reflect.DeepEqual(ve.Problems, want) {
		t.Fatalf("problems:\n  %s\nwant:\n  %s", strings.Join(ve.Problems, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestParseScalars checks scalars are read by the key's type, whatever
// YAML resolves them to: a quoted integer, a YAML 1.1 boolean spelling, a
// number as a string.
func TestParseScalars(t *testing.T) {
	y := strings.Replace(valid, "product_group_id: 1", `product_group_id: "0012"`, 1)
	y = strings.Replace(y, "    status: active", "    status: active\n    name: 2026\n    deals: [7]\n    deals_only: True", 1)
	s, err := Parse([]byte(y), "x")
	if err != nil {
		t.Fatal(err)
	}
	if c := s.All()[0]; c.ProductGroupID != 12 || c.Name != "2026" || !c.DealsOnly || c.Deals[0] != "7" {
		t.Fatalf("%+v", c)
	}
}

func TestParseDates(t *testing.T) {
	y := strings.Replace(valid, "    status:", "    time_zone: America/New_York\n    start: 2026-03-08\n    end: 2026-03-09T12:30:00+09:00\n    status:", 1)
	s, err := Parse([]byte(y), "x")
	if err != nil {
		t.Fatal(err)
	}
	c := s.All()[0]
	ny := mustLoc(t, "America/New_York")
	if !c.Start.Equal(time.Date(2026, 3, 8, 0, 0, 0, 0, ny)) || c.Start.Location().String() != "America/New_York" {
		t.Errorf("start %v", c.Start)
	}
	if !c.End.Equal(time.Date(2026, 3, 9, 3, 30, 0, 0, time.UTC)) {
		t.Errorf("end %v", c.End)
	}
	// A date end covers its whole day, across a DST change (23 hours long).
	y = strings.Replace(valid, "    status:", "    time_zone: America/New_York\n    end: 2026-03-08\n    status:", 1)
	s, err = Parse([]byte(y), "x")
	if err != nil {
		t.Fatal(err)
	}
	if e := s.All()[0].End; !e.Equal(time.Date(2026, 3, 9, 0, 0, 0, 0, ny)) {
		t.Errorf("date end %v", e)
	}
}

func TestParseMicros(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1_000_000, true}, {"1.25", 1_250_000, true}, {"0.000001", 1, true}, {"007.50", 7_500_000, true},
		{".5", 0, false}, {"-2.5", -2_500_000, true}, {"1.2500000", 0, false}, {"1.250000", 1_250_000, true},
		{"999999999999.999999", 999_999_999_999_999_999, true},
		{"1.0000001", 0, false}, {"1e3", 0, false}, {"", 0, false}, {"1.", 0, false}, {"abc", 0, false},
		{"1000000000000", 0, false}, {"--1", 0, false}, {"1,5", 0, false}, {".", 0, false},
		{"-0", 0, false}, {" 1", 0, false},
	}
	for _, c := range cases {
		v, msg := parseMicros(c.in)
		if (msg == "") != c.ok || c.ok && v != c.want {
			t.Errorf("parseMicros(%q) = %d, %q", c.in, v, msg)
		}
		if c.ok {
			if back, _ := parseMicros(money.Format(v)); back != v {
				t.Errorf("money.Format(%d) = %q does not parse back", v, money.Format(v))
			}
		}
	}
	if got := money.Format(-500_000); got != "-0.5" {
		t.Errorf("money.Format(-500000) = %q", got)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	s, err := LoadFile("testdata/campaigns.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(s.All())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse(data, "marshalled")
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if d := diffCampaigns(s2.All(), s.All()); d != "" {
		t.Fatalf("%s\n%s", d, data)
	}
	if _, err := Marshal([]*Campaign{nil}); err == nil {
		t.Fatal("Marshal(nil campaign): no error")
	}
}

func TestNewSet(t *testing.T) {
	two := func() []*Campaign {
		a, b := baseCampaign(), baseCampaign()
		b.ID = "d"
		return []*Campaign{a, b}
	}
	s, err := NewSet(two())
	if err != nil || s.Len() != 2 {
		t.Fatalf("%v %v", s, err)
	}
	bad := two()
	bad[1].BidCPMMicros = 0
	if _, err := NewSet(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "campaigns[1].bid_cpm") {
		t.Fatalf("NewSet(bad) = %v", err)
	}
}

func TestLoadFileErrors(t *testing.T) {
	if _, err := LoadFile(filepath.Join(t.TempDir(), "none.yaml")); err == nil || errors.Is(err, ErrInvalid) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(big); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("big file: %v", err)
	}
}

func TestCountryAlpha3(t *testing.T) {
	if n := len(countryPairs) / 5; n != 249 || len(countryPairs)%5 != 0 {
		t.Fatalf("%d countries", n)
	}
	seen := map[string]bool{}
	for i := 0; i < len(countryPairs); i += 5 {
		a2, a3 := countryPairs[i:i+2], countryPairs[i+2:i+5]
		if seen[a2] || seen[a3] {
			t.Errorf("%s/%s twice", a2, a3)
		}
		seen[a2], seen[a3] = true, true
	}
	for in, want := range map[string]string{"JP": "JPN", "jp": "JPN", "jpn": "JPN", "USA": "USA", "gb": "GBR", "DE": "DEU", "kr": "KOR"} {
		if got, ok := CountryAlpha3(in); !ok || got != want {
			t.Errorf("CountryAlpha3(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "J", "UK", "SU", "XX", "ZZZ", "JAPN", "日本"} {
		if got, ok := CountryAlpha3(in); ok {
			t.Errorf("CountryAlpha3(%q) = %q, want not found", in, got)
		}
	}
}

// TestCompile checks specs from a source other than a file get Parse's
// checks and messages, without line numbers.
func TestCompile(t *testing.T) {
	spec := func(group int64) Spec {
		return Spec{ID: "a", ADomain: []string{"Shop.com"}, ProductGroupID: &group, Status: "active", BidCPM: "1.5",
			Creative: &CreativeSpec{Template: "light", Sizes: []string{"300x250"}}}
	}
	_, err := Compile("rows", []Spec{spec(0)})
	var ve *ValidationError
	if !errors.As(err, &ve) || !reflect.DeepEqual(ve.Problems, []string{"campaigns[0].product_group_id: must be > 0, got 0"}) ||
		!strings.HasPrefix(err.Error(), "campaign: rows: ") {
		t.Fatalf("Compile: %v", err)
	}
	s, err := Compile("rows", []Spec{spec(3)})
	if err != nil || s.Len() != 1 || s.All()[0].ADomain[0] != "shop.com" || s.All()[0].BidCPMMicros != 1_500_000 {
		t.Fatalf("Compile: %v %v", s, err)
	}
}

// TestParseCurrencyAnyCase: a campaign's currency is read in any case and
// kept in upper case (the form tokens and responses carry).
func TestParseCurrencyAnyCase(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(valid, "    status:", "    currency: eur\n    status:", 1)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if c := s.All()[0]; c.Currency != "EUR" {
		t.Errorf("currency %q, want EUR", c.Currency)
	}
}

// TestBidShading: bid_shading defaults to auto, off turns it off, and a
// campaign's spec carries the key only when it is off (a row with the key
// is refused by a bidder that predates it).
func TestBidShading(t *testing.T) {
	const base = "campaigns:\n  - id: a\n    adomain: [shop.com]\n    product_group_id: 1\n    status: active\n    bid_cpm: 1.5\n    creative: {template: medium, sizes: [\"300x250\"]}\n"
	for _, tc := range []struct{ extra, want string }{{"", ShadingAuto}, {"    bid_shading: off\n", ShadingOff}, {"    bid_shading: auto\n", ShadingAuto}} {
		set, err := Parse([]byte(base+tc.extra), "campaigns.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.extra, err)
		}
		cs := set.All()
		if cs[0].BidShading != tc.want {
			t.Errorf("%q: BidShading %q, want %q", tc.extra, cs[0].BidShading, tc.want)
		}
		specs, err := Specs(cs)
		if err != nil {
			t.Fatal(err)
		}
		if got := specs[0].BidShading; (got == ShadingOff) != (tc.want == ShadingOff) || got == ShadingAuto {
			t.Errorf("%q: spec bid_shading %q", tc.extra, got)
		}
	}
}
