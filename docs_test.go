package main

// The documentation test: every config key, command-line flag, Prometheus
// metric and HTTP route of rtbd has exactly one row in the reference
// table it belongs in, and every row names something that exists. The
// items are listed from the code (reflection over configs.Config, the
// commands' flag sets, the registries of a started bidder and catalog
// node, the routers); the rows are read from the Markdown tables whose
// header names their kind:
//
//	| key | default | env | meaning |             configs/README.md
//	| `rtbd gen` flag | default | meaning |        the README of the command's folder
//	| metric | type | labels | meaning |          bidder/REFERENCE.md, catalog/README.md
//	| route | listener | what |                   bidder/REFERENCE.md
//
// A row names its item in backticks in its first cell. A failure lists
// each missing, duplicate, misplaced or stale item with the table it
// belongs in and, for a missing one, a row to start from.

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/bench"
	"github.com/rtbd/rtbd/bidder"
	"github.com/rtbd/rtbd/bidder/exchange"
	"github.com/rtbd/rtbd/bidder/server"
	"github.com/rtbd/rtbd/bidder/user/recommended"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/node"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/gen/demo"
	"github.com/rtbd/rtbd/ingest"
	"github.com/rtbd/rtbd/records/report"
)

// Kinds of reference tables (the first cell of their header).
const (
	kindKey    = "key"
	kindFlag   = "flag"
	kindMetric = "metric"
	kindRoute  = "route"
)

// item is one thing the code has that the docs must list once.
type item struct {
	kind string
	name string // as the row's first cell writes it, in backticks
	// cmd is the command of a flag ("rtbd gen -demo"); name is "-out".
	cmd string
	// file is the README whose table it belongs in.
	file string
	// checks are the other cells the row must have, by header (lower
	// case): the expected text of the cell, or a func judging it.
	checks map[string]func(cell string) string
	// row is a row to start from when it is missing.
	row string
}

func (it item) id() string {
	if it.kind == kindFlag {
		return it.cmd + " " + it.name
	}
	return it.name
}

func (it item) describe() string {
	switch it.kind {
	case kindKey:
		return "config key " + it.name
	case kindFlag:
		return "flag " + it.cmd + " " + it.name
	case kindMetric:
		return "metric " + it.name
	}
	return "route " + it.name
}

func (it item) table() string {
	switch it.kind {
	case kindKey:
		return "the key table (| key | default | env | meaning |) of " + it.file
	case kindFlag:
		cols := "default"
		if it.cmd == "rtbd" {
			cols = "setting"
		}
		return "the `" + it.cmd + "` flag table (| `" + it.cmd + "` flag | " + cols + " | meaning |, or a table shared with other commands) of " + it.file
	case kindMetric:
		return "the metric table (| metric | type | labels | meaning |) of " + it.file
	}
	return "the route table (| route | listener | what |) of " + it.file
}

// TestDocsReference checks the reference tables against the code.
func TestDocsReference(t *testing.T) {
	items := slices.Concat(configItems(t), flagItems(t), metricAndRouteItems(t))
	rows := docRows(t, ".")
	for _, p := range checkDocs(items, rows) {
		t.Error(p)
	}
}

// checkDocs returns every problem of rows against items, sorted.
func checkDocs(items []item, rows []row) []string {
	byID := map[string]item{}
	for _, it := range items {
		byID[it.kind+"\x00"+it.id()] = it
	}
	seen := map[string][]row{}
	var problems []string
	for _, r := range rows {
		for _, name := range r.names {
			if r.kind != kindFlag {
				id := r.kind + "\x00" + name
				seen[id] = append(seen[id], r)
			}
			for _, cmd := range r.cmds {
				id := r.kind + "\x00" + cmd + " " + name
				seen[id] = append(seen[id], r)
			}
		}
	}
	for id, it := range byID {
		rs := seen[id]
		switch {
		case len(rs) == 0:
			problems = append(problems, fmt.Sprintf("%s has no row: add one to %s:\n\t%s", it.describe(), it.table(), it.row))
			continue
		case len(rs) > 1:
			var where []string
			for _, r := range rs {
				where = append(where, r.where())
			}
			problems = append(problems, fmt.Sprintf("%s has %d rows (%s): keep the one in %s", it.describe(), len(rs), strings.Join(where, ", "), it.table()))
		}
		for _, r := range rs {
			if r.file != it.file {
				problems = append(problems, fmt.Sprintf("%s is at %s: it belongs in %s; a row to start from:\n\t%s", it.describe(), r.where(), it.table(), it.row))
				continue
			}
			for col, check := range it.checks {
				cell, ok := r.cells[col]
				if !ok {
					problems = append(problems, fmt.Sprintf("%s at %s: its table has no %q column (%s)", it.describe(), r.where(), col, it.table()))
					continue
				}
				if why := check(cell); why != "" {
					problems = append(problems, fmt.Sprintf("%s at %s: column %q is %q: %s", it.describe(), r.where(), col, cell, why))
				}
			}
		}
	}
	for id, rs := range seen {
		if _, ok := byID[id]; ok {
			continue
		}
		_, name, _ := strings.Cut(id, "\x00")
		for _, r := range rs {
			problems = append(problems, fmt.Sprintf("stale %s row at %s: the code has no %s %s; remove the row (or fix its name)", r.kind, r.where(), r.kind, name))
		}
	}
	for _, r := range rows {
		if len(r.names) == 0 {
			problems = append(problems, fmt.Sprintf("%s row at %s names nothing in backticks in its first cell", r.kind, r.where()))
		}
	}
	sort.Strings(problems)
	return slices.Compact(problems)
}

// row is one row of a reference table.
type row struct {
	kind  string
	cmds  []string // flag tables: the commands (one, or several sharing the flags)
	file  string   // relative to the repository root
	line  int
	names []string          // the items of its first cell
	cells map[string]string // every cell by its header (lower case)
}

func (r row) where() string { return fmt.Sprintf("%s:%d", r.file, r.line) }

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	// A flag table's header names its command, or several that share
	// the flags of its rows: "`rtbd bench store`, `rtbd bench all` flag".
	flagHeader = regexp.MustCompile("^`rtbd[^`]*`(, `rtbd[^`]*`)* flag$")
)

// docRows reads the rows of every reference table of the Markdown files
// under root.
func docRows(t *testing.T, root string) []row {
	t.Helper()
	var rows []row
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rows = append(rows, parseTables(filepath.ToSlash(rel), string(b))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// parseTables returns the rows of the reference tables of one Markdown
// document.
func parseTables(file, text string) []row {
	var rows []row
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !isTableLine(lines[i]) || i+1 >= len(lines) || !isSeparator(lines[i+1]) {
			continue
		}
		header := splitRow(lines[i])
		kind, cmds := tableKind(header[0])
		j := i + 2
		for ; j < len(lines) && isTableLine(lines[j]); j++ {
			if kind == "" {
				continue
			}
			cells := splitRow(lines[j])
			r := row{kind: kind, cmds: cmds, file: file, line: j + 1, cells: map[string]string{}}
			for k, h := range header {
				if k < len(cells) {
					r.cells[strings.ToLower(h)] = cells[k]
				}
			}
			for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
				r.names = append(r.names, normalize(kind, m[1]))
			}
			rows = append(rows, r)
		}
		i = j - 1
	}
	return rows
}

// tableKind is the kind of a table by the first cell of its header, ""
// for a table that is no reference table.
func tableKind(h string) (kind string, cmds []string) {
	switch strings.ToLower(h) {
	case kindKey, kindMetric, kindRoute:
		return strings.ToLower(h), nil
	}
	if flagHeader.MatchString(h) {
		for _, m := range backticked.FindAllStringSubmatch(h, -1) {
			cmds = append(cmds, m[1])
		}
		return kindFlag, cmds
	}
	return "", nil
}

// normalize turns a route's cell ("GET /event?pg=G") into its path.
func normalize(kind, s string) string {
	if kind != kindRoute {
		return s
	}
	if m, p, ok := strings.Cut(s, " "); ok && m == strings.ToUpper(m) {
		s = p
	}
	s, _, _ = strings.Cut(s, "?")
	return s
}

func isTableLine(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "|") }

func isSeparator(l string) bool {
	l = strings.TrimSpace(l)
	return isTableLine(l) && strings.Trim(l, "|-: ") == ""
}

// splitRow splits a table line into its cells, trimmed; a | inside
// backticks or escaped as \| does not split.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	var cells []string
	var cur strings.Builder
	inCode := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '`':
			inCode = !inCode
		case c == '\\' && i+1 < len(l) && l[i+1] == '|':
			cur.WriteByte('|')
			i++
			continue
		case c == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// code is the expected text of a cell: the value in backticks.
func code(want string) func(string) string {
	return func(cell string) string {
		if cell == "`"+want+"`" {
			return ""
		}
		return "want `" + want + "`"
	}
}

// --- config keys

// configItems lists every setting of configs.Config by its dotted YAML
// key, and each setting of a map of sections (exchanges) as
// SECTION.NAME.KEY.
func configItems(t *testing.T) []item {
	t.Helper()
	def, err := configs.Default()
	if err != nil {
		t.Fatal(err)
	}
	comments := yamlComments(t)
	secret := map[string]bool{}
	for _, k := range configs.SecretKeys() {
		secret[strings.ReplaceAll(k, configs.AnyName, "NAME")] = true
	}
	probe, err := configs.Default() // is each key settable from a string (the environment)?
	if err != nil {
		t.Fatal(err)
	}
	var items, plain []item
	var walk func(t reflect.Type, prefix string, inMap bool)
	walk = func(typ reflect.Type, prefix string, inMap bool) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			k := configs.YAMLKey(f)
			if k == "" {
				continue
			}
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			switch {
			case isSection(f.Type):
				walk(f.Type, key, inMap)
				continue
			case f.Type.Kind() == reflect.Map && f.Type.Key().Kind() == reflect.String && isSection(f.Type.Elem()):
				walk(f.Type.Elem(), key+".NAME", true)
				continue
			}
			it := item{kind: kindKey, name: key, file: "configs/README.md", checks: map[string]func(string) string{}}
			meaning := comments[strings.ReplaceAll(key, ".NAME", "")]
			if inMap {
				it.checks["env"] = func(cell string) string {
					if strings.Contains(cell, configs.EnvPrefix) {
						return "a setting of a map of sections has no environment variable: write \"file only\""
					}
					return ""
				}
				it.row = fmt.Sprintf("| `%s` | DEFAULT | file only | %s |", key, meaning)
				items = append(items, it)
				continue
			}
			value, err := def.Get(key)
			if err != nil {
				t.Fatalf("configs: Get(%q): %v", key, err)
			}
			shown := showDefault(f.Type, value)
			env := "`" + configs.EnvName(key) + "`"
			if secret[key] {
				env += ", `" + configs.EnvName(key+configs.FileSuffix) + "`"
			}
			if err := probe.Set(key, value); err != nil {
				env = "file only"
			}
			it.checks["default"] = code(shown)
			it.checks["env"] = func(cell string) string {
				if cell == env {
					return ""
				}
				return "want " + env
			}
			it.row = fmt.Sprintf("| `%s` | `%s` | %s | %s |", key, shown, env, meaning)
			items = append(items, it)
			plain = append(plain, it)
		}
	}
	walk(reflect.TypeFor[configs.Config](), "", false)
	// The walk must find what configs itself walks.
	var names []string
	for _, it := range plain {
		names = append(names, it.name)
	}
	if keys := def.Keys(); !slices.Equal(names, keys) {
		t.Fatalf("the test's walk of configs.Config found\n%v\nconfigs.Keys is\n%v", names, keys)
	}
	return items
}

// isSection mirrors configs: a struct that does not decode itself.
func isSection(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	pt := reflect.PointerTo(t)
	return !pt.Implements(reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()) &&
		!pt.Implements(reflect.TypeFor[yaml.Unmarshaler]())
}

// showDefault writes a default as the docs show it: strings and lists as
// YAML writes them ("" and [a, b]), durations short (1h), the rest as
// -set takes them.
func showDefault(t reflect.Type, value string) string {
	switch {
	case t.Kind() == reflect.Slice:
		if value == "" {
			return "[]"
		}
		return "[" + strings.ReplaceAll(value, ",", ", ") + "]"
	case t.Kind() == reflect.String && value == "":
		return `""`
	case t == reflect.TypeFor[time.Duration]():
		// As rtbd.yaml writes them: 1h, 5m, not 1h0m0s, 5m0s.
		if strings.HasSuffix(value, "m0s") {
			value = strings.TrimSuffix(value, "0s")
		}
		if strings.HasSuffix(value, "h0m") {
			value = strings.TrimSuffix(value, "0m")
		}
	}
	return value
}

// yamlComments returns the comment above each key of the embedded
// rtbd.yaml, on one line, by dotted key (for the rows of missing keys).
func yamlComments(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("configs", "rtbd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + key
			}
			var words []string
			for _, l := range strings.Split(k.HeadComment, "\n") {
				words = append(words, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")))
			}
			out[key] = strings.Join(strings.Fields(strings.Join(words, " ")), " ")
			if v.Kind == yaml.MappingNode {
				walk(v, key)
			}
		}
	}
	if len(doc.Content) > 0 {
		walk(doc.Content[0], "")
	}
	return out
}

// --- flags

// flagFiles is the README that documents each command's flags.
var flagFiles = map[string]string{
	"rtbd":                 "configs/README.md",
	"rtbd ingest":          "ingest/README.md",
	"rtbd gen":             "ingest/README.md",
	"rtbd gen -demo":       "gen/README.md",
	"rtbd gen -users":      "gen/README.md",
	"rtbd report":          "records/README.md",
	"rtbd users recommend": "bidder/REFERENCE.md",
}

// flagItems lists every flag of every command's flag set.
func flagItems(t *testing.T) []item {
	t.Helper()
	t.Setenv(configs.EnvConfigPath, "") // -config's default is $RTBD_CONFIG
	server, _, _, _ := newServerFlags("rtbd")
	sets := slices.Concat([]*flag.FlagSet{server}, ingest.FlagSets(), demo.FlagSets(), bench.FlagSets(), report.FlagSets(), recommended.FlagSets())
	if got := len(bench.FlagSets()); got != len(bench.Scenarios) {
		t.Fatalf("bench.FlagSets: %d flag sets for %d scenarios", got, len(bench.Scenarios))
	}
	settingOf := map[string]string{}
	for _, f := range serverFlags {
		settingOf["-"+f.name] = f.key
	}
	var items []item
	for _, fs := range sets {
		cmd := fs.Name()
		file := flagFiles[cmd]
		if strings.HasPrefix(cmd, "rtbd bench ") {
			file = "bench/FLAGS.md"
		}
		if file == "" {
			t.Fatalf("flag set %q: add its command to flagFiles", cmd)
		}
		fs.VisitAll(func(f *flag.Flag) {
			it := item{kind: kindFlag, cmd: cmd, name: "-" + f.Name, file: file, checks: map[string]func(string) string{}}
			usage := strings.ReplaceAll(f.Usage, "|", `\|`)
			if cmd == "rtbd" {
				setting := "—"
				if k, ok := settingOf[it.name]; ok {
					setting = "`" + k + "`"
				}
				it.checks["setting"] = func(cell string) string {
					if cell == setting {
						return ""
					}
					return "want " + setting
				}
				it.row = fmt.Sprintf("| `%s` | %s | %s |", it.name, setting, usage)
			} else {
				def := "—"
				if f.DefValue != "" {
					def = "`" + f.DefValue + "`"
				}
				it.checks["default"] = func(cell string) string {
					if cell == def {
						return ""
					}
					return "want " + def
				}
				it.row = fmt.Sprintf("| `%s` | %s | %s |", it.name, def, usage)
			}
			items = append(items, it)
		})
	}
	return items
}

// --- metrics and routes

// recorder is a registry that keeps every collector registered in it, to
// tell the type of a vector that has no series yet (Gather leaves it out).
type recorder struct {
	*prometheus.Registry
	mu         sync.Mutex // a component may register from a goroutine of its own
	collectors []prometheus.Collector
}

func newRecorder() *recorder { return &recorder{Registry: prometheus.NewRegistry()} }

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// metric is what the docs say of a metric.
type metric struct {
	typ    string // counter, gauge, histogram, summary; "" if unknown
	labels []string
	help   string
}

var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]*)", help: "((?:[^"\\]|\\.)*)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)

// metrics adds the rtbd_* metrics of every collector of r to into.
func (r *recorder) metrics(t *testing.T, into map[string]metric) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.collectors {
		types := map[string]string{}
		switch c.(type) {
		case *prometheus.CounterVec:
			types[""] = "counter"
		case *prometheus.GaugeVec:
			types[""] = "gauge"
		case *prometheus.HistogramVec:
			types[""] = "histogram"
		case *prometheus.SummaryVec:
			types[""] = "summary"
		default:
			ch := make(chan prometheus.Metric, 64)
			go func() { c.Collect(ch); close(ch) }()
			for m := range ch {
				var pb dto.Metric
				if err := m.Write(&pb); err != nil {
					continue
				}
				name := descRE.FindStringSubmatch(m.Desc().String())
				if name == nil {
					continue
				}
				switch {
				case pb.Counter != nil:
					types[name[1]] = "counter"
				case pb.Gauge != nil:
					types[name[1]] = "gauge"
				case pb.Histogram != nil:
					types[name[1]] = "histogram"
				case pb.Summary != nil:
					types[name[1]] = "summary"
				case pb.Untyped != nil:
					types[name[1]] = "untyped"
				}
			}
		}
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the descriptor %s", d)
			}
			name := m[1]
			if !strings.HasPrefix(name, "rtbd_") {
				continue
			}
			var labels []string
			for _, l := range strings.Split(m[3], ",") {
				if n, _, _ := strings.Cut(l, "="); n != "" {
					labels = append(labels, n)
				}
			}
			for _, l := range strings.Split(m[4], ",") {
				l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")")
				if l != "" {
					labels = append(labels, l)
				}
			}
			slices.Sort(labels)
			typ := types[name]
			if typ == "" {
				typ = types[""]
			}
			prev, ok := into[name]
			if ok && prev.typ != "" && typ != "" && prev.typ != typ {
				t.Errorf("metric %s is a %s in one setup and a %s in another", name, prev.typ, typ)
			}
			if !ok || prev.typ == "" {
				into[name] = metric{typ: typ, labels: labels, help: strings.ReplaceAll(m[2], `\"`, `"`)}
			}
		}
	}
}

// textfileMetrics adds the metrics of the textfile an ingest run writes
// (ingest -textfile) to into.
func textfileMetrics(t *testing.T, path string, into map[string]metric) {
	t.Helper()
	now := time.Now()
	if err := ingest.WriteTextfile(path, ingest.RunResult{Mode: "full", Method: ingest.MethodBulk, Summary: &ingest.Summary{}, Start: now, End: now}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, mf := range mfs {
		var labels []string
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
		}
		slices.Sort(labels)
		into[name] = metric{typ: strings.ToLower(mf.GetType().String()), labels: slices.Compact(labels), help: mf.GetHelp()}
	}
}

// metricFile is the README whose metric table lists name.
func metricFile(name string) string {
	switch {
	case strings.HasPrefix(name, "rtbd_catalog_"):
		return "catalog/README.md"
	case strings.HasPrefix(name, "rtbd_ingest_"):
		return "ingest/README.md"
	}
	return "bidder/REFERENCE.md"
}

// metricAndRouteItems starts what registers metrics and serves routes,
// each with a registry of its own, in the setups that between them
// register every metric: a bidder on the embedded index, stores and
// catalog; a bidder on a remote catalog and a Redis (unreachable: it
// starts anyway); a bidder whose PostgreSQL campaign source cannot be
// read (it registers its metrics, then fails to start); a catalog node.
func metricAndRouteItems(t *testing.T) []item {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	catalogDir := filepath.Join(dir, "catalog")
	catalogtest.WriteFixture(t, catalogDir)
	campaigns, err := os.ReadFile(filepath.Join("bidder", "testdata", "campaigns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	campaignsFile := filepath.Join(dir, "campaigns.yaml")
	fxFile := filepath.Join(dir, "fx.json")
	for path, content := range map[string]string{
		campaignsFile: string(campaigns),
		fxFile:        `{"dataAsOf":"2026-12-01","conversions":{"USD":{"EUR":0.92,"JPY":150.1}}}`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	closed := closedAddr(t)
	// The remote bidder's Redis is not there: keep its client's retries
	// out of the test's output.
	redis.SetLogger(quietRedis{})
	base := func(name string, sets ...string) *configs.Config {
		cfg, err := configs.Default()
		if err != nil {
			t.Fatal(err)
		}
		sets = append([]string{
			"catalog.data=" + catalogDir, "catalog.grpc_listen=127.0.0.1:0", "admin.listen=127.0.0.1:0",
			"bidder.http_listen=127.0.0.1:0", "bidder.data_dir=" + filepath.Join(dir, name),
			"bidder.campaigns=" + campaignsFile, "bidder.token_keys=doc-test-token-key-0123456789",
			"bidder.shutdown_delay=0s", "bidder.shutdown_timeout=1s",
		}, sets...)
		for _, kv := range sets {
			k, v, _ := strings.Cut(kv, "=")
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	metrics := map[string]metric{}
	adminModes := map[string]map[string]bool{} // admin path -> modes serving it
	addAdmin := func(mode string, patterns []string) {
		for _, p := range patterns {
			if _, path, ok := strings.Cut(p, " "); ok {
				p = path
			}
			if adminModes[p] == nil {
				adminModes[p] = map[string]bool{}
			}
			adminModes[p][mode] = true
		}
	}

	// The catalog node first: the remote bidder uses it.
	nreg := newRecorder()
	n, err := node.StartRegistry(base("node", "mode=catalog"), nil, nreg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(ctx)
	addAdmin("catalog node", n.AdminRoutes())

	for _, setup := range []struct {
		name string
		sets []string
	}{
		{"local", []string{"bidder.fx_file=" + fxFile, "supply.dir=" + filepath.Join("bidder", "supply", "testdata", "supply")}},
		{"remote", []string{"catalog.target=static:///" + n.Addr(), "redis.addr=" + closed, "bidder.public_listen=127.0.0.1:0"}},
	} {
		reg := newRecorder()
		cfg := base(setup.name, setup.sets...)
		if setup.name == "remote" { // browsers apart, every exchange restricted: the source metrics
			cfg.Exchanges = configs.Exchanges{exchange.Default: {AllowCIDRs: []string{"127.0.0.0/8"}}}
		}
		s, err := server.StartRegistry(cfg, nil, reg)
		if err != nil {
			t.Fatalf("bidder (%s): %v", setup.name, err)
		}
		addAdmin("bidder", s.AdminRoutes())
		reg.metrics(t, metrics)
		if err := s.Shutdown(ctx); err != nil {
			t.Logf("bidder (%s) shutdown: %v", setup.name, err)
		}
	}
	preg := newRecorder()
	if s, err := server.StartRegistry(base("postgres", "campaigns.source=postgres",
		"campaigns.postgres.dsn=postgres://rtbd@"+closed+"/rtbd?connect_timeout=2"), nil, preg); err == nil {
		s.Shutdown(ctx)
		t.Fatal("a bidder started on a PostgreSQL that is not there")
	}
	preg.metrics(t, metrics)
	nreg.metrics(t, metrics)
	textfileMetrics(t, filepath.Join(dir, "ingest.prom"), metrics)

	// Every metric name in the product's code must have turned up.
	for _, name := range metricNamesInCode(t) {
		if _, ok := metrics[name]; !ok {
			t.Errorf("metric %s is in the code but no setup of this test registered it: add a setup to metricAndRouteItems", name)
		}
	}

	var items []item
	for name, m := range metrics {
		labels := "—"
		if len(m.labels) > 0 {
			labels = "`" + strings.Join(m.labels, "`, `") + "`"
		}
		it := item{kind: kindMetric, name: name, file: metricFile(name), checks: map[string]func(string) string{
			"labels": labelCheck(m.labels),
		}}
		typ := m.typ
		if typ != "" {
			it.checks["type"] = func(cell string) string {
				if cell == typ {
					return ""
				}
				return "want " + typ
			}
		} else {
			typ = "TYPE"
		}
		it.row = fmt.Sprintf("| `%s` | %s | %s | %s |", name, typ, labels, strings.ReplaceAll(m.help, "|", `\|`))
		items = append(items, it)
	}
	for _, p := range bidder.Routes() {
		items = append(items, routeItem(p, "bid"))
	}
	for p, modes := range adminModes {
		listener := "admin"
		switch {
		case modes["bidder"] && !modes["catalog node"]:
			listener = "admin (bidder)"
		case !modes["bidder"]:
			listener = "admin (catalog node)"
		}
		items = append(items, routeItem(p, listener))
	}
	return items
}

func routeItem(path, listener string) item {
	return item{kind: kindRoute, name: path, file: "bidder/REFERENCE.md",
		checks: map[string]func(string) string{"listener": func(cell string) string {
			if cell == listener {
				return ""
			}
			return "want " + listener
		}},
		row: fmt.Sprintf("| `%s` | %s | WHAT |", path, listener)}
}

// labelCheck accepts a labels cell that names exactly labels, each in
// backticks, optionally with its values (`result=ok|error`); "—" for none.
func labelCheck(labels []string) func(string) string {
	return func(cell string) string {
		var got []string
		for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
			n, _, _ := strings.Cut(m[1], "=")
			got = append(got, n)
		}
		slices.Sort(got)
		if slices.Equal(got, labels) && (len(labels) > 0 || cell == "—") {
			return ""
		}
		if len(labels) == 0 {
			return "want — (no labels)"
		}
		return "want the labels `" + strings.Join(labels, "`, `") + "`"
	}
}

var metricNameRE = regexp.MustCompile(`Name:\s*"(rtbd_[a-z0-9_]+)"`)

// metricNamesInCode returns the metric names written as Name: "rtbd_..."
// in the product's code (not tests).
func metricNamesInCode(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, dir := range []string{"admin", "bidder", "catalog", "configs", "ingest", "overload", "rtb"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range metricNameRE.FindAllSubmatch(b, -1) {
				names = append(names, string(m[1]))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// The checker finds what it is for: a missing item, a duplicate, a row in
// the wrong file, a stale row, a wrong cell.
func TestDocsCheck(t *testing.T) {
	items := []item{
		{kind: kindKey, name: "a.b", file: "configs/README.md", checks: map[string]func(string) string{"default": code("1s")}, row: "| `a.b` |"},
		{kind: kindKey, name: "a.c", file: "configs/README.md", row: "| `a.c` |"},
		{kind: kindFlag, cmd: "rtbd gen", name: "-out", file: "ingest/README.md"},
		{kind: kindMetric, name: "rtbd_x_total", file: "bidder/README.md", checks: map[string]func(string) string{"labels": labelCheck([]string{"kind"})}},
		{kind: kindRoute, name: "/event", file: "bidder/README.md"},
		{kind: kindFlag, cmd: "rtbd bench store", name: "-q", file: "bench/README.md"},
		{kind: kindFlag, cmd: "rtbd bench all", name: "-q", file: "bench/README.md"},
	}
	var rows []row
	rows = append(rows, parseTables("configs/README.md", "| key | default |\n|---|---|\n| `a.b` | `2s` |\n| `a.old` | x |\n")...)
	rows = append(rows, parseTables("ingest/README.md", "| `rtbd gen` flag | default |\n|---|---|\n| `-out` | — |\n\n| `rtbd gen` flag | default |\n|---|---|\n| `-out` | — |\n")...)
	rows = append(rows, parseTables("bench/README.md", "| `rtbd bench store`, `rtbd bench all` flag | default |\n|---|---|\n| `-q` | `false` |\n")...)
	rows = append(rows, parseTables("catalog/README.md", "| metric | labels |\n|---|---|\n| `rtbd_x_total` | `kind=a\\|b` |\n")...)
	rows = append(rows, parseTables("bidder/README.md", "| route | what |\n|---|---|\n| `GET /event?pg=G` | pixel |\n\n| name | x |\n|---|---|\n| `a.c` | not a reference table |\n")...)
	got := checkDocs(items, rows)
	want := []string{
		"config key a.b at configs/README.md:3: column \"default\" is \"`2s`\": want `1s`",
		"config key a.c has no row",
		"flag rtbd gen -out has 2 rows (ingest/README.md:3, ingest/README.md:7)",
		"metric rtbd_x_total is at catalog/README.md:3: it belongs in the metric table",
		"stale key row at configs/README.md:4",
	}
	wantPrefixes(t, "problem", got, want)
}
