package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rtbd/rtbd"

// layers are the parts of the module, as ARCHITECTURE.md draws them, and
// the other parts each may import, with their subpackages (a part may
// always import its own packages and the parts below its path).
// A package belongs to the part with the longest path that is a prefix of
// its own; "" is the module root (main), which may import everything. The
// rules hold for every package's tests as well.
var layers = map[string][]string{
	"rtb":               nil,
	"rtb/money":         nil, // amounts and currencies: the lowest layer
	"internal":          nil, // what all parts share: CPU time, subcommand flags, splitmix64
	"configs":           {"rtb/money"},
	"admin":             {"configs"},
	"catalog/catalogpb": nil,
	"catalog/internal":  {"catalog/catalogpb"},
	"records":           {"internal"}, // log-level records: schema, reader, sinks, report
	"overload":          nil,          // in-flight bound, admission, connection limits, drain, rate limits
	"catalog":           {"configs", "admin", "internal", "overload"},
	"ingest":            {"catalog", "configs", "admin", "rtb/money", "internal", "records"},
	"bidder":            {"rtb", "catalog", "configs", "admin", "internal", "records", "overload"},
	"gen":               {"bidder", "rtb", "catalog", "configs", "admin", "ingest", "internal", "records", "overload"}, // the rtbd gen -demo environment: it writes a feed and ingests it
	"bench":             {"rtb", "catalog", "ingest", "bidder", "configs", "admin", "internal", "records", "overload", "gen"},
	"":                  {"rtb", "catalog", "ingest", "bidder", "bench", "configs", "admin", "internal", "records", "overload", "gen"},
}

// never lists imports that the rules of the parts allow but that would put
// a concept in the wrong home; they apply to the package itself, not its
// tests (the server package's tests may check it against the client).
var never = map[string][]string{
	// The server package knows nothing of its client or its node process.
	"catalog": {"catalog/remote", "catalog/node", "catalog/catalogtest"},
}

// partOf returns the part of rel (a path relative to the module): the
// longest key of layers that equals rel or is a parent directory of it.
func partOf(rel string) string {
	best := ""
	for p := range layers {
		if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > len(best) {
			best = p
		}
	}
	return best
}

// rel returns the module-relative path of a `go list -test` import path
// ("github.com/rtbd/rtbd/catalog [github.com/rtbd/rtbd/catalog.test]" is
// catalog), and whether it is in the module at all. The test main packages
// (".test") are not.
func rel(path string) (string, bool) {
	path, _, _ = strings.Cut(path, " ")
	if strings.HasSuffix(path, ".test") {
		return "", false
	}
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return strings.TrimSuffix(r, "_test"), ok
}

// pkg is one line of `go list -deps -test`: a package (or a test variant
// of one) and its direct imports.
type pkg struct {
	path    string
	imports []string
}

// violations returns every import of pkgs against layers and never.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := rel(p.path)
		if !ok {
			continue
		}
		part := partOf(from)
		if part == "" && from != "" {
			out = append(out, fmt.Sprintf("%s is in no part: add its folder to layers (and to ARCHITECTURE.md)", from))
			continue
		}
		isTest := strings.Contains(p.path, " ") || strings.HasSuffix(p.path, "_test")
		for _, imp := range p.imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if toPart := partOf(to); toPart == "" && to != "" {
				continue // reported as a package of its own
			} else if !allowed(part, toPart) {
				out = append(out, fmt.Sprintf("%s imports %s: %s may import only %v", shown(from), shown(to), shown(part), layers[part]))
			}
			if !isTest && slices.Contains(never[from], to) {
				out = append(out, fmt.Sprintf("%s imports %s", shown(from), shown(to)))
			}
			if !isTest && !testHelper(from) && testHelper(to) {
				out = append(out, fmt.Sprintf("%s imports the test helper %s: only tests and other test helpers may", shown(from), shown(to)))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// testHelper reports whether rel is a test-helper package: one whose name
// ends in "test" (bidder/spend/spendtest, internal/aerospiketest, ...).
// Product code never imports one; tests and other test helpers do.
func testHelper(rel string) bool {
	return strings.HasSuffix(path.Base(rel), "test")
}

// allowed reports whether a package of part may import one of toPart.
func allowed(part, toPart string) bool {
	if part == "" || toPart == part || strings.HasPrefix(toPart, part+"/") {
		return true
	}
	for _, m := range layers[part] {
		if toPart == m || strings.HasPrefix(toPart, m+"/") {
			return true
		}
	}
	return false
}

// topOf is the top-level folder of a part ("catalog" for "catalog/catalogpb").
func topOf(part string) string {
	top, _, _ := strings.Cut(part, "/")
	return top
}

func shown(rel string) string {
	if rel == "" {
		return "main"
	}
	return rel
}

// goList runs `go list -deps -test` over patterns in the module root.
func goList(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		goCmd = p
	}
	args := append([]string{"list", "-deps", "-test", "-f", "{{.ImportPath}}\t{{join .Imports \"\\t\"}}"}, patterns...)
	cmd := exec.Command(goCmd, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		pkgs = append(pkgs, pkg{path: f[0], imports: f[1:]})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	return pkgs
}

// TestLayers checks every import of the module's packages and their tests
// against the layers of ARCHITECTURE.md.
func TestLayers(t *testing.T) {
	for _, v := range violations(goList(t, "./...")) {
		t.Error(v)
	}
}

// TestProductWithoutBench: nothing the product is built or tested from is
// under bench, however indirectly.
func TestProductWithoutBench(t *testing.T) {
	for _, p := range goList(t, "./bidder/...", "./catalog/...", "./ingest/...", "./rtb/...", "./configs/...", "./admin/...", "./overload/...", "./gen/...") {
		if r, ok := rel(p.path); ok && topOf(r) == "bench" {
			t.Errorf("%s is a dependency of the product or its tests", p.path)
		}
	}
}

// The checker finds what it is for.
func TestViolations(t *testing.T) {
	bad := []pkg{
		{module + "/catalog", []string{module + "/bidder", module + "/catalog/catalogpb", module + "/catalog/remote"}},
		{module + "/catalog [" + module + "/catalog.test]", []string{module + "/catalog/remote"}},
		{module + "/rtb_test [" + module + "/rtb.test]", []string{module + "/rtb", module + "/bench"}},
		{module + "/bidder/spend", []string{module + "/ingest/feedgen", module + "/bidder/campaign"}},
		{module + "/catalog/catalogtest", []string{module + "/ingest/feedgen", module + "/catalog"}},
		{module + "/configs", []string{module + "/admin"}},
		{module, []string{module + "/bench", module + "/gen/demo"}},
		{module + "/bidder", []string{module + "/gen/demo"}},
		{module + "/bench/internal/proc", []string{module + "/bidder/user"}},
		{module + "/newpart", []string{module + "/rtb"}},
		{module + "/bidder", []string{module + "/newpart"}},
		{module + "/bidder/user/pebblestore", []string{module + "/bidder/user/usertest"}},
		{module + "/bidder/user/pebblestore [" + module + "/bidder/user/pebblestore.test]", []string{module + "/bidder/user/usertest"}},
		{module + "/bidder/user/aerostore_test [" + module + "/bidder/user/aerostore.test]", []string{module + "/internal/aerospiketest"}},
		{module + "/bidder/internal/aero/aerostoretest", []string{module + "/internal/aerospiketest"}},
	}
	got := violations(bad)
	want := []string{
		"bidder imports gen/demo",
		"bidder/spend imports ingest/feedgen",
		"bidder/user/pebblestore imports the test helper bidder/user/usertest",
		"catalog imports bidder",
		"catalog imports catalog/remote",
		"catalog/catalogtest imports ingest/feedgen",
		"configs imports admin",
		"newpart is in no part",
		"rtb imports bench",
	}
	wantPrefixes(t, "violation", got, want)
}

// wantPrefixes checks that got has as many lines as want and that each
// starts with the line of want at its place; what names a line in failures.
func wantPrefixes(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%ss:\n%s\nwant %d, starting:\n%s", what, strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("%s %d: %q, want it to start %q", what, i, got[i], want[i])
		}
	}
}
