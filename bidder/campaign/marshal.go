package campaign

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/rtb/money"
)

// The file format, for Marshal. Parse reads the same keys from yaml.Node
// itself, to name every problem by its key path.
type fileYAML struct {
	Campaigns []campaignYAML `yaml:"campaigns"`
}

type campaignYAML struct {
	ID             string            `yaml:"id"`
	Name           string            `yaml:"name,omitempty"`
	Advertiser     string            `yaml:"advertiser,omitempty"`
	ADomain        []string          `yaml:"adomain,flow"`
	Cat            []string          `yaml:"cat,flow,omitempty"`
	ProductGroupID int64             `yaml:"product_group_id"`
	Status         string            `yaml:"status"`
	Start          string            `yaml:"start,omitempty"`
	End            string            `yaml:"end,omitempty"`
	TimeZone       string            `yaml:"time_zone,omitempty"`
	Currency       string            `yaml:"currency,omitempty"`
	BidCPM         rawNumber         `yaml:"bid_cpm"`
	Strategy       *strategyYAML     `yaml:"strategy,omitempty"`
	DailyBudget    rawNumber         `yaml:"daily_budget,omitempty"`
	TotalBudget    rawNumber         `yaml:"total_budget,omitempty"`
	FrequencyCap   *frequencyCapYAML `yaml:"frequency_cap,omitempty"`
	Pacing         string            `yaml:"pacing,omitempty"`
	Targeting      *targetingYAML    `yaml:"targeting,omitempty"`
	Creative       creativeYAML      `yaml:"creative"`
	Deals          []string          `yaml:"deals,flow,omitempty"`
	DealsOnly      bool              `yaml:"deals_only,omitempty"`
	Seat           string            `yaml:"seat,omitempty"`
	Bundle         string            `yaml:"bundle,omitempty"`
}

type strategyYAML struct {
	Type       string             `yaml:"type"`
	DeviceType map[string]float64 `yaml:"device_type,omitempty"`
	Country    map[string]float64 `yaml:"country,omitempty"`
	Hour       map[string]float64 `yaml:"hour,omitempty"`
}

type frequencyCapYAML struct {
	Impressions int    `yaml:"impressions"`
	Period      string `yaml:"period,omitempty"`
}

type targetingYAML struct {
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
	Dayparts        []daypartYAML `yaml:"dayparts,omitempty"`
}

type daypartYAML struct {
	Days      []string `yaml:"days,flow,omitempty"`
	StartHour int      `yaml:"start_hour"`
	EndHour   int      `yaml:"end_hour"`
}

type creativeYAML struct {
	Template  string   `yaml:"template"`
	Sizes     []string `yaml:"sizes,flow,omitempty"`
	Native    bool     `yaml:"native,omitempty"`
	VAST      string   `yaml:"vast,omitempty"`
	ClickBase string   `yaml:"click_base,omitempty"`
	Attr      []int    `yaml:"attr,flow,omitempty"`
}

// rawNumber is a decimal written as a plain YAML number (1.25, not "1.25").
type rawNumber string

func (r rawNumber) IsZero() bool { return r == "" }

func (r rawNumber) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: string(r)}, nil
}

// Marshal writes campaigns in the file format Parse reads (for `rtbd gen`);
// Parse(Marshal(cs)) gives back equal campaigns when cs are valid. Marshal
// does not validate beyond rejecting nil campaigns: Parse or NewSet does.
func Marshal(cs []*Campaign) ([]byte, error) {
	f := fileYAML{Campaigns: make([]campaignYAML, 0, len(cs))}
	for i, c := range cs {
		if c == nil {
			return nil, fmt.Errorf("campaign: marshal: campaigns[%d] is nil", i)
		}
		f.Campaigns = append(f.Campaigns, toYAML(c))
	}
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

func toYAML(c *Campaign) campaignYAML {
	loc := c.location()
	y := campaignYAML{
		ID:             c.ID,
		Name:           c.Name,
		Advertiser:     c.Advertiser,
		ADomain:        c.ADomain,
		Cat:            c.Cat,
		ProductGroupID: c.ProductGroupID,
		Status:         c.Status,
		Currency:       c.Currency,
		BidCPM:         rawNumber(money.Format(c.BidCPMMicros)),
		Pacing:         c.Pacing,
		Deals:          c.Deals,
		DealsOnly:      c.DealsOnly,
		Seat:           c.Seat,
		Bundle:         c.Bundle,
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
		y.DailyBudget = rawNumber(money.Format(c.DailyBudgetMicros))
	}
	if c.TotalBudgetMicros != 0 {
		y.TotalBudget = rawNumber(money.Format(c.TotalBudgetMicros))
	}
	if s := c.Strategy; s.Type != "" && s.Type != StrategyFixed || len(s.DeviceType)+len(s.Country)+len(s.Hour) > 0 {
		sy := &strategyYAML{Type: s.Type}
		for _, k := range sortedKeys(s.DeviceType) {
			if sy.DeviceType == nil {
				sy.DeviceType = map[string]float64{}
			}
			sy.DeviceType[deviceTypeName(k)] = s.DeviceType[k]
		}
		for _, k := range sortedKeys(s.Country) {
			if sy.Country == nil {
				sy.Country = map[string]float64{}
			}
			sy.Country[k] = s.Country[k]
		}
		for _, k := range sortedKeys(s.Hour) {
			if sy.Hour == nil {
				sy.Hour = map[string]float64{}
			}
			sy.Hour[strconv.Itoa(k)] = s.Hour[k]
		}
		y.Strategy = sy
	}
	if fc := c.FrequencyCap; fc.Impressions != 0 || fc.Period != 0 {
		y.FrequencyCap = &frequencyCapYAML{Impressions: fc.Impressions}
		if fc.Period != 0 {
			y.FrequencyCap.Period = formatDuration(fc.Period)
		}
	}
	t := c.Targeting
	ty := targetingYAML{
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
		dy := daypartYAML{StartHour: d.StartHour, EndHour: d.EndHour}
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
	y.Creative = creativeYAML{Template: cr.Template, Native: cr.Native, VAST: cr.VAST, ClickBase: cr.ClickBase}
	for _, s := range cr.Sizes {
		y.Creative.Sizes = append(y.Creative.Sizes, strconv.FormatInt(s[0], 10)+"x"+strconv.FormatInt(s[1], 10))
	}
	for _, a := range cr.Attr {
		y.Creative.Attr = append(y.Creative.Attr, int(a))
	}
	return y
}

func isZeroTargeting(t *targetingYAML) bool {
	return len(t.SiteDomains)+len(t.SiteDomainsDeny)+len(t.AppBundles)+len(t.AppBundlesDeny)+
		len(t.PublisherIDs)+len(t.Countries)+len(t.Regions)+len(t.DeviceTypes)+len(t.OS)+
		len(t.UserSegments)+len(t.Dayparts) == 0
}
