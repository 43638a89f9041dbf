package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

const (
	rulesFile     = "prometheus/rtbd-alerts.yaml"
	casesFile     = "prometheus/rtbd-alerts.cases.yaml"
	dashboardFile = "grafana/rtbd.json"
)

// expression is one PromQL expression of the kit, and where it is.
type expression struct{ where, expr string }

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// expressions returns every PromQL expression of the alert rules and the
// dashboard.
func expressions(t *testing.T) []expression {
	t.Helper()
	var out []expression
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(data, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out = append(out, expression{rulesFile + ": " + r.Alert + r.Record, r.Expr})
			if r.Alert != "" && r.Annotations["runbook"] == "" {
				t.Errorf("%s: alert %s has no runbook annotation", rulesFile, r.Alert)
			}
		}
	}
	data, err = os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				where = dashboardFile + ": " + title
			}
			if e, ok := v["expr"].(string); ok {
				out = append(out, expression{where, e})
			}
			for _, c := range v {
				walk(c, where)
			}
		case []any:
			for _, c := range v {
				walk(c, where)
			}
		}
	}
	walk(dash, dashboardFile)
	return out
}

// grafanaVars stand for Grafana's variables in a query.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// selector is one series selector of an expression: its metric name and
// the matchers of its labels.
type selector struct {
	name     string
	matchers []*labels.Matcher
}

// selectors parses expr and returns its series selectors.
func selectors(expr string) ([]selector, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		return nil, err
	}
	var out []selector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := selector{name: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				if m.Type == labels.MatchEqual {
					s.name = m.Value
				}
				continue
			}
			s.matchers = append(s.matchers, m)
		}
		out = append(out, s)
		return nil
	})
	return out, nil
}

// exported is what the processes export: every series name (a histogram's
// _bucket, _count and _sum), and the le values of each histogram.
type exported struct {
	names   map[string]string // series name -> who exports it
	buckets map[string]map[float64]bool
}

func (x *exported) add(who string, mfs map[string]*dto.MetricFamily) {
	for name, mf := range mfs {
		names := []string{name}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			names = append(names, name+"_bucket", name+"_count", name+"_sum")
			b := map[float64]bool{}
			for _, m := range mf.GetMetric() {
				for _, bk := range m.GetHistogram().GetBucket() {
					b[bk.GetUpperBound()] = true
				}
			}
			x.buckets[name+"_bucket"] = b
		case dto.MetricType_SUMMARY:
			names = append(names, name+"_count", name+"_sum")
		}
		for _, n := range names {
			x.names[n] = who
		}
	}
}

// check returns the problems of expr's selectors against what is exported.
func (x *exported) check(expr string) []string {
	sels, err := selectors(expr)
	if err != nil {
		return []string{"does not parse: " + err.Error()}
	}
	var problems []string
	for _, s := range sels {
		if !strings.HasPrefix(s.name, "rtbd_") {
			problems = append(problems, fmt.Sprintf("selector %q: not an rtbd metric", s.name))
			continue
		}
		if _, ok := x.names[s.name]; !ok {
			problems = append(problems, fmt.Sprintf("metric %s: no bidder, catalog node or ingest textfile exports it", s.name))
			continue
		}
		for _, m := range s.matchers {
			if m.Name != "le" || m.Type != labels.MatchEqual {
				continue
			}
			le, err := strconv.ParseFloat(m.Value, 64)
			if err != nil || !x.buckets[s.name][le] {
				problems = append(problems, fmt.Sprintf("%s{le=%q}: no such bucket", s.name, m.Value))
			}
		}
	}
	return problems
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return parseMetrics(t, url, resp.Body)
}

func parseMetrics(t *testing.T, what string, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return mfs
}

// liveMetrics starts a catalog node and a bidder on it (the demo's
// catalog and campaigns), makes a bid and charges it, scrapes both, and
// reads the textfile of an ingest run.
func liveMetrics(t *testing.T) *exported {
	t.Helper()
	dir := t.TempDir()
	demo := filepath.Join(dir, "demo")
	if _, errOut, err := rtbd(t, nil, "gen", "-demo", "-hint=false", "-out", demo); err != nil {
		t.Fatalf("rtbd gen -demo: %v\n%s", err, errOut)
	}
	prom := filepath.Join(dir, "rtbd_ingest.prom")
	if _, errOut, err := rtbd(t, nil, "ingest", "-data", filepath.Join(dir, "idx"), "-progress", "none", "-textfile", prom, filepath.Join(demo, "feed.csv.gz")); err != nil {
		t.Fatalf("rtbd ingest: %v\n%s", err, errOut)
	}
	grpcAddr, nodeAdmin := freeAddr(t), freeAddr(t)
	node := start(t, exec.Command(rtbdBin, "-config", filepath.Join(demo, "rtbd.yaml"), "-mode=catalog",
		"-grpc-listen", grpcAddr, "-admin-listen", nodeAdmin))
	waitReady(t, "http://"+nodeAdmin+"/readyz", node)
	httpAddr, bidderAdmin := freeAddr(t), freeAddr(t)
	bidder := start(t, exec.Command(rtbdBin, "-config", filepath.Join(demo, "rtbd.yaml"), "-catalog", "static:///"+grpcAddr,
		"-http-listen", httpAddr, "-admin-listen", bidderAdmin, "-set", "bidder.shutdown_delay=0s"))
	waitReady(t, "http://"+bidderAdmin+"/readyz", bidder)
	bid(t, httpAddr, filepath.Join(demo, "sample-request.json"), true)

	x := &exported{names: map[string]string{}, buckets: map[string]map[float64]bool{}}
	x.add("catalog node", scrape(t, "http://"+nodeAdmin+"/metrics"))
	x.add("bidder", scrape(t, "http://"+bidderAdmin+"/metrics"))
	f, err := os.Open(prom)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x.add("ingest textfile", parseMetrics(t, prom, f))
	return x
}

var priceMacro = regexp.MustCompile(`\$\{AUCTION_PRICE(:[A-Z0-9]+)?\}`)

// bid posts the sample request to the bidder at addr and wants a bid;
// bill also fires its billing notice.
func bid(t *testing.T, addr, request string, bill bool) {
	t.Helper()
	body, err := os.ReadFile(request)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/openrtb2/bid", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var br struct {
		SeatBid []struct {
			Bid []struct {
				BURL  string  `json:"burl"`
				Price float64 `json:"price"`
			} `json:"bid"`
		} `json:"seatbid"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(out, &br) != nil || len(br.SeatBid) == 0 || len(br.SeatBid[0].Bid) == 0 {
		t.Fatalf("bid: %d %.300s", resp.StatusCode, out)
	}
	if !bill {
		return
	}
	burl := br.SeatBid[0].Bid[0].BURL
	if i := strings.Index(burl, "/bill"); i >= 0 {
		burl = "http://" + addr + burl[i:]
	}
	// cleared at the bid's own price: a shaded first-price bid may be
	// below any fixed one, and a price above the bid is refused
	nr, err := http.Get(priceMacro.ReplaceAllString(burl, strconv.FormatFloat(br.SeatBid[0].Bid[0].Price, 'f', -1, 64)))
	if err != nil {
		t.Fatal(err)
	}
	nr.Body.Close()
	if nr.StatusCode != http.StatusNoContent {
		t.Fatalf("bill notice %s: %d", burl, nr.StatusCode)
	}
}

// TestMetricNames: every PromQL expression of the dashboard and the
// alerts parses, and every metric it reads is exported by a real bidder,
// catalog node or ingest run (and every le it names is a bucket), so a
// renamed metric fails here.
func TestMetricNames(t *testing.T) {
	exprs := expressions(t)
	if len(exprs) < 20 {
		t.Fatalf("%d expressions read", len(exprs))
	}
	x := liveMetrics(t)
	used := map[string]bool{}
	for _, e := range exprs {
		for _, p := range x.check(e.expr) {
			t.Errorf("%s: %s", e.where, p)
		}
		sels, _ := selectors(e.expr)
		for _, s := range sels {
			used[s.name] = true
		}
	}
	// The check fails on a renamed metric and on a bucket that is not one.
	for _, bad := range []string{`rate(rtbd_bidder_requests_totl[5m])`, `rtbd_bidder_request_seconds_bucket{le="0.11"}`, `up`} {
		if len(x.check(bad)) == 0 {
			t.Errorf("the check passes %s", bad)
		}
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d expressions read %d metrics", len(exprs), len(names))
}

// TestPromtoolCheckRules: promtool (Debian's prometheus package; make
// test-deploy installs it) accepts the rules.
func TestPromtoolCheckRules(t *testing.T) {
	promtool := lookPromtool(t)
	out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestAlertCases runs the unit tests of the alerts (rtbd-alerts.cases.yaml)
// with promtool test rules, on a copy of the rules without annotations
// (the cases check labels only).
func TestAlertCases(t *testing.T) {
	promtool := lookPromtool(t)
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules map[string]any
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			delete(r.(map[string]any), "annotations")
		}
	}
	dir := t.TempDir()
	stripped, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, filepath.Base(rulesFile)), string(stripped))
	cases, err := os.ReadFile(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, filepath.Base(casesFile)), string(cases))
	cmd := exec.Command(promtool, "test", "rules", filepath.Base(casesFile))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

func lookPromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: apt-get install prometheus (make test-deploy installs it)")
	}
	return p
}
