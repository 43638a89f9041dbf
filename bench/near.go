package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/valyala/fasthttp"
)

// EnvNearCacheBytes sets the default of the -near-cache flag.
const EnvNearCacheBytes = "RTBD_BENCH_NEAR_CACHE_BYTES"

// nearCacheFlag is -near-cache: a byte count, or "" for the bidder's own
// setting. envErr is a bad $RTBD_BENCH_NEAR_CACHE_BYTES, which parseFlags
// reports once the command line is parsed.
type nearCacheFlag struct {
	args   *[]string
	val    string
	n      int64
	envErr error
}

func (f *nearCacheFlag) String() string { return f.val }

func (f *nearCacheFlag) Set(v string) error {
	n, err := parseByteSize(v)
	if err != nil {
		return err
	}
	f.val, f.n = v, n
	*f.args = append(*f.args, "-set", "catalog.near_cache_bytes="+strconv.FormatInt(n, 10))
	return nil
}

// nearFlag registers -near-cache on fs; a set flag (or $RTBD_BENCH_NEAR_CACHE_BYTES)
// appends "-set catalog.near_cache_bytes=N" to args.
func nearFlag(fs *flag.FlagSet, args *[]string) *nearCacheFlag {
	f := &nearCacheFlag{args: args}
	if v := os.Getenv(EnvNearCacheBytes); v != "" {
		if err := f.Set(v); err != nil {
			f.envErr = fmt.Errorf("$%s: %w", EnvNearCacheBytes, err)
		}
	}
	fs.Var(f, "near-cache", "near cache size of the started bidders on a remote catalog (catalog.near_cache_bytes; a size: 0, 64MiB, 1GiB; env "+EnvNearCacheBytes+"); default the bidder's config")
	return f
}

// parseByteSize reads a byte count: a plain integer or one with a suffix
// B, KB/MB/GB (powers of 1000) or KiB/MiB/GiB (powers of 1024).
func parseByteSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if len(s) > len(u.suffix) && s[len(s)-len(u.suffix):] == u.suffix {
			num, mult = s[:len(s)-len(u.suffix)], u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("want a size in bytes from 0 to 1TiB (e.g. 0, 67108864, 64MiB), got %q", s)
	}
	return n * mult, nil
}

// NearStats are the near cache's hits and misses over a run, read from
// the remote client's NearLookupsMetric (results "hit" and "hit_absent"
// are hits). Found is false when the counter is absent (no near cache).
type NearStats struct {
	Hits, Misses float64
	Found        bool
}

// NearLookupsMetric is the remote client's near-cache lookup counter.
const NearLookupsMetric = "rtbd_catalog_client_near_cache_lookups_total"

// Sub is s minus an earlier reading a.
func (s NearStats) Sub(a NearStats) NearStats {
	return NearStats{Hits: s.Hits - a.Hits, Misses: s.Misses - a.Misses, Found: s.Found}
}

// Ratio is the hit ratio, "n/a" when nothing was counted.
func (s NearStats) Ratio() string {
	if !s.Found || s.Hits+s.Misses <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*s.Hits/(s.Hits+s.Misses))
}

// String is "hit ratio R (H hits, M misses)" or "n/a (...)".
func (s NearStats) String() string {
	if !s.Found {
		return "n/a (no " + NearLookupsMetric + ")"
	}
	return fmt.Sprintf("hit ratio %s (%.0f hits, %.0f misses)", s.Ratio(), s.Hits, s.Misses)
}

// nearStatsOf sums the near-cache lookup counter of fams.
func nearStatsOf(fams []*dto.MetricFamily) NearStats {
	var s NearStats
	for _, f := range fams {
		if f.GetName() != NearLookupsMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			for _, l := range m.GetLabel() {
				if l.GetName() != "result" {
					continue
				}
				switch {
				case strings.HasPrefix(l.GetValue(), "hit"):
					s.Hits, s.Found = s.Hits+v, true
				case l.GetValue() == "miss":
					s.Misses, s.Found = s.Misses+v, true
				}
			}
		}
	}
	return s
}

// readNearStats reads a /metrics URL; Found is false when it cannot be
// read or parsed within 2 s.
func readNearStats(url string) NearStats {
	status, body, err := fasthttp.GetTimeout(nil, url, 2*time.Second)
	if err != nil || status != fasthttp.StatusOK {
		return NearStats{}
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return NearStats{}
	}
	return nearStatsOf(slices.Collect(maps.Values(fams)))
}

// gatherNearStats reads the harness's own remote client's registry.
func gatherNearStats(g prometheus.Gatherer) NearStats {
	fams, _ := g.Gather()
	return nearStatsOf(fams)
}

// cpuPerRequestUs is the CPU the watched processes whose name starts with
// prefix spent per request of r, in microseconds (-1 when r has none).
func cpuPerRequestUs(r *Result, prefix string) float64 {
	var cpu float64
	found := false
	for _, p := range r.Processes {
		if strings.HasPrefix(p.Name, prefix) && p.Error == "" {
			cpu += p.CPUSec
			found = true
		}
	}
	if !found || r.Requests == 0 {
		return -1
	}
	return cpu / float64(r.Requests) * 1e6
}

// remoteLocalLines compares each bid result of the second topology with
// the first's of the same weight and popularity: successful bids/s, the
// CPU per bid request of the bidder and of the catalog nodes (from
// /proc), and the remote bidder's near-cache hit ratio. Nothing when
// fewer than two topologies ran.
func remoteLocalLines(topologies []string, rs []*Result, near map[string]NearStats) []string {
	if len(topologies) < 2 {
		return nil
	}
	local, remote := topologies[0], topologies[1]
	byName := map[string]*Result{}
	for _, r := range rs {
		byName[r.Target] = r
	}
	var out []string
	for _, r := range rs {
		rest, ok := strings.CutPrefix(r.Target, remote+"/")
		l := byName[local+"/"+rest]
		if !ok || l == nil || strings.HasSuffix(rest, " win") || strings.HasSuffix(rest, " event") || strings.HasSuffix(rest, " bids only 2x") {
			continue
		}
		lb, rb, rn := cpuPerRequestUs(l, "bidder"), cpuPerRequestUs(r, "bidder"), cpuPerRequestUs(r, "catalog-node")
		remoteCPU := rb
		if rb >= 0 && rn >= 0 {
			remoteCPU = rb + rn
		}
		out = append(out, fmt.Sprintf("remote vs local %s: bids/s %s vs %s (%s); CPU per bid request: local bidder %s, remote bidder %s + nodes %s = %s (%s); near cache %s",
			rest, fmtRate(bidsPerSec(r)), fmtRate(bidsPerSec(l)), timesOrNA(bidsPerSec(l), bidsPerSec(r)),
			usOrNA(lb), usOrNA(rb), usOrNA(rn), usOrNA(remoteCPU), timesOrNA(lb, remoteCPU), near[r.Target].Ratio()))
	}
	return out
}

// bidsPerSec is r's successful requests per second.
func bidsPerSec(r *Result) float64 { return float64(r.Successes) / max(r.ElapsedSec, 1e-9) }

// timesOrNA is b/a as "1.25x", "n/a" when a or b was not measured.
func timesOrNA(a, b float64) string {
	if a <= 0 || b < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", b/a)
}

// usOrNA is microseconds as "12 us", "n/a" when not measured (< 0).
func usOrNA(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f us", v)
}

// nearMain is `rtbd bench near`: the bidder level with Zipf and uniform
// users and the near cache on the remote bidder (with -overload), then
// the store level with its grpc-near target; reports in -out/near and
// -out/near-store.
func nearMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rtbd bench near", flag.ContinueOnError)
	size := fs.String("near-cache", "256MiB", "near cache of the remote bidder and of the grpc-near target (a size)")
	out := fs.String("out", "", "directory of the two reports (near/ and near-store/)")
	users := fs.Int("users", 100_000, "users of each popularity")
	rate := fs.Float64("rate", 2000, "bidder level offered bid rate, req/s")
	dur := fs.Duration("duration", 5*time.Second, "measured time per run")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	outOf := func(sub string) []string {
		if *out == "" {
			return nil
		}
		return []string{"-out", filepath.Join(*out, sub)}
	}
	bargs := append([]string{"-popularity", "zipf,uniform", "-users", strconv.Itoa(*users), "-weights", "15", "-nodes", "1",
		"-rate", strconv.FormatFloat(*rate, 'f', -1, 64), "-duration", dur.String(), "-win-ratio", "0", "-event-rate", "-1",
		"-overload", "-near-cache", *size}, outOf("near")...)
	if err := bidderMain(ctx, bargs, stdout, stderr); err != nil {
		return err
	}
	sargs := append([]string{"-weights", "15", "-rate", "1000", "-duration", (2 * *dur).String(), "-near-cache", *size}, outOf("near-store")...)
	return storeMain(ctx, sargs, stdout, stderr)
}
