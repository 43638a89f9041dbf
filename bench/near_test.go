package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestReadNearStats reads the remote client's lookup counter from a
// /metrics page: hit and hit_absent are hits, other series are left out,
// and a page without the counter or one that does not parse is "not found".
func TestReadNearStats(t *testing.T) {
	cases := []struct {
		name, body   string
		hits, misses float64
		found        bool
	}{
		{"counter", `# TYPE rtbd_catalog_client_near_cache_lookups_total counter
rtbd_catalog_client_near_cache_lookups_total{result="hit"} 70
rtbd_catalog_client_near_cache_lookups_total{result="hit_absent"} 5
rtbd_catalog_client_near_cache_lookups_total{result="miss"} 25
# TYPE rtbd_catalog_client_near_cache_entries gauge
rtbd_catalog_client_near_cache_entries 40
`, 75, 25, true},
		{"absent", "rtbd_catalog_client_calls_total{result=\"ok\"} 100\n", 0, 0, false},
		{"garbage", "rtbd_catalog_client_near_cache_lookups_total{x=\"1\"} notanumber\n{\n", 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, c.body) }))
			defer srv.Close()
			s := readNearStats(srv.URL + "/metrics")
			if s.Hits != c.hits || s.Misses != c.misses || s.Found != c.found {
				t.Fatalf("got %+v, want hits %v misses %v found %v", s, c.hits, c.misses, c.found)
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
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: NearLookupsMetric}, []string{"result"})
	reg.MustRegister(c)
	c.WithLabelValues("hit").Add(3)
	c.WithLabelValues("miss").Add(1)
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
	if f.val != "32MiB" || f.n != 32<<20 || strings.Join(args, " ") != "-set catalog.near_cache_bytes=33554432" {
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
	if f.val != "1MiB" || f.n != 1<<20 || len(args) != 2 {
		t.Fatalf("flag %+v, args %q", f, args)
	}
}

// A bad $RTBD_BENCH_NEAR_CACHE_BYTES is a usage error naming the variable
// in every scenario with -near-cache, not a value silently ignored.
func TestNearFlagBadEnv(t *testing.T) {
	t.Setenv(EnvNearCacheBytes, "lots")
	t.Setenv("RTBD_BENCH_SCALE_PRODUCTS", "")
	for _, scenario := range []string{"store", "bidder", "all", "scale"} {
		// -weights 0 stops the scenario before it starts anything, should the variable be ignored.
		err := Main(context.Background(), []string{scenario, "-weights", "0"}, io.Discard, io.Discard)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "$"+EnvNearCacheBytes+": ") || !strings.Contains(err.Error(), `"lots"`) {
			t.Errorf("%s: %v, want a usage error naming $%s and its value", scenario, err, EnvNearCacheBytes)
		}
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
