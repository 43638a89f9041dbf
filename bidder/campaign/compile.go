package campaign

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"

	"github.com/rtbd/rtbd/bidder/dsa"
	"github.com/rtbd/rtbd/bidder/supply"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/rtb/money"
)

// Compile validates campaign specs from any source (Parse's file, a table's
// rows) and builds their Set, with Parse's rules and messages: any problem
// gives a *ValidationError listing all of them, each with its key path
// (campaigns[i] is specs[i]). name is used in errors only. The Set does not
// reference specs.
func Compile(name string, specs []Spec) (*Set, error) {
	k := newCompiler(configs.NewFileProblems(nil, maxProblems))
	cs := make([]*Campaign, 0, len(specs))
	for i := range specs {
		cs = append(cs, k.campaign(i, &specs[i]))
	}
	return k.set(name, cs)
}

// NewSet builds a Set from campaigns built in code (tests, `rtbd gen`), with
// the same validation as Parse: it is Compile of their Specs. The Set holds
// copies: the campaigns passed in are not modified nor kept.
func NewSet(cs []*Campaign) (*Set, error) {
	specs, err := Specs(cs)
	if err != nil {
		return nil, err
	}
	return Compile("NewSet", specs)
}

// compiler validates specs into campaigns, for Parse and Compile alike.
type compiler struct {
	p     *configs.Problems
	locs  map[string]*time.Location // one *Location per zone name, so Match's zone cache hits
	first map[string]int            // campaign index by id
}

func newCompiler(p *configs.Problems) *compiler {
	return &compiler{p: p, locs: map[string]*time.Location{}, first: map[string]int{}}
}

// set returns the Set of cs, or the problems found.
func (k *compiler) set(name string, cs []*Campaign) (*Set, error) {
	if probs := k.p.List(); len(probs) > 0 {
		return nil, &ValidationError{Name: name, Problems: probs}
	}
	return newSet(name, cs), nil
}

// campaign validates s, campaigns[i], and returns its campaign.
func (k *compiler) campaign(i int, s *Spec) *Campaign {
	p := k.p.Sub("campaigns[" + strconv.Itoa(i) + "]")
	c := &Campaign{ID: strings.TrimSpace(s.ID), Name: strings.TrimSpace(s.Name),
		Advertiser: strings.TrimSpace(s.Advertiser), Seat: strings.TrimSpace(s.Seat), Bundle: strings.TrimSpace(s.Bundle)}
	if c.ID == "" {
		p.Addf("id", "missing")
	} else if msg := checkID(c.ID); msg != "" {
		p.Addf("id", "%q %s", c.ID, msg)
	} else if j, dup := k.first[c.ID]; dup {
		p.Addf("id", "duplicate id %q (also campaigns[%d])", c.ID, j)
	} else {
		k.first[c.ID] = i
	}
	c.ADomain = strs(p, "adomain", s.ADomain, normDomain)
	if len(c.ADomain) == 0 {
		p.Addf("adomain", "missing: at least one advertiser domain (bid.adomain)")
	}
	c.Cat = strs(p, "cat", s.Cat, iabCat)
	switch g := s.ProductGroupID; {
	case g == nil:
		p.Addf("product_group_id", "missing: the catalog product group of the creative's products")
	case *g <= 0:
		p.Addf("product_group_id", "must be > 0, got %d", *g)
	default:
		c.ProductGroupID = *g
	}
	c.Status = oneOf(p, "status", s.Status, "", StatusActive, StatusPaused)
	c.TimeZone = time.UTC
	if tz := strings.TrimSpace(s.TimeZone); tz != "" {
		if loc, err := k.loadLocation(tz); err != nil {
			p.Addf("time_zone", "unknown time zone %q (want an IANA name such as Asia/Tokyo)", tz)
		} else {
			c.TimeZone = loc
		}
	}
	var startOK, endOK bool
	c.Start, startOK = date(p, "start", s.Start, c.TimeZone, false)
	c.End, endOK = date(p, "end", s.End, c.TimeZone, true)
	if startOK && endOK && !c.Start.IsZero() && !c.End.IsZero() && !c.End.After(c.Start) {
		p.Addf("end", "must be after start (%s), got %s", c.Start.Format(time.RFC3339), c.End.Format(time.RFC3339))
	}
	c.Currency = strings.TrimSpace(s.Currency)
	if c.Currency == "" {
		c.Currency = "USD"
	} else if code, ok := money.Code(c.Currency); ok {
		c.Currency = code // any case in the file, upper case from here on
	} else {
		p.Addf("currency", "%q is not an ISO 4217 code such as USD", c.Currency)
	}
	if v, ok := micros(p, "bid_cpm", s.BidCPM); !ok {
		p.Addf("bid_cpm", "missing: the CPM bid in currency units, e.g. 1.50")
	} else if v <= 0 {
		p.Addf("bid_cpm", "must be > 0, got %s", money.Format(v))
	} else {
		c.BidCPMMicros = v
	}
	c.Strategy = strategy(p.Sub("strategy"), s.Strategy)
	c.DailyBudgetMicros = budget(p, "daily_budget", s.DailyBudget)
	c.TotalBudgetMicros = budget(p, "total_budget", s.TotalBudget)
	if c.DailyBudgetMicros > 0 && c.TotalBudgetMicros > 0 && c.DailyBudgetMicros > c.TotalBudgetMicros {
		p.Addf("daily_budget", "must be <= total_budget (%s), got %s",
			money.Format(c.TotalBudgetMicros), money.Format(c.DailyBudgetMicros))
	}
	if fc := s.FrequencyCap; fc != nil {
		c.FrequencyCap = frequencyCap(p.Sub("frequency_cap"), fc)
	}
	c.Pacing = oneOf(p, "pacing", s.Pacing, PacingEven, PacingEven, PacingASAP)
	c.BidShading = oneOf(p, "bid_shading", s.BidShading, ShadingAuto, ShadingAuto, ShadingOff)
	if s.Targeting != nil {
		c.Targeting = targeting(p.Sub("targeting"), s.Targeting)
	}
	if s.Creative == nil {
		p.Addf("creative", "missing: template and sizes, native or vast")
	} else {
		c.Creative = creative(p.Sub("creative"), s.Creative)
	}
	c.Deals = strs(p, "deals", s.Deals, nil)
	if c.DealsOnly = s.DealsOnly; c.DealsOnly && len(c.Deals) == 0 {
		p.Addf("deals_only", "is true but deals is empty")
	}
	if d := s.DSA; d != nil {
		c.DSA = dsaSetting(p.Sub("dsa"), d)
	}
	if sp := s.Supply; sp != nil {
		c.Supply = supply.Policy{CompleteOnly: sp.CompleteOnly, MaxHops: sp.MaxHops, AuthorizedOnly: sp.AuthorizedOnly}
		if sp.MaxHops < 0 {
			p.Addf("supply.max_hops", "must be >= 0 (0: any number of nodes), got %d", sp.MaxHops)
		}
	}
	return c
}

// dsaSetting validates a campaign's dsa: behalf and paid both given, each
// at most dsa.MaxLen bytes (as Prebid Server counts them).
func dsaSetting(p *configs.Problems, d *DSASpec) dsa.Setting {
	s := dsa.Setting{Behalf: strings.TrimSpace(d.Behalf), Paid: strings.TrimSpace(d.Paid)}
	for _, f := range []struct{ key, v string }{{"behalf", s.Behalf}, {"paid", s.Paid}} {
		switch {
		case f.v == "":
			p.Addf(f.key, "missing: who the ad is shown on behalf of (behalf) and who paid for it (paid), as bid.ext.dsa carries them")
		case len(f.v) > dsa.MaxLen:
			p.Addf(f.key, "must be at most %d bytes (Prebid Server drops a longer one), got %d", dsa.MaxLen, len(f.v))
		}
	}
	return s
}

// list validates a list: items trimmed, not empty, parse gives each one's
// value (or its problem), and no value is listed twice (name says it).
func list[T comparable](p *configs.Problems, key string, items []string, parse func(string) (T, string), name func(T) string) []T {
	if len(items) == 0 {
		return nil
	}
	out := make([]T, 0, len(items))
	seen := make(map[T]bool, len(items))
	for i, s := range items {
		var v T
		msg := "must not be empty"
		if s = strings.TrimSpace(s); s != "" {
			v, msg = parse(s)
		}
		switch ik := key + "[" + strconv.Itoa(i) + "]"; {
		case msg != "":
			p.Addf(ik, "%s", msg)
		case seen[v]:
			p.Addf(ik, "%s is listed twice", name(v))
		default:
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// strs is list for strings, norm returning the normalised string.
func strs(p *configs.Problems, key string, items []string, norm func(string) (string, string)) []string {
	if norm == nil {
		norm = func(s string) (string, string) { return s, "" }
	}
	return list(p, key, items, norm, strconv.Quote)
}

// oneOf returns got (trimmed) if it is one of allowed, def if it is empty
// and def is not (else "missing"), and "" after the problem otherwise.
func oneOf(p *configs.Problems, key, got, def string, allowed ...string) string {
	switch got = strings.TrimSpace(got); {
	case got == "" && def != "":
		return def
	case got == "":
		p.Addf(key, "missing: %s or %s", strings.Join(allowed[:len(allowed)-1], ", "), allowed[len(allowed)-1])
	case slices.Contains(allowed, got):
		return got
	default:
		p.Addf(key, "%q is not one of %s", got, strings.Join(allowed, ", "))
	}
	return ""
}

// micros reads a decimal amount of currency units as micros, exactly;
// false if d is empty or bad (a problem).
func micros(p *configs.Problems, key string, d Decimal) (int64, bool) {
	s := string(d)
	if s == "" {
		return 0, false
	}
	v, msg := parseMicros(s)
	if msg != "" {
		p.Addf(key, "%q %s", string(d), msg)
		return 0, false
	}
	return v, true
}

func budget(p *configs.Problems, key string, d Decimal) int64 {
	v, _ := micros(p, key, d)
	if v < 0 {
		p.Addf(key, "must be >= 0 (0 = unlimited), got %s", money.Format(v))
		return 0
	}
	return v
}

// loadLocation is time.LoadLocation without its acceptance of "" and
// "Local" (the bidder's host zone is never what a campaign means).
func (k *compiler) loadLocation(name string) (*time.Location, error) {
	if l, ok := k.locs[name]; ok {
		return l, nil
	}
	if name == "Local" || strings.ContainsAny(name, " \\") {
		return nil, errors.New("campaign: bad time zone")
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	k.locs[name] = l
	return l, nil
}

// date reads an RFC 3339 time or a YYYY-MM-DD date in loc; for an end date,
// the next midnight (the whole day is in the flight). false: a bad value.
func date(p *configs.Problems, key, s string, loc *time.Location, end bool) (time.Time, bool) {
	if s = strings.TrimSpace(s); s == "" {
		return time.Time{}, true
	}
	if d, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		if end {
			d = d.AddDate(0, 0, 1)
		}
		return d, true
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		p.Addf(key, "%q is not an RFC 3339 time (2026-01-02T15:04:05+09:00) or a date (2026-01-02)", s)
		return time.Time{}, false
	}
	return t.In(loc), true
}

const maxMultiplier = 100

// multipliers validates a multiplier table: parse turns a key into the
// table's key (false: unknown, a problem), name says it in "given twice".
func multipliers[K comparable](p *configs.Problems, m map[string]float64, parse func(string) (K, bool), unknown string, name func(K) string) map[K]float64 {
	var out map[K]float64
	for _, key := range slices.Sorted(maps.Keys(m)) {
		t, ok := parse(key)
		if !ok {
			p.Addf(pathKey(key), unknown, key)
			continue
		}
		if f := m[key]; !(f > 0 && f <= maxMultiplier) {
			p.Addf(pathKey(key), "must be > 0 and <= %g, got %g", float64(maxMultiplier), f)
			continue
		}
		if out == nil {
			out = map[K]float64{}
		}
		if _, dup := out[t]; dup {
			p.Addf(pathKey(key), "%s given twice", name(t))
		}
		out[t] = m[key]
	}
	return out
}

func strategy(p *configs.Problems, ss *StrategySpec) Strategy {
	s := Strategy{Type: StrategyFixed}
	if ss == nil {
		return s
	}
	s.Type = oneOf(p, "type", ss.Type, StrategyFixed, StrategyFixed, StrategyMultiplier)
	s.DeviceType = multipliers(p.Sub("device_type"), ss.DeviceType, parseDeviceType,
		"unknown device type %q (want "+deviceTypeList()+")",
		func(t adcom1.DeviceType) string { return "device type " + deviceTypeName(t) })
	s.Country = multipliers(p.Sub("country"), ss.Country, CountryAlpha3,
		"unknown country %q (want ISO 3166-1 alpha-2 or alpha-3)", func(c string) string { return "country " + c })
	s.Hour = multipliers(p.Sub("hour"), ss.Hour, func(key string) (int, bool) {
		h, err := strconv.Atoi(key)
		return h, err == nil && h >= 0 && h <= 23
	}, "hour %q is not 0-23", func(h int) string { return "hour " + strconv.Itoa(h) })
	if s.Type == StrategyFixed && (len(s.DeviceType)+len(s.Country)+len(s.Hour)) > 0 {
		p.Addf("type", "multipliers are given but type is fixed (write type: multiplier)")
	}
	return s
}

func frequencyCap(p *configs.Problems, f *FrequencyCapSpec) FrequencyCap {
	var fc FrequencyCap
	if f.Impressions < 0 || f.Impressions > 1_000_000 {
		p.Addf("impressions", "must be 0-1000000 (0 = no cap), got %d", f.Impressions)
	} else {
		fc.Impressions = f.Impressions
	}
	if s := strings.TrimSpace(f.Period); s != "" {
		if d, err := parseDuration(s); err != nil || d <= 0 {
			p.Addf("period", "%q is not a positive duration such as 24h, 30m or 7d", s)
		} else {
			fc.Period = d
		}
	}
	if fc.Impressions > 0 && fc.Period == 0 {
		p.Addf("period", "missing: the window of the cap, such as 24h")
	}
	return fc
}

func targeting(p *configs.Problems, ts *TargetingSpec) Targeting {
	lower := func(s string) (string, string) { return strings.ToLower(s), "" }
	t := Targeting{
		SiteDomains:     strs(p, "site_domains", ts.SiteDomains, normDomain),
		SiteDomainsDeny: strs(p, "site_domains_deny", ts.SiteDomainsDeny, normDomain),
		AppBundles:      strs(p, "app_bundles", ts.AppBundles, lower),
		AppBundlesDeny:  strs(p, "app_bundles_deny", ts.AppBundlesDeny, lower),
		PublisherIDs:    strs(p, "publisher_ids", ts.PublisherIDs, nil),
		Countries: strs(p, "countries", ts.Countries, func(s string) (string, string) {
			if a3, ok := CountryAlpha3(s); ok {
				return a3, ""
			}
			return "", "unknown country " + strconv.Quote(s) + " (want ISO 3166-1 alpha-2 or alpha-3)"
		}),
		Regions:      strs(p, "regions", ts.Regions, func(s string) (string, string) { return strings.ToUpper(s), "" }),
		OS:           strs(p, "os", ts.OS, lower),
		UserSegments: strs(p, "user_segments", ts.UserSegments, nil),
	}
	t.DeviceTypes = list(p, "device_types", ts.DeviceTypes, func(s string) (adcom1.DeviceType, string) {
		if d, ok := parseDeviceType(s); ok {
			return d, ""
		}
		return 0, fmt.Sprintf("unknown device type %q (want %s)", s, deviceTypeList())
	}, func(d adcom1.DeviceType) string { return "device type " + deviceTypeName(d) })
	for i := range ts.Dayparts {
		if d, ok := daypart(p.Sub("dayparts["+strconv.Itoa(i)+"]"), &ts.Dayparts[i]); ok {
			t.Dayparts = append(t.Dayparts, d)
		}
	}
	return t
}

func daypart(p *configs.Problems, ds *DaypartSpec) (Daypart, bool) {
	var d Daypart
	before := len(p.List())
	d.Days = list(p, "days", ds.Days, parseDay, func(wd time.Weekday) string { return dayNames[wd] })
	switch sh := ds.StartHour; {
	case sh == nil:
		p.Addf("start_hour", "missing: 0-23")
	case *sh < 0 || *sh > 23:
		p.Addf("start_hour", "must be 0-23, got %d", *sh)
	default:
		d.StartHour = *sh
	}
	switch eh := ds.EndHour; {
	case eh == nil:
		p.Addf("end_hour", "missing: 1-24 (exclusive)")
	case *eh < 1 || *eh > 24:
		p.Addf("end_hour", "must be 1-24, got %d", *eh)
	case ds.StartHour != nil && *eh == *ds.StartHour:
		p.Addf("end_hour", "must differ from start_hour (%d)", *eh)
	default:
		d.EndHour = *eh
	}
	return d, len(p.List()) == before
}

func creative(p *configs.Problems, cs *CreativeSpec) Creative {
	c := Creative{Template: oneOf(p, "template", cs.Template, "", TemplateLight, TemplateMedium, TemplateHeavy),
		Native: cs.Native, ClickBase: strings.TrimSpace(cs.ClickBase)}
	c.Sizes = list(p, "sizes", cs.Sizes, parseSize, func(wh [2]int64) string {
		return strconv.Quote(strconv.FormatInt(wh[0], 10) + "x" + strconv.FormatInt(wh[1], 10))
	})
	if strings.TrimSpace(cs.VAST) != "" {
		c.VAST = cs.VAST
		c.VASTPlainHTTP = PlainHTTPInVAST(cs.VAST)
		if !strings.Contains(strings.ToUpper(cs.VAST), "<VAST") {
			p.Addf("vast", "is not a VAST document (no <VAST element)")
		}
	}
	if c.ClickBase != "" {
		u, err := url.Parse(c.ClickBase)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.Addf("click_base", "%q is not an absolute http(s) URL", c.ClickBase)
		}
	}
	for i, v := range cs.Attr {
		if v < 1 || v > 100 {
			p.Addf("attr["+strconv.Itoa(i)+"]", "must be a creative attribute 1-100 (AdCOM list), got %d", v)
			continue
		}
		c.Attr = append(c.Attr, adcom1.CreativeAttribute(v))
	}
	if cs.Video != nil {
		c.Video = video(p.Sub("video"), cs.Video, c.VAST != "")
	}
	if len(c.Sizes) == 0 && !c.Native && c.VAST == "" {
		p.Addf("", "serves nothing: give sizes, native: true or vast")
	}
	return c
}

// parseMicros parses an amount by money's grammar, negative amounts
// included (money.ParseSigned); msg says what is wrong.
func parseMicros(s string) (v int64, msg string) {
	v, err := money.ParseSigned(s)
	switch {
	case err == nil && v == 0 && strings.HasPrefix(s, "-"):
		return 0, "has a minus sign: write 0"
	case err == nil:
		return v, ""
	case errors.Is(err, money.ErrRange):
		return 0, "is too large"
	case errors.Is(err, money.ErrPrecision):
		return 0, "is finer than a micro (at most 6 decimals)"
	}
	return 0, "is not a decimal number such as 1.25"
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func checkID(id string) string {
	if len(id) > 64 {
		return "is longer than 64 characters"
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return "may hold only letters, digits and - _ . :"
		}
	}
	return ""
}

// normDomain lower-cases a domain, drops a leading "*." and a trailing dot,
// and checks it is a host name (else says what is wrong).
func normDomain(s string) (string, string) {
	q := strconv.Quote(s) + " "
	d := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(s, "*."), "."))
	if len(d) == 0 || len(d) > maxDomain {
		return "", q + "is not a domain name"
	}
	label := 0
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			label++
			if label > 63 {
				return "", q + "has a label longer than 63 characters"
			}
		case c == '.':
			if label == 0 {
				return "", q + "is not a domain name (empty label)"
			}
			label = 0
		default:
			return "", q + "is not a domain name (write example.com, without scheme, path or port)"
		}
	}
	if label == 0 {
		return "", q + "is not a domain name (empty label)"
	}
	return d, ""
}

const maxDomain = 253

// iabCat accepts IAB content taxonomy 1.0 categories: IAB<n> or IAB<n>-<m>.
func iabCat(s string) (string, string) {
	rest, _ := strings.CutPrefix(s, "IAB")
	a, b, sub := strings.Cut(rest, "-")
	if !strings.HasPrefix(s, "IAB") || a == "" || !allDigits(a) || len(a) > 3 || sub && (b == "" || !allDigits(b) || len(b) > 3) {
		return "", strconv.Quote(s) + " is not an IAB category such as IAB22 or IAB22-1"
	}
	return s, ""
}

// deviceTypeNames are the names of device types in the file (adcom1 numbers
// are accepted too).
var deviceTypeNames = []struct {
	name string
	t    adcom1.DeviceType
}{
	{"mobile", adcom1.DeviceMobile},
	{"pc", adcom1.DevicePC},
	{"ctv", adcom1.DeviceTV},
	{"phone", adcom1.DevicePhone},
	{"tablet", adcom1.DeviceTablet},
	{"connected_device", adcom1.DeviceConnected},
	{"set_top_box", adcom1.DeviceSetTopBox},
	{"ooh", adcom1.DeviceOOH},
}

func deviceTypeName(t adcom1.DeviceType) string {
	for _, d := range deviceTypeNames {
		if d.t == t {
			return d.name
		}
	}
	return strconv.Itoa(int(t))
}

func parseDeviceType(s string) (adcom1.DeviceType, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, d := range deviceTypeNames {
		if d.name == s {
			return d.t, true
		}
	}
	if v, err := strconv.Atoi(s); err == nil && v >= 1 && v <= 8 {
		return adcom1.DeviceType(v), true
	}
	return 0, false
}

func deviceTypeList() string {
	names := make([]string, len(deviceTypeNames))
	for i, d := range deviceTypeNames {
		names[i] = d.name
	}
	return strings.Join(names, ", ") + " or 1-8"
}

// parseDuration is time.ParseDuration plus whole days ("7d").
func parseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 || n > 3660 {
			return 0, errors.New("campaign: bad days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

func formatDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0 && d > 24*time.Hour:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

var dayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

func parseDay(s string) (time.Weekday, string) {
	for i, d := range dayNames {
		if l := strings.ToLower(s); l == d || l == strings.ToLower(time.Weekday(i).String()) {
			return time.Weekday(i), ""
		}
	}
	return 0, strconv.Quote(s) + " is not a day (mon, tue, wed, thu, fri, sat, sun)"
}

// parseSize parses "300x250" (or 300X250).
func parseSize(s string) ([2]int64, string) {
	a, b, _ := strings.Cut(strings.ToLower(s), "x")
	w, errW := strconv.ParseInt(a, 10, 64)
	h, errH := strconv.ParseInt(b, 10, 64)
	if errW != nil || errH != nil || !allDigits(a) || !allDigits(b) || w <= 0 || h <= 0 || w > 10000 || h > 10000 {
		return [2]int64{}, strconv.Quote(s) + " is not WxH (such as 300x250)"
	}
	return [2]int64{w, h}, ""
}
