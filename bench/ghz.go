package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/rtbd/rtbd/bench/internal/proc"
	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/internal/cliflag"
)

// DefaultGHZ is where `make bench-ghz` looks for ghz first (then $PATH).
const DefaultGHZ = "/tmp/bin/ghz"

// GHZInstall is how to install the ghz the comparison was written for.
const GHZInstall = "GOBIN=/tmp/bin go install github.com/bojand/ghz/cmd/ghz@v0.121.0"

// ghzReport is the part of ghz's JSON report (-O json) the comparison
// reads; times are nanoseconds.
type ghzReport struct {
	Count   int64   `json:"count"`
	Total   int64   `json:"total"`
	Average int64   `json:"average"`
	Fastest int64   `json:"fastest"`
	Slowest int64   `json:"slowest"`
	RPS     float64 `json:"rps"`
	Latency []struct {
		Percentage int   `json:"percentage"`
		Latency    int64 `json:"latency"`
	} `json:"latencyDistribution"`
	StatusCodes map[string]int64 `json:"statusCodeDistribution"`
	ErrorDist   map[string]int64 `json:"errorDistribution"`
}

// parseGHZReport reads ghz's JSON report.
func parseGHZReport(b []byte) (*ghzReport, error) {
	var r ghzReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: ghz report: %w", err)
	}
	if r.Count == 0 && r.Total == 0 {
		return nil, fmt.Errorf("bench: ghz report: no calls (not a ghz JSON report?)")
	}
	return &r, nil
}

// percentileMs is ghz's latency at percentage p in ms, -1 when absent.
func (r *ghzReport) percentileMs(p int) float64 {
	for _, l := range r.Latency {
		if l.Percentage == p {
			return float64(l.Latency) / 1e6
		}
	}
	return -1
}

// errors is every call not answered OK.
func (r *ghzReport) errors() int64 {
	var n int64
	for code, c := range r.StatusCodes {
		if code != "OK" {
			n += c
		}
	}
	return n
}

// GHZCall is one ghz run of the comparison with the node's CPU over it.
type GHZCall struct {
	Name       string
	Report     *ghzReport
	NodeCPUSec float64
}

// cpuPerCallUs is the node's CPU per call in microseconds.
func (c GHZCall) cpuPerCallUs() float64 {
	if c.Report == nil || c.Report.Count == 0 {
		return -1
	}
	return c.NodeCPUSec / float64(c.Report.Count) * 1e6
}

// writeGHZComparison prints the runs and the ratios of the first to the
// second (GetProductMasters over the empty health call).
func writeGHZComparison(w io.Writer, title string, calls []GHZCall) {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "call\tcalls\tcalls/s\tavg ms\tp50 ms\tp99 ms\terrors\tnode CPU us/call")
	for _, c := range calls {
		r := c.Report
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%d\t%.1f\n", c.Name, r.Count, r.RPS, float64(r.Average)/1e6,
			r.percentileMs(50), r.percentileMs(99), r.errors(), c.cpuPerCallUs())
	}
	tw.Flush()
	if len(calls) < 2 {
		return
	}
	a, b := calls[0], calls[1]
	ratio := func(x, y float64) string {
		if x < 0 || y <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", x/y)
	}
	fmt.Fprintf(w, "ratio %s / %s: p50 %s, p99 %s, avg %s, node CPU per call %s\n", a.Name, b.Name,
		ratio(a.Report.percentileMs(50), b.Report.percentileMs(50)), ratio(a.Report.percentileMs(99), b.Report.percentileMs(99)),
		ratio(float64(a.Report.Average), float64(b.Report.Average)), ratio(a.cpuPerCallUs(), b.cpuPerCallUs()))
}

// findGHZ returns the ghz binary: path if given, else DefaultGHZ, else
// ghz on $PATH.
func findGHZ(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("bench: ghz %s: %w", path, err)
		}
		return path, nil
	}
	if _, err := os.Stat(DefaultGHZ); err == nil {
		return DefaultGHZ, nil
	}
	if p, err := exec.LookPath("ghz"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("bench: ghz not found in %s or on $PATH; install it: %s", DefaultGHZ, GHZInstall)
}

// runGHZ runs ghz with args (plus -O json) and measures pid's CPU over it.
func runGHZ(ctx context.Context, ghz string, args []string, pid int) (*ghzReport, float64, error) {
	cpu0, err := proc.CPU(pid)
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.CommandContext(ctx, ghz, append([]string{"-O", "json"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	cpu1, err := proc.CPU(pid)
	if err != nil {
		return nil, 0, err
	}
	r, perr := parseGHZReport(out.Bytes())
	if perr != nil {
		if runErr != nil {
			return nil, 0, fmt.Errorf("bench: ghz %v: %w: %s", args, runErr, bytes.TrimSpace(errb.Bytes()))
		}
		return nil, 0, perr
	}
	return r, (cpu1 - cpu0).Seconds(), nil
}

func ghzMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench ghz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ghzPath := fs.String("ghz", "", "ghz binary (default "+DefaultGHZ+", then $PATH)")
	products := fs.Int("products", 100_000, "catalog products")
	groups := fs.Int("groups", 10, "catalog groups")
	ids := fs.Int("ids", 15, "ids per GetProductMasters call")
	rate := fs.Int("rate", 500, "ghz -r: calls/s (0: as fast as the workers go)")
	conc := fs.Int("concurrency", 20, "ghz -c: workers")
	conns := fs.Int("connections", 2, "ghz --connections")
	dur := fs.Duration("duration", 10*time.Second, "ghz -z per call")
	warm := fs.Duration("warmup", 2*time.Second, "GetProductMasters for this long first, not reported")
	data := fs.String("data", "", "index directory to use (or build and keep); default a temporary one")
	work := fs.String("work", "", "directory for the node's log and the request file (kept)")
	exe := fs.String("rtbd", "", "rtbd binary of the node (default: this executable)")
	seeFlags(fs)
	if err := cliflag.ParseNoArgs(fs, args, stderr, ErrUsage); err != nil {
		return err
	}
	if *products < *groups || *groups < 1 || *ids < 1 || *rate < 0 || *conc < 1 || *conns < 1 || *dur <= 0 {
		return fmt.Errorf("%w: rtbd bench ghz: want products >= groups >= 1, ids >= 1, rate >= 0, concurrency and connections >= 1, duration > 0", ErrUsage)
	}
	ghz, err := findGHZ(*ghzPath)
	if err != nil {
		return err
	}
	bin, err := executable(*exe)
	if err != nil {
		return err
	}
	workDir, cleanWork, err := makeWorkDir(*work)
	if err != nil {
		return err
	}
	defer cleanWork()
	dir := *data
	if dir == "" {
		dir = filepath.Join(workDir, "catalog")
	}
	if _, err := catalog.ReadPointer(dir, catalog.CurrentFile); err != nil {
		fmt.Fprintf(stderr, "bench: building the index of %d products in %d groups in %s\n", *products, *groups, dir)
		if err := BuildSyntheticIndex(dir, *products, *groups); err != nil {
			return err
		}
	}
	reqFile := filepath.Join(workDir, fmt.Sprintf("req%d.json", *ids))
	if err := writeGHZData(reqFile, CatalogWorkload{Products: *products, Groups: *groups, IDs: *ids}, 20_000, 1, stderr); err != nil {
		return err
	}
	node := newCatalogNode("catalog-node", bin, dir, workDir, nil)
	if err := node.start(ctx, false); err != nil {
		return err
	}
	defer node.stop(15 * time.Second)
	fmt.Fprintf(stderr, "bench: catalog node pid %d on %s; ghz %s\n", node.PID(), node.Addr(), ghz)
	common := []string{"--insecure", "-r", strconv.Itoa(*rate), "-c", strconv.Itoa(*conc), "--connections", strconv.Itoa(*conns)}
	pm := append(append([]string{"--call", "rtbd.catalog.v1.Catalog/GetProductMasters", "-D", reqFile}, common...), "-z")
	health := append(append([]string{"--call", "grpc.health.v1.Health/Check", "-d", "{}"}, common...), "-z")
	if *warm > 0 {
		if _, _, err := runGHZ(ctx, ghz, append(append([]string{}, pm...), warm.String(), node.Addr()), node.PID()); err != nil {
			return err
		}
	}
	var calls []GHZCall
	for _, c := range []struct {
		name string
		args []string
	}{{fmt.Sprintf("GetProductMasters %d ids", *ids), pm}, {"Health/Check (empty)", health}} {
		fmt.Fprintf(stderr, "bench: ghz %s for %v\n", c.name, *dur)
		r, cpu, err := runGHZ(ctx, ghz, append(append([]string{}, c.args...), dur.String(), node.Addr()), node.PID())
		if err != nil {
			return err
		}
		calls = append(calls, GHZCall{Name: c.name, Report: r, NodeCPUSec: cpu})
	}
	writeGHZComparison(stdout, fmt.Sprintf("ghz against one catalog node (%d products, %d groups; ghz -r %d -c %d --connections %d -z %v; node CPU from /proc/PID/stat)",
		*products, *groups, *rate, *conc, *conns, *dur), calls)
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return nil
}
