package campaign

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/rtb/money"
)

// Spec is one campaign as written: an item of a campaigns file's list (its
// yaml tags are the file's keys) or a row of any other campaign source.
// Values are checked only by Compile (and Parse): strings are trimmed,
// domains, countries, bundles and OS names normalised, and the zero value
// of an optional key is its default. Pointer fields tell a missing key from
// a zero value.
type Spec struct {
	ID             string            `yaml:"id"`
	Name           string            `yaml:"name,omitempty"`
	Advertiser     string            `yaml:"advertiser,omitempty"`
	ADomain        []string          `yaml:"adomain,flow"`
	Cat            []string          `yaml:"cat,flow,omitempty"`
	ProductGroupID *int64            `yaml:"product_group_id"`
	Status         string            `yaml:"status"`
	Start          string            `yaml:"start,omitempty"` // RFC 3339 time or YYYY-MM-DD in TimeZone
	End            string            `yaml:"end,omitempty"`   // the same; a date includes its whole day
	TimeZone       string            `yaml:"time_zone,omitempty"`
	Currency       string            `yaml:"currency,omitempty"`
	BidCPM         Decimal           `yaml:"bid_cpm"`
	Strategy       *StrategySpec     `yaml:"strategy,omitempty"`
	DailyBudget    Decimal           `yaml:"daily_budget,omitempty"`
	TotalBudget    Decimal           `yaml:"total_budget,omitempty"`
	FrequencyCap   *FrequencyCapSpec `yaml:"frequency_cap,omitempty"`
	Pacing         string            `yaml:"pacing,omitempty"`
	BidShading     string            `yaml:"bid_shading,omitempty"`
	Targeting      *TargetingSpec    `yaml:"targeting,omitempty"`
	Creative       *CreativeSpec     `yaml:"creative"`
	Deals          []string          `yaml:"deals,flow,omitempty"`
	DealsOnly      bool              `yaml:"deals_only,omitempty"`
	Seat           string            `yaml:"seat,omitempty"`
	Bundle         string            `yaml:"bundle,omitempty"`
	DSA            *DSASpec          `yaml:"dsa,omitempty"`
	Supply         *SupplySpec       `yaml:"supply,omitempty"`
}

// DSASpec is Spec.DSA: the EU Digital Services Act transparency of the
// campaign's ads, written in bid.ext.dsa and, where the publisher cannot
// show it, in the creative's advertiser label. Each at most 100 bytes.
type DSASpec struct {
	Behalf string `yaml:"behalf"`
	Paid   string `yaml:"paid"`
}

// SupplySpec is Spec.Supply: which supply paths the campaign bids through
// (see package bidder/supply).
type SupplySpec struct {
	CompleteOnly   bool `yaml:"complete_only,omitempty"`
	MaxHops        int  `yaml:"max_hops,omitempty"`
	AuthorizedOnly bool `yaml:"authorized_only,omitempty"`
}

// StrategySpec is Spec.Strategy; device types by name or adcom1 number,
// countries by ISO 3166-1 alpha-2 or alpha-3 code, hours "0" to "23".
type StrategySpec struct {
	Type       string             `yaml:"type"`
	DeviceType map[string]float64 `yaml:"device_type,omitempty"`
	Country    map[string]float64 `yaml:"country,omitempty"`
	Hour       map[string]float64 `yaml:"hour,omitempty"`
}

// FrequencyCapSpec is Spec.FrequencyCap; Period such as 24h, 30m or 7d.
type FrequencyCapSpec struct {
	Impressions int    `yaml:"impressions"`
	Period      string `yaml:"period,omitempty"`
}

// TargetingSpec is Spec.Targeting.
type TargetingSpec struct {
	SiteDomains     []string      `yaml:"site_domains,flow,omitempty"`
	SiteDomainsDeny []string      `yaml:"site_domains_deny,flow,omitempty"`
	AppBundles      []string      `yaml:"app_bundles,flow,omitempty"`
	AppBundlesDeny  []string      `yaml:"app_bundles_deny,flow,omitempty"`
	PublisherIDs    []string      `yaml:"publisher_ids,flow,omitempty"`
	Countries       []string      `yaml:"countries,flow,omitempty"`
	Regions         []string      `yaml:"regions,flow,omitempty"`
	DeviceTypes     []string      `yaml:"device_types,flow,omitempty"`
	OS              []string      `yaml:"os,flow,omitempty"`
	UserSegments    []string      `yaml:"user_segments,flow,omitempty"`
	Dayparts        []DaypartSpec `yaml:"dayparts,omitempty"`
}

// DaypartSpec is an item of TargetingSpec.Dayparts; days such as mon or
// monday.
type DaypartSpec struct {
	Days      []string `yaml:"days,flow,omitempty"`
	StartHour *int     `yaml:"start_hour"`
	EndHour   *int     `yaml:"end_hour"`
}

// CreativeSpec is Spec.Creative; sizes such as 300x250.
type CreativeSpec struct {
	Template  string   `yaml:"template"`
	Sizes     []string `yaml:"sizes,flow,omitempty"`
	Native    bool     `yaml:"native,omitempty"`
	VAST      string   `yaml:"vast,omitempty"`
	ClickBase string   `yaml:"click_base,omitempty"`
	Attr      []int    `yaml:"attr,flow,omitempty"`
	// Video describes the VAST template's ad (needs VAST).
	Video *VideoSpec `yaml:"video,omitempty"`
}

// Decimal is an amount of currency units as written, such as "1.25" (at
// most 6 decimals); YAML has it as a plain number (1.25, not "1.25").
type Decimal string

// IsZero reports whether d is empty (for omitempty).
func (d Decimal) IsZero() bool { return d == "" }

// MarshalYAML writes d as a plain scalar.
func (d Decimal) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: string(d)}, nil
}

// Marshal writes campaigns in the file format Parse reads (for `rtbd gen`);
// Parse(Marshal(cs)) gives back equal campaigns when cs are valid. Marshal
// does not validate beyond rejecting nil campaigns: Parse or NewSet does.
func Marshal(cs []*Campaign) ([]byte, error) {
	specs, err := Specs(cs)
	if err != nil {
		return nil, fmt.Errorf("campaign: marshal: %w", err)
	}
	f := struct {
		Campaigns []Spec `yaml:"campaigns"`
	}{specs}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&f); err != nil {
		return nil, fmt.Errorf("campaign: marshal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("campaign: marshal: %w", err)
	}
	return b.Bytes(), nil
}

// Specs returns the Spec of each campaign: Compile(name, Specs(cs)) gives
// back equal campaigns when cs are valid. A nil campaign is an error.
func Specs(cs []*Campaign) ([]Spec, error) {
	specs := make([]Spec, len(cs))
	for i, c := range cs {
		if c == nil {
			return nil, fmt.Errorf("campaign: campaigns[%d] is nil", i)
		}
		specs[i] = specOf(c)
	}
	return specs, nil
}

func specOf(c *Campaign) Spec {
	loc := c.location()
	y := Spec{
		ID:             c.ID,
		Name:           c.Name,
		Advertiser:     c.Advertiser,
		ADomain:        c.ADomain,
		Cat:            c.Cat,
		ProductGroupID: &c.ProductGroupID,
		Status:         c.Status,
		Currency:       c.Currency,
		BidCPM:         Decimal(money.Format(c.BidCPMMicros)),
		Pacing:         c.Pacing,
		Deals:          c.Deals,
		DealsOnly:      c.DealsOnly,
		Seat:           c.Seat,
		Bundle:         c.Bundle,
	}
	if c.BidShading == ShadingOff {
		// Written only when not the default: a row with the key is refused
		// by a bidder that predates it.
		y.BidShading = ShadingOff
	}
	if loc != time.UTC {
		y.TimeZone = loc.String()
	}
	if !c.Start.IsZero() {
		y.Start = c.Start.In(loc).Format(time.RFC3339Nano)
	}
	if !c.End.IsZero() {
		y.End = c.End.In(loc).Format(time.RFC3339Nano)
	}
	if c.DailyBudgetMicros != 0 {
		y.DailyBudget = Decimal(money.Format(c.DailyBudgetMicros))
	}
	if c.TotalBudgetMicros != 0 {
		y.TotalBudget = Decimal(money.Format(c.TotalBudgetMicros))
	}
	if s := c.Strategy; s.Type != "" && s.Type != StrategyFixed || len(s.DeviceType)+len(s.Country)+len(s.Hour) > 0 {
		sy := &StrategySpec{Type: s.Type}
		for _, k := range slices.Sorted(maps.Keys(s.DeviceType)) {
			if sy.DeviceType == nil {
				sy.DeviceType = map[string]float64{}
			}
			sy.DeviceType[deviceTypeName(k)] = s.DeviceType[k]
		}
		for _, k := range slices.Sorted(maps.Keys(s.Country)) {
			if sy.Country == nil {
				sy.Country = map[string]float64{}
			}
			sy.Country[k] = s.Country[k]
		}
		for _, k := range slices.Sorted(maps.Keys(s.Hour)) {
			if sy.Hour == nil {
				sy.Hour = map[string]float64{}
			}
			sy.Hour[strconv.Itoa(k)] = s.Hour[k]
		}
		y.Strategy = sy
	}
	if fc := c.FrequencyCap; fc.Impressions != 0 || fc.Period != 0 {
		y.FrequencyCap = &FrequencyCapSpec{Impressions: fc.Impressions}
		if fc.Period != 0 {
			y.FrequencyCap.Period = formatDuration(fc.Period)
		}
	}
	t := c.Targeting
	ty := TargetingSpec{
		SiteDomains:     t.SiteDomains,
		SiteDomainsDeny: t.SiteDomainsDeny,
		AppBundles:      t.AppBundles,
		AppBundlesDeny:  t.AppBundlesDeny,
		PublisherIDs:    t.PublisherIDs,
		Countries:       t.Countries,
		Regions:         t.Regions,
		OS:              t.OS,
		UserSegments:    t.UserSegments,
	}
	for _, d := range t.DeviceTypes {
		ty.DeviceTypes = append(ty.DeviceTypes, deviceTypeName(d))
	}
	for _, d := range t.Dayparts {
		dy := DaypartSpec{StartHour: &d.StartHour, EndHour: &d.EndHour}
		for _, wd := range d.Days {
			if wd >= 0 && wd < 7 {
				dy.Days = append(dy.Days, dayNames[wd])
			} else {
				dy.Days = append(dy.Days, strconv.Itoa(int(wd)))
			}
		}
		ty.Dayparts = append(ty.Dayparts, dy)
	}
	if !isZeroTargeting(&ty) {
		y.Targeting = &ty
	}
	cr := c.Creative
	y.Creative = &CreativeSpec{Template: cr.Template, Native: cr.Native, VAST: cr.VAST, ClickBase: cr.ClickBase}
	for _, s := range cr.Sizes {
		y.Creative.Sizes = append(y.Creative.Sizes, strconv.FormatInt(s[0], 10)+"x"+strconv.FormatInt(s[1], 10))
	}
	for _, a := range cr.Attr {
		y.Creative.Attr = append(y.Creative.Attr, int(a))
	}
	y.Creative.Video = videoSpecOf(&cr.Video)
	if c.DSA.Set() {
		y.DSA = &DSASpec{Behalf: c.DSA.Behalf, Paid: c.DSA.Paid}
	}
	if c.Supply.Active() {
		y.Supply = &SupplySpec{CompleteOnly: c.Supply.CompleteOnly, MaxHops: c.Supply.MaxHops, AuthorizedOnly: c.Supply.AuthorizedOnly}
	}
	return y
}

func isZeroTargeting(t *TargetingSpec) bool {
	return len(t.SiteDomains)+len(t.SiteDomainsDeny)+len(t.AppBundles)+len(t.AppBundlesDeny)+
		len(t.PublisherIDs)+len(t.Countries)+len(t.Regions)+len(t.DeviceTypes)+len(t.OS)+
		len(t.UserSegments)+len(t.Dayparts) == 0
}
