package bench

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestParseNearStatsNames(t *testing.T) {
	cases := []struct {
		name, body   string
		hits, misses float64
		found        bool
		ratio        string
	}{
		{"absent", `# TYPE rtbd_catalog_client_calls_total counter
rtbd_catalog_client_calls_total{result="ok"} 100
rtbd_bidder_hits_total 5
`, 0, 0, false, "n/a"},
		{"one counter, result label", `# TYPE rtbd_catalog_client_near_lookups_total counter
rtbd_catalog_client_near_lookups_total{result="hit"} 75
rtbd_catalog_client_near_lookups_total{result="miss"} 25
rtbd_catalog_client_near_lookups_total{result="stale"} 3
`, 75, 25, true, "75.0%"},
		{"two counters by name", `rtbd_catalog_client_near_hits_total 9
rtbd_catalog_client_near_misses_total 1
rtbd_catalog_client_near_bytes 123456
rtbd_catalog_client_near_hit_ratio 0.9
rtbd_catalog_client_near_entries 40
`, 9, 1, true, "90.0%"},
		{"per product list", `rtbd_catalog_client_near_hits_total{list="1"} 2
rtbd_catalog_client_near_hits_total{list="2"} 3
rtbd_catalog_client_near_misses_total{list="1"} 5
`, 5, 5, true, "50.0%"},
		{"histograms ignored", `rtbd_catalog_client_near_miss_seconds_bucket{le="0.001"} 4
rtbd_catalog_client_near_miss_seconds_count 4
rtbd_catalog_client_near_hits_total 0
rtbd_catalog_client_near_misses_total 0
`, 0, 0, true, "n/a"},
		{"typed families", `# TYPE rtbd_catalog_client_near_hit_count counter
rtbd_catalog_client_near_hit_count 8
# TYPE rtbd_catalog_client_near_miss_count counter
rtbd_catalog_client_near_miss_count 2
# TYPE rtbd_catalog_client_near_hits gauge
rtbd_catalog_client_near_hits 1000
# TYPE rtbd_catalog_client_near_lookup histogram
rtbd_catalog_client_near_lookup_count{result="hit"} 500
rtbd_catalog_client_near_lookup_sum{result="miss"} 3
`, 8, 2, true, "80.0%"},
		{"garbage lines", "rtbd_catalog_client_near_hits_total\nrtbd_catalog_client_near_hits_total{x=\"1\"} notanumber\n{\n", 0, 0, false, "n/a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := parseNearStats(strings.NewReader(c.body))
			if s.Hits != c.hits || s.Misses != c.misses || s.Found != c.found {
				t.Fatalf("got %+v, want hits %v misses %v found %v", s, c.hits, c.misses, c.found)
			}
			if got := s.Ratio(); got != c.ratio {
				t.Fatalf("ratio %q, want %q", got, c.ratio)
			}
		})
	}
}

func TestNearStatsSubAndString(t *testing.T) {
	a := NearStats{Hits: 10, Misses: 10, Found: true}
	b := NearStats{Hits: 40, Misses: 20, Found: true}
	d := b.Sub(a)
	if d.Hits != 30 || d.Misses != 10 || d.Ratio() != "75.0%" {
		t.Fatalf("sub: %+v %s", d, d.Ratio())
	}
	if s := (NearStats{}).String(); !strings.HasPrefix(s, "n/a") {
		t.Fatalf("absent: %q", s)
	}
}

func TestGatherNearStats(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rtbd_catalog_client_near_lookups_total"}, []string{"result"})
	reg.MustRegister(c)
	c.WithLabelValues("hit").Add(3)
	c.WithLabelValues("miss").Add(1)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "rtbd_catalog_client_near_hits_gauge"})
	reg.MustRegister(g)
	g.Set(1000) // a gauge is not a counter: ignored
	s := gatherNearStats(reg)
	if s.Hits != 3 || s.Misses != 1 || !s.Found {
		t.Fatalf("got %+v", s)
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1234": 1234, "64MiB": 64 << 20, "1GiB": 1 << 30, "10MB": 10e6, "512KiB": 512 << 10, "7B": 7} {
		got, err := parseByteSize(in)
		if err != nil || got != want {
			t.Errorf("%q: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.5GiB", "MiB", "2TiB", "12 MiB", "2048GiB"} {
		if _, err := parseByteSize(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestNearFlagAppendsSetting(t *testing.T) {
	t.Setenv(EnvNearCacheBytes, "")
	var args []string
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := nearFlag(fs, &args)
	if err := fs.Parse([]string{"-near-cache", "32MiB"}); err != nil {
		t.Fatal(err)
	}
	if !f.set || f.n != 32<<20 || strings.Join(args, " ") != "-set catalog.near_cache_bytes=33554432" {
		t.Fatalf("flag %+v, args %q", f, args)
	}
	fs2 := flag.NewFlagSet("y", flag.ContinueOnError)
	fs2.SetOutput(&bytes.Buffer{})
	nearFlag(fs2, &args)
	if err := fs2.Parse([]string{"-near-cache", "lots"}); err == nil {
		t.Fatal("bad size accepted")
	}
}

func TestNearFlagFromEnv(t *testing.T) {
	t.Setenv(EnvNearCacheBytes, "1MiB")
	var args []string
	f := nearFlag(flag.NewFlagSet("x", flag.ContinueOnError), &args)
	if !f.set || f.n != 1<<20 || len(args) != 2 {
		t.Fatalf("flag %+v, args %q", f, args)
	}
}

func TestRemoteLocalLines(t *testing.T) {
	local := &Result{Target: "local/15 zipf", Requests: 1000, Successes: 900, ElapsedSec: 10,
		Processes: []ProcessStats{{Name: "bidder-local", CPUSec: 0.4}}}
	remote := &Result{Target: "remote/15 zipf", Requests: 1000, Successes: 450, ElapsedSec: 10,
		Processes: []ProcessStats{{Name: "bidder-remote", CPUSec: 0.5}, {Name: "catalog-node-1", CPUSec: 0.2}, {Name: "catalog-node-2", CPUSec: 0.1}}}
	win := &Result{Target: "remote/15 zipf win", Requests: 10, ElapsedSec: 10}
	lines := remoteLocalLines([]string{"local", "remote"}, []*Result{local, remote, win},
		map[string]NearStats{"remote/15 zipf": {Hits: 3, Misses: 1, Found: true}})
	if len(lines) != 1 {
		t.Fatalf("lines: %q", lines)
	}
	for _, want := range []string{"15 zipf", "bids/s 45.0 vs 90.0 (0.50x)", "local bidder 400 us", "remote bidder 500 us + nodes 300 us = 800 us (2.00x)", "near cache 75.0%"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("%q lacks %q", lines[0], want)
		}
	}
	// The overload search's best rows compare too (the throughput ratio);
	// the runs at twice that rate do not.
	lmax := &Result{Target: "local/15 zipf bids only max", Requests: 19000, Successes: 19000, ElapsedSec: 1,
		Processes: []ProcessStats{{Name: "bidder-local", CPUSec: 0.76}}}
	rmax := &Result{Target: "remote/15 zipf bids only max", Requests: 17000, Successes: 17000, ElapsedSec: 1,
		Processes: []ProcessStats{{Name: "bidder-remote", CPUSec: 0.68}, {Name: "catalog-node-1", CPUSec: 0.017}}}
	r2x := &Result{Target: "remote/15 zipf bids only 2x", Successes: 30000, ElapsedSec: 1}
	l2x := &Result{Target: "local/15 zipf bids only 2x", Successes: 30000, ElapsedSec: 1}
	lines = remoteLocalLines([]string{"local", "remote"}, []*Result{lmax, l2x, rmax, r2x},
		map[string]NearStats{"remote/15 zipf bids only max": {Hits: 99, Misses: 1, Found: true}})
	if len(lines) != 1 {
		t.Fatalf("overload lines: %q", lines)
	}
	for _, want := range []string{"15 zipf bids only max", "bids/s 17,000.0 vs 19,000.0 (0.89x)", "local bidder 40 us", "remote bidder 40 us + nodes 1 us = 41 us (1.02x)", "near cache 99.0%"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("%q lacks %q", lines[0], want)
		}
	}
	if got := remoteLocalLines([]string{"local"}, []*Result{local}, nil); got != nil {
		t.Fatalf("one topology: %q", got)
	}
	// No near cache series: n/a, and a missing baseline gives no line.
	lines = remoteLocalLines([]string{"local", "remote"}, []*Result{local, remote, {Target: "remote/3"}}, nil)
	if len(lines) != 1 || !strings.HasSuffix(lines[0], "near cache n/a") {
		t.Fatalf("lines: %q", lines)
	}
}
