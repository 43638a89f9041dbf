package campaign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prebid/openrtb/v20/adcom1"
	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/rtb/money"
)

// MaxFileSize is the largest campaigns file Parse and LoadFile accept, in bytes.
const MaxFileSize = 16 << 20

// maxAliasNodes bounds the YAML nodes Parse reaches through aliases.
const maxAliasNodes = 1_000_000

// ErrInvalid is wrapped by every *ValidationError: errors.Is(err, ErrInvalid)
// tells a bad campaigns file from an I/O error.
var ErrInvalid = errors.New("campaign: invalid campaigns file")

// ValidationError is the error of Parse and LoadFile for a bad file. Problems
// lists every problem found, each starting with the key path it is about
// (`campaigns[2].creative.sizes[1]: "300y250" is not WxH (line 40)`), in
// file order of the campaigns.
type ValidationError struct {
	Name     string // the name given to Parse (the file path for LoadFile)
	Problems []string
}

// Error implements error: all problems on one line, separated by "; ".
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("campaign: ")
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteString(": ")
	}
	if len(e.Problems) == 1 {
		b.WriteString("1 problem: ")
	} else {
		fmt.Fprintf(&b, "%d problems: ", len(e.Problems))
	}
	b.WriteString(strings.Join(e.Problems, "; "))
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// LoadFile reads and parses the campaigns file at path (at most MaxFileSize
// bytes). A bad file gives a *ValidationError; an unreadable one an error
// wrapping the *os.PathError.
func LoadFile(path string) (*Set, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("campaign: read %s: %w", path, err)
	}
	return data, nil
}

// Parse parses and validates a campaigns file (the YAML format of the
// package comment) and builds its Set. name is used in errors only. Any
// problem gives a *ValidationError listing all of them with their key paths;
// Parse never panics. The Set does not reference data.
func Parse(data []byte, name string) (*Set, error) {
	p := &parser{}
	cs := p.parse(data)
	if len(p.probs) > 0 {
		return nil, &ValidationError{Name: name, Problems: p.probs}
	}
	return newSet(name, cs), nil
}

// parser collects problems while converting YAML nodes to campaigns.
type parser struct {
	probs      []string
	aliasNodes int
	sizes      map[*yaml.Node]int
	locs       map[string]*time.Location // one *Location per zone name, so Match's zone cache hits
}

// errTooManyNodes aborts a parse that reaches more than maxAliasNodes nodes
// through aliases, and
// errTooManyProblems one that finds more than maxProblems problems.
var (
	errTooManyNodes    = errors.New("too many YAML nodes (aliases?); stopped")
	errTooManyProblems = errors.New("too many problems; stopped")
)

const maxProblems = 200

func (p *parser) parse(data []byte) (cs []*Campaign) {
	defer func() {
		if r := recover(); r != nil {
			if r == errTooManyNodes || r == errTooManyProblems { //nolint:errorlint // sentinel panic values
				p.probs = append(p.probs, fmt.Sprint(r))
				return
			}
			// yaml.v3 is not known to panic since v3.0.0, but a bad file must
			// never take the bidder down.
			p.problem("", nil, "yaml: cannot parse: %v", r)
		}
	}()
	if len(data) > MaxFileSize {
		p.problem("", nil, "file larger than %d bytes", MaxFileSize)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.problem("campaigns", nil, "missing: the file is empty (write `campaigns: []` for no campaigns)")
		} else {
			p.problem("", nil, "%v", err)
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		p.problem("", &extra, "more than one YAML document")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.problem("campaigns", nil, "missing")
		return nil
	}
	root := p.fields("", doc.Content[0], "campaigns")
	if root == nil {
		if isNull(doc.Content[0]) {
			p.problem("campaigns", nil, "missing: the file is empty (write `campaigns: []` for no campaigns)")
		}
		return nil
	}
	list, ok := root["campaigns"]
	if !ok || isNull(list) {
		p.problem("campaigns", list, "missing (write `campaigns: []` for no campaigns)")
		return nil
	}
	items := p.seq("campaigns", list)
	if items == nil {
		return nil
	}
	cs = make([]*Campaign, 0, len(items))
	firstIdx := map[string]int{}
	for i, n := range items {
		path := "campaigns[" + strconv.Itoa(i) + "]"
		c := p.campaign(path, n)
		if c == nil {
			continue
		}
		if c.ID != "" {
			if j, dup := firstIdx[c.ID]; dup {
				p.problem(path+".id", nil, "duplicate id %q (also campaigns[%d])", c.ID, j)
			} else {
				firstIdx[c.ID] = i
			}
		}
		cs = append(cs, c)
	}
	return cs
}

// problem adds "path: message (line N)".
func (p *parser) problem(path string, n *yaml.Node, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	if n != nil && n.Line > 0 {
		msg += " (line " + strconv.Itoa(n.Line) + ")"
	}
	p.probs = append(p.probs, msg)
	if len(p.probs) >= maxProblems {
		panic(errTooManyProblems)
	}
}

// resolve follows aliases. The nodes reached through aliases are counted
// against maxAliasNodes (the file's own nodes are bounded by MaxFileSize),
// so a small file of aliases to big lists cannot make Parse work for long.
func (p *parser) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			return nil
		}
		n = n.Alias
		p.aliasNodes += p.size(n)
		if p.aliasNodes > maxAliasNodes {
			panic(errTooManyNodes)
		}
	}
	return n
}

// size returns the number of nodes under n, aliases expanded (memoised).
func (p *parser) size(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	if v, ok := p.sizes[n]; ok {
		return v
	}
	if p.sizes == nil {
		p.sizes = map[*yaml.Node]int{}
	}
	p.sizes[n] = 1 // a cycle counts once
	v := 1
	if n.Kind == yaml.AliasNode {
		v += p.size(n.Alias)
	}
	for _, c := range n.Content {
		v += p.size(c)
		if v > maxAliasNodes {
			break
		}
	}
	p.sizes[n] = v
	return v
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields reads a mapping with the known keys; unknown and duplicate keys are
// problems. It returns nil if n is null or not a mapping (a problem).
func (p *parser) fields(path string, n *yaml.Node, known ...string) map[string]*yaml.Node {
	n = p.resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.problem(path, n, "must be a mapping of key: value")
		return nil
	}
	m := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := p.resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			p.problem(path, n.Content[i], "keys must be plain strings")
			continue
		}
		key := k.Value
		kp := join(path, key)
		if k.ShortTag() == "!!merge" {
			p.problem(kp, k, "merge keys (<<) are not supported")
			continue
		}
		if !contains(known, key) {
			if s := closest(key, known); s != "" {
				p.problem(kp, k, "unknown key (did you mean %q?)", s)
			} else {
				p.problem(kp, k, "unknown key (known: %s)", strings.Join(known, ", "))
			}
			continue
		}
		if _, dup := m[key]; dup {
			p.problem(kp, k, "duplicate key")
			continue
		}
		m[key] = v
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// closest returns the known key within edit distance 2 of key, if one.
func closest(key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// seq reads a sequence; null is an empty list, anything else a problem.
func (p *parser) seq(path string, n *yaml.Node) []*yaml.Node {
	n = p.resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.problem(path, n, "must be a list")
		return nil
	}
	return n.Content
}

// scalar returns the value of a scalar node, "" and false for null; other
// kinds are a problem.
func (p *parser) scalar(path string, n *yaml.Node) (string, *yaml.Node, bool) {
	n = p.resolve(n)
	if isNull(n) {
		return "", n, false
	}
	if n.Kind != yaml.ScalarNode {
		p.problem(path, n, "must be a single value, not a list or mapping")
		return "", n, false
	}
	return n.Value, n, true
}

func (p *parser) str(path string, n *yaml.Node) string {
	s, _, _ := p.scalar(path, n)
	return strings.TrimSpace(s)
}

// strs reads a list of non-empty strings.
func (p *parser) strs(path string, n *yaml.Node, check func(path string, n *yaml.Node, s string) (string, bool)) []string {
	items := p.seq(path, n)
	if len(items) == 0 {
		return nil
	}
	out := make([]string, 0, len(items))
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		ip := path + "[" + strconv.Itoa(i) + "]"
		s, sn, ok := p.scalar(ip, it)
		s = strings.TrimSpace(s)
		if !ok || s == "" {
			if sn == nil || sn.Kind == yaml.ScalarNode {
				p.problem(ip, sn, "must not be empty")
			}
			continue
		}
		if check != nil {
			if s, ok = check(ip, sn, s); !ok {
				continue
			}
		}
		if seen[s] {
			p.problem(ip, sn, "%q is listed twice", s)
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

func (p *parser) integer(path string, n *yaml.Node) (int64, bool) {
	s, sn, ok := p.scalar(path, n)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		p.problem(path, sn, "%q is not an integer", s)
		return 0, false
	}
	return v, true
}

func (p *parser) boolean(path string, n *yaml.Node) bool {
	s, sn, ok := p.scalar(path, n)
	if !ok {
		return false
	}
	switch s {
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	}
	p.problem(path, sn, "%q is not true or false", s)
	return false
}

// micros reads a decimal amount of currency units ("1.25", 1.25, 3) as
// micros, exactly. Negative amounts are returned for the caller to judge.
func (p *parser) micros(path string, n *yaml.Node) (int64, bool) {
	s, sn, ok := p.scalar(path, n)
	if !ok {
		return 0, false
	}
	v, msg := parseMicros(s)
	if msg != "" {
		p.problem(path, sn, "%q %s", s, msg)
		return 0, false
	}
	return v, true
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

// multiplier reads a strategy multiplier: a number > 0 and <= 100.
func (p *parser) multiplier(path string, n *yaml.Node) (float64, bool) {
	s, sn, ok := p.scalar(path, n)
	if !ok {
		p.problem(path, sn, "missing multiplier")
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		p.problem(path, sn, "%q is not a number", s)
		return 0, false
	}
	if !(f > 0 && f <= maxMultiplier) {
		p.problem(path, sn, "must be > 0 and <= %g, got %s", float64(maxMultiplier), s)
		return 0, false
	}
	return f, true
}

const maxMultiplier = 100

// mapping walks a mapping with free keys (multiplier tables) in file order.
func (p *parser) mapping(path string, n *yaml.Node, fn func(kpath string, key string, kn, v *yaml.Node)) {
	n = p.resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.problem(path, n, "must be a mapping of key: value")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := p.resolve(n.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			p.problem(path, n.Content[i], "keys must be plain strings")
			continue
		}
		kp := join(path, k.Value)
		if seen[k.Value] {
			p.problem(kp, k, "duplicate key")
			continue
		}
		seen[k.Value] = true
		fn(kp, k.Value, k, n.Content[i+1])
	}
}

// Keys of a campaign, in the order Marshal writes them.
var campaignKeys = []string{"id", "name", "advertiser", "adomain", "cat", "product_group_id",
	"status", "start", "end", "time_zone", "currency", "bid_cpm", "strategy", "daily_budget",
	"total_budget", "frequency_cap", "pacing", "targeting", "creative", "deals", "deals_only",
	"seat", "bundle"}

func (p *parser) campaign(path string, n *yaml.Node) *Campaign {
	f := p.fields(path, n, campaignKeys...)
	if f == nil {
		if isNull(p.resolve(n)) {
			p.problem(path, n, "empty campaign")
		}
		return nil
	}
	c := &Campaign{}
	c.ID = p.str(path+".id", f["id"])
	if c.ID == "" {
		p.problem(path+".id", keyLine(n), "missing")
	} else if msg := checkID(c.ID); msg != "" {
		p.problem(path+".id", f["id"], "%q %s", c.ID, msg)
	}
	c.Name = p.str(path+".name", f["name"])
	c.Advertiser = p.str(path+".advertiser", f["advertiser"])
	c.ADomain = p.strs(path+".adomain", f["adomain"], p.checkDomain)
	if len(c.ADomain) == 0 && !p.hasProblemUnder(path+".adomain") {
		p.problem(path+".adomain", keyLine(n), "missing: at least one advertiser domain (bid.adomain)")
	}
	c.Cat = p.strs(path+".cat", f["cat"], p.checkCat)

	if v, ok := p.integer(path+".product_group_id", f["product_group_id"]); ok && v > 0 {
		c.ProductGroupID = v
	} else if ok {
		p.problem(path+".product_group_id", f["product_group_id"], "must be > 0, got %d", v)
	} else if !p.hasProblemUnder(path + ".product_group_id") {
		p.problem(path+".product_group_id", keyLine(n), "missing: the catalog product group of the creative's products")
	}

	c.Status = p.str(path+".status", f["status"])
	if c.Status == "" {
		p.problem(path+".status", keyLine(n), "missing: active or paused")
	} else {
		p.oneOf(path+".status", f["status"], c.Status, StatusActive, StatusPaused)
	}

	c.TimeZone = time.UTC
	if tz := p.str(path+".time_zone", f["time_zone"]); tz != "" {
		if loc, err := p.loadLocation(tz); err != nil {
			p.problem(path+".time_zone", f["time_zone"], "unknown time zone %q (want an IANA name such as Asia/Tokyo)", tz)
		} else {
			c.TimeZone = loc
		}
	}
	startOK, endOK := true, true
	c.Start, startOK = p.date(path+".start", f["start"], c.TimeZone, false)
	c.End, endOK = p.date(path+".end", f["end"], c.TimeZone, true)
	if startOK && endOK && !c.Start.IsZero() && !c.End.IsZero() && !c.End.After(c.Start) {
		p.problem(path+".end", f["end"], "must be after start (%s), got %s",
			c.Start.Format(time.RFC3339), c.End.Format(time.RFC3339))
	}

	c.Currency = p.str(path+".currency", f["currency"])
	if c.Currency == "" {
		c.Currency = "USD"
	} else if !money.IsCode(c.Currency) {
		p.problem(path+".currency", f["currency"], "%q is not an ISO 4217 code such as USD", c.Currency)
	}

	if v, ok := p.micros(path+".bid_cpm", f["bid_cpm"]); ok {
		if v <= 0 {
			p.problem(path+".bid_cpm", f["bid_cpm"], "must be > 0, got %s", money.Format(v))
		}
		c.BidCPMMicros = v
	} else if !p.hasProblemUnder(path + ".bid_cpm") {
		p.problem(path+".bid_cpm", keyLine(n), "missing: the CPM bid in currency units, e.g. 1.50")
	}
	c.Strategy = p.strategy(path+".strategy", f["strategy"])

	c.DailyBudgetMicros = p.budget(path+".daily_budget", f["daily_budget"])
	c.TotalBudgetMicros = p.budget(path+".total_budget", f["total_budget"])
	if c.DailyBudgetMicros > 0 && c.TotalBudgetMicros > 0 && c.DailyBudgetMicros > c.TotalBudgetMicros {
		p.problem(path+".daily_budget", f["daily_budget"], "must be <= total_budget (%s), got %s",
			money.Format(c.TotalBudgetMicros), money.Format(c.DailyBudgetMicros))
	}
	c.FrequencyCap = p.frequencyCap(path+".frequency_cap", f["frequency_cap"])
	c.Pacing = p.str(path+".pacing", f["pacing"])
	if c.Pacing == "" {
		c.Pacing = PacingEven
	} else {
		p.oneOf(path+".pacing", f["pacing"], c.Pacing, PacingEven, PacingASAP)
	}
	c.Targeting = p.targeting(path+".targeting", f["targeting"])
	cn, hasCreative := f["creative"]
	if !hasCreative || isNull(p.resolve(cn)) {
		p.problem(path+".creative", keyLine(n), "missing: template and sizes, native or vast")
	} else {
		c.Creative = p.creative(path+".creative", cn)
	}
	c.Deals = p.strs(path+".deals", f["deals"], nil)
	c.DealsOnly = p.boolean(path+".deals_only", f["deals_only"])
	if c.DealsOnly && len(c.Deals) == 0 {
		p.problem(path+".deals_only", f["deals_only"], "is true but deals is empty")
	}
	c.Seat = p.str(path+".seat", f["seat"])
	c.Bundle = p.str(path+".bundle", f["bundle"])
	return c
}

// keyLine returns a node whose line is that of the mapping n (for "missing"
// problems), or nil.
func keyLine(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func (p *parser) hasProblemUnder(path string) bool {
	for _, s := range p.probs {
		if strings.HasPrefix(s, path) {
			return true
		}
	}
	return false
}

func (p *parser) oneOf(path string, n *yaml.Node, got string, allowed ...string) bool {
	if contains(allowed, got) {
		return true
	}
	p.problem(path, n, "%q is not one of %s", got, strings.Join(allowed, ", "))
	return false
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

// loadLocation is time.LoadLocation without its acceptance of "" and
// "Local" (the bidder's host zone is never what a campaign means).
func (p *parser) loadLocation(name string) (*time.Location, error) {
	if l, ok := p.locs[name]; ok {
		return l, nil
	}
	if name == "Local" || strings.ContainsAny(name, " \\") {
		return nil, errors.New("campaign: bad time zone")
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	if p.locs == nil {
		p.locs = map[string]*time.Location{}
	}
	p.locs[name] = l
	return l, nil
}

// date reads an RFC 3339 time or a YYYY-MM-DD date in loc; for an end date,
// the next midnight (the whole day is in the flight).
func (p *parser) date(path string, n *yaml.Node, loc *time.Location, end bool) (time.Time, bool) {
	s, sn, ok := p.scalar(path, n)
	s = strings.TrimSpace(s)
	if !ok || s == "" {
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
		p.problem(path, sn, "%q is not an RFC 3339 time (2026-01-02T15:04:05+09:00) or a date (2026-01-02)", s)
		return time.Time{}, false
	}
	return t.In(loc), true
}

func (p *parser) budget(path string, n *yaml.Node) int64 {
	v, ok := p.micros(path, n)
	if ok && v < 0 {
		p.problem(path, n, "must be >= 0 (0 = unlimited), got %s", money.Format(v))
		return 0
	}
	return v
}

func (p *parser) checkDomain(path string, n *yaml.Node, s string) (string, bool) {
	d, msg := normDomain(s)
	if msg != "" {
		p.problem(path, n, "%q %s", s, msg)
		return "", false
	}
	return d, true
}

// normDomain lower-cases a domain, drops a leading "*." and a trailing dot,
// and checks it is a host name.
func normDomain(s string) (string, string) {
	d := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(s, "*."), "."))
	if len(d) == 0 || len(d) > maxDomain {
		return "", "is not a domain name"
	}
	label := 0
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			label++
			if label > 63 {
				return "", "has a label longer than 63 characters"
			}
		case c == '.':
			if label == 0 {
				return "", "is not a domain name (empty label)"
			}
			label = 0
		default:
			return "", "is not a domain name (write example.com, without scheme, path or port)"
		}
	}
	if label == 0 {
		return "", "is not a domain name (empty label)"
	}
	return d, ""
}

const maxDomain = 253

// checkCat accepts IAB content taxonomy 1.0 categories: IAB<n> or IAB<n>-<m>.
func (p *parser) checkCat(path string, n *yaml.Node, s string) (string, bool) {
	if !isIABCat(s) {
		p.problem(path, n, "%q is not an IAB category such as IAB22 or IAB22-1", s)
		return "", false
	}
	return s, true
}

func isIABCat(s string) bool {
	rest, ok := strings.CutPrefix(s, "IAB")
	if !ok {
		return false
	}
	a, b, sub := strings.Cut(rest, "-")
	if a == "" || !allDigits(a) || len(a) > 3 {
		return false
	}
	return !sub || b != "" && allDigits(b) && len(b) <= 3
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

func (p *parser) strategy(path string, n *yaml.Node) Strategy {
	s := Strategy{Type: StrategyFixed}
	f := p.fields(path, n, "type", "device_type", "country", "hour")
	if f == nil {
		return s
	}
	if t := p.str(path+".type", f["type"]); t != "" {
		if p.oneOf(path+".type", f["type"], t, StrategyFixed, StrategyMultiplier) {
			s.Type = t
		}
	}
	p.mapping(path+".device_type", f["device_type"], func(kp, key string, kn, v *yaml.Node) {
		t, ok := parseDeviceType(key)
		if !ok {
			p.problem(kp, kn, "unknown device type %q (want %s)", key, deviceTypeList())
			return
		}
		if m, ok := p.multiplier(kp, v); ok {
			if s.DeviceType == nil {
				s.DeviceType = map[adcom1.DeviceType]float64{}
			}
			if _, dup := s.DeviceType[t]; dup {
				p.problem(kp, kn, "device type %s given twice", deviceTypeName(t))
			}
			s.DeviceType[t] = m
		}
	})
	p.mapping(path+".country", f["country"], func(kp, key string, kn, v *yaml.Node) {
		a3, ok := CountryAlpha3(key)
		if !ok {
			p.problem(kp, kn, "unknown country %q (want ISO 3166-1 alpha-2 or alpha-3)", key)
			return
		}
		if m, ok := p.multiplier(kp, v); ok {
			if s.Country == nil {
				s.Country = map[string]float64{}
			}
			if _, dup := s.Country[a3]; dup {
				p.problem(kp, kn, "country %s given twice", a3)
			}
			s.Country[a3] = m
		}
	})
	p.mapping(path+".hour", f["hour"], func(kp, key string, kn, v *yaml.Node) {
		h, err := strconv.Atoi(key)
		if err != nil || h < 0 || h > 23 {
			p.problem(kp, kn, "hour %q is not 0-23", key)
			return
		}
		if m, ok := p.multiplier(kp, v); ok {
			if s.Hour == nil {
				s.Hour = map[int]float64{}
			}
			if _, dup := s.Hour[h]; dup {
				p.problem(kp, kn, "hour %d given twice", h)
			}
			s.Hour[h] = m
		}
	})
	if s.Type == StrategyFixed && (len(s.DeviceType)+len(s.Country)+len(s.Hour)) > 0 {
		p.problem(path+".type", f["type"], "multipliers are given but type is fixed (write type: multiplier)")
	}
	return s
}

func (p *parser) frequencyCap(path string, n *yaml.Node) FrequencyCap {
	var fc FrequencyCap
	f := p.fields(path, n, "impressions", "period")
	if f == nil {
		return fc
	}
	if v, ok := p.integer(path+".impressions", f["impressions"]); ok {
		if v < 0 || v > 1_000_000 {
			p.problem(path+".impressions", f["impressions"], "must be 0-1000000 (0 = no cap), got %d", v)
		} else {
			fc.Impressions = int(v)
		}
	}
	if s := p.str(path+".period", f["period"]); s != "" {
		d, err := parseDuration(s)
		if err != nil || d <= 0 {
			p.problem(path+".period", f["period"], "%q is not a positive duration such as 24h, 30m or 7d", s)
		} else {
			fc.Period = d
		}
	}
	if fc.Impressions > 0 && fc.Period == 0 && !p.hasProblemUnder(path+".period") {
		p.problem(path+".period", keyLine(n), "missing: the window of the cap, such as 24h")
	}
	return fc
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

var targetingKeys = []string{"site_domains", "site_domains_deny", "app_bundles", "app_bundles_deny",
	"publisher_ids", "countries", "regions", "device_types", "os", "user_segments", "dayparts"}

func (p *parser) targeting(path string, n *yaml.Node) Targeting {
	var t Targeting
	f := p.fields(path, n, targetingKeys...)
	if f == nil {
		return t
	}
	t.SiteDomains = p.strs(path+".site_domains", f["site_domains"], p.checkDomain)
	t.SiteDomainsDeny = p.strs(path+".site_domains_deny", f["site_domains_deny"], p.checkDomain)
	lower := func(_ string, _ *yaml.Node, s string) (string, bool) { return strings.ToLower(s), true }
	t.AppBundles = p.strs(path+".app_bundles", f["app_bundles"], lower)
	t.AppBundlesDeny = p.strs(path+".app_bundles_deny", f["app_bundles_deny"], lower)
	t.PublisherIDs = p.strs(path+".publisher_ids", f["publisher_ids"], nil)
	t.Countries = p.strs(path+".countries", f["countries"], func(ip string, sn *yaml.Node, s string) (string, bool) {
		a3, ok := CountryAlpha3(s)
		if !ok {
			p.problem(ip, sn, "unknown country %q (want ISO 3166-1 alpha-2 or alpha-3)", s)
		}
		return a3, ok
	})
	t.Regions = p.strs(path+".regions", f["regions"], func(_ string, _ *yaml.Node, s string) (string, bool) {
		return strings.ToUpper(s), true
	})
	for i, it := range p.seq(path+".device_types", f["device_types"]) {
		ip := path + ".device_types[" + strconv.Itoa(i) + "]"
		s, sn, ok := p.scalar(ip, it)
		if !ok {
			continue
		}
		d, ok := parseDeviceType(s)
		if !ok {
			p.problem(ip, sn, "unknown device type %q (want %s)", s, deviceTypeList())
			continue
		}
		if containsDevice(t.DeviceTypes, d) {
			p.problem(ip, sn, "device type %s is listed twice", deviceTypeName(d))
			continue
		}
		t.DeviceTypes = append(t.DeviceTypes, d)
	}
	t.OS = p.strs(path+".os", f["os"], lower)
	t.UserSegments = p.strs(path+".user_segments", f["user_segments"], nil)
	for i, it := range p.seq(path+".dayparts", f["dayparts"]) {
		if d, ok := p.daypart(path+".dayparts["+strconv.Itoa(i)+"]", it); ok {
			t.Dayparts = append(t.Dayparts, d)
		}
	}
	return t
}

func containsDevice(l []adcom1.DeviceType, d adcom1.DeviceType) bool {
	for _, x := range l {
		if x == d {
			return true
		}
	}
	return false
}

var dayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

func parseDay(s string) (time.Weekday, bool) {
	s = strings.ToLower(s)
	for i, d := range dayNames {
		if s == d || s == strings.ToLower(time.Weekday(i).String()) {
			return time.Weekday(i), true
		}
	}
	return 0, false
}

func (p *parser) daypart(path string, n *yaml.Node) (Daypart, bool) {
	var d Daypart
	f := p.fields(path, n, "days", "start_hour", "end_hour")
	if f == nil {
		if isNull(p.resolve(n)) {
			p.problem(path, n, "empty daypart")
		}
		return d, false
	}
	before := len(p.probs)
	for i, it := range p.seq(path+".days", f["days"]) {
		ip := path + ".days[" + strconv.Itoa(i) + "]"
		s, sn, ok := p.scalar(ip, it)
		if !ok {
			continue
		}
		wd, ok := parseDay(strings.TrimSpace(s))
		if !ok {
			p.problem(ip, sn, "%q is not a day (mon, tue, wed, thu, fri, sat, sun)", s)
			continue
		}
		for _, x := range d.Days {
			if x == wd {
				p.problem(ip, sn, "%s is listed twice", dayNames[wd])
			}
		}
		d.Days = append(d.Days, wd)
	}
	sh, okS := p.integer(path+".start_hour", f["start_hour"])
	eh, okE := p.integer(path+".end_hour", f["end_hour"])
	switch {
	case !okS && !p.hasProblemUnder(path+".start_hour"):
		p.problem(path+".start_hour", keyLine(n), "missing: 0-23")
	case okS && (sh < 0 || sh > 23):
		p.problem(path+".start_hour", f["start_hour"], "must be 0-23, got %d", sh)
	}
	switch {
	case !okE && !p.hasProblemUnder(path+".end_hour"):
		p.problem(path+".end_hour", keyLine(n), "missing: 1-24 (exclusive)")
	case okE && (eh < 1 || eh > 24):
		p.problem(path+".end_hour", f["end_hour"], "must be 1-24, got %d", eh)
	case okE && okS && eh == sh:
		p.problem(path+".end_hour", f["end_hour"], "must differ from start_hour (%d)", sh)
	}
	d.StartHour, d.EndHour = int(sh), int(eh)
	return d, len(p.probs) == before
}

func (p *parser) creative(path string, n *yaml.Node) Creative {
	var c Creative
	f := p.fields(path, n, "template", "sizes", "native", "vast", "click_base", "attr")
	if f == nil {
		return c
	}
	c.Template = p.str(path+".template", f["template"])
	if c.Template == "" {
		p.problem(path+".template", keyLine(n), "missing: light, medium or heavy")
	} else {
		p.oneOf(path+".template", f["template"], c.Template, TemplateLight, TemplateMedium, TemplateHeavy)
	}
	for i, it := range p.seq(path+".sizes", f["sizes"]) {
		ip := path + ".sizes[" + strconv.Itoa(i) + "]"
		s, sn, ok := p.scalar(ip, it)
		if !ok {
			continue
		}
		w, h, ok := parseSize(s)
		if !ok {
			p.problem(ip, sn, "%q is not WxH (such as 300x250)", s)
			continue
		}
		dup := false
		for _, x := range c.Sizes {
			dup = dup || x == [2]int64{w, h}
		}
		if dup {
			p.problem(ip, sn, "%q is listed twice", s)
			continue
		}
		c.Sizes = append(c.Sizes, [2]int64{w, h})
	}
	c.Native = p.boolean(path+".native", f["native"])
	if vn, ok := f["vast"]; ok {
		s, sn, _ := p.scalar(path+".vast", vn)
		if strings.TrimSpace(s) != "" && !strings.Contains(strings.ToUpper(s), "<VAST") {
			p.problem(path+".vast", sn, "is not a VAST document (no <VAST element)")
		}
		if strings.TrimSpace(s) != "" {
			c.VAST = s
		}
	}
	c.ClickBase = p.str(path+".click_base", f["click_base"])
	if c.ClickBase != "" {
		u, err := url.Parse(c.ClickBase)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.problem(path+".click_base", f["click_base"], "%q is not an absolute http(s) URL", c.ClickBase)
		}
	}
	for i, it := range p.seq(path+".attr", f["attr"]) {
		ip := path + ".attr[" + strconv.Itoa(i) + "]"
		v, ok := p.integer(ip, it)
		if !ok {
			continue
		}
		if v < 1 || v > 100 {
			p.problem(ip, it, "must be a creative attribute 1-100 (AdCOM list), got %d", v)
			continue
		}
		c.Attr = append(c.Attr, adcom1.CreativeAttribute(v))
	}
	if len(c.Sizes) == 0 && !c.Native && c.VAST == "" && !p.hasProblemUnder(path) {
		p.problem(path, n, "serves nothing: give sizes, native: true or vast")
	}
	return c
}

// parseSize parses "300x250" (or 300X250).
func parseSize(s string) (w, h int64, ok bool) {
	a, b, cut := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !cut || !allDigits(a) || !allDigits(b) || a == "" || b == "" || len(a) > 5 || len(b) > 5 {
		return 0, 0, false
	}
	w, _ = strconv.ParseInt(a, 10, 64)
	h, _ = strconv.ParseInt(b, 10, 64)
	return w, h, w > 0 && h > 0 && w <= 10000 && h <= 10000
}

// sortedKeys returns the keys of m in order.
func sortedKeys[K int | string | adcom1.DeviceType, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}
