package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/catalog/catalogtest"
	"github.com/rtbd/rtbd/catalog/workload"
	"github.com/rtbd/rtbd/internal/aerospiketest"
)

// TestStoresConformance runs the catalog's conformance suite (every rule of
// GetProductMasters) against the Redis and Aerospike stores of the store
// scenario, loaded with the fixture's products: the rows of the
// comparison answer the same thing.
func TestStoresConformance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	load := slices.Values(catalogtest.Products())

	t.Run("redis", func(t *testing.T) {
		if _, err := os.Stat(DefaultRedisServer); err != nil {
			t.Skipf("!!! %s not found: Redis store NOT TESTED (make deps installs it) !!!", DefaultRedisServer)
		}
		s := newRedisServer(DefaultRedisServer, t.TempDir(), "")
		if err := s.start(ctx, false); err != nil {
			t.Fatal(err)
		}
		defer s.stop(5 * time.Second)
		rs := newRedisStore(s.Addr(), 8)
		defer rs.Close()
		if n, err := rs.load(ctx, load); err != nil || n != len(catalogtest.Products()) {
			t.Fatalf("load: %d, %v", n, err)
		}
		catalogtest.RunProductsOnly(t, rs) // a product store: no similar lists
		s.Kill()
		_, err := rs.GetProductMasters(ctx, &catalogpb.ProductMastersRequest{ProductGroupId: 1, Product1QuantityAtMost: 1, Product1Ids: []int64{1}})
		if got := classifyStoreError(err); got != ErrConn {
			t.Errorf("redis killed: %v classified %v, want conn", err, got)
		}
	})
	t.Run("aerospike", func(t *testing.T) {
		srv, err := aerospiketest.Start(aerospiketest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		as, err := newAerospikeStore(srv.Addr(), srv.Namespace())
		if err != nil {
			t.Fatal(err)
		}
		defer as.Close()
		if n, err := as.load(ctx, load); err != nil || n != len(catalogtest.Products()) {
			t.Fatalf("load: %d, %v", n, err)
		}
		catalogtest.RunProductsOnly(t, as) // a product store: no similar lists
	})
}

type fakeStore struct {
	inner productStore
	drop  int64
}

func (f fakeStore) GetProductMasters(ctx context.Context, req *catalogpb.ProductMastersRequest) (*catalogpb.ProductMastersResponse, error) {
	r, err := f.inner.GetProductMasters(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &catalogpb.ProductMastersResponse{}
	for _, p := range r.Product1S {
		if p.ProductId != f.drop {
			out.Product1S = append(out.Product1S, p)
		}
	}
	return out, nil
}

func TestVerifyStoresFindsADifference(t *testing.T) {
	data := filepath.Join(t.TempDir(), "catalog")
	if err := BuildSyntheticIndex(data, 400, 4); err != nil {
		t.Fatal(err)
	}
	l, err := catalog.OpenLocal(data, catalog.LocalOptions{WatchInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reqs, err := workload.Catalog{Products: 400, Groups: 4, IDs: 15}.Requests(100, 1)
	if err != nil {
		t.Fatal(err)
	}
	same := []*storeRun{{name: "local", store: l}, {name: "copy", store: fakeStore{inner: l}}}
	if err := verifyStores(context.Background(), same, reqs); err != nil {
		t.Fatalf("identical stores: %v", err)
	}
	hot := reqs[0].Product1Ids[0] // surely answered
	diff := []*storeRun{{name: "local", store: l}, {name: "lossy", store: fakeStore{inner: l, drop: hot}}}
	if err := verifyStores(context.Background(), diff, reqs); err == nil || !strings.Contains(err.Error(), "lossy answers request") {
		t.Fatalf("a store missing product %d: %v", hot, err)
	}
	// The scenario's target: empty answers are no-bids, errors classified.
	tg := &storeTarget{name: "t", store: l, stream: &requestStream{reqs: []*catalogpb.ProductMastersRequest{
		reqs[0], {ProductGroupId: 4, Product1QuantityAtMost: 3, Product1Ids: []int64{1, 2, 3}}, {ProductGroupId: 0}}}}
	w := NewWorker(0, 1)
	for i, want := range []Outcome{OK, NoBid, ErrStatus4xx} {
		if got := tg.Do(context.Background(), w); got != want {
			t.Errorf("request %d: %v, want %v", i, got, want)
		}
	}
}

func TestBuildTableRatios(t *testing.T) {
	mk := func(name string, avg float64, p50, p99 int64, rate float64) *Result {
		return &Result{Target: name, Requests: 100, AchievedRate: rate, Latency: LatencyStats{AvgUs: avg, P50Us: p50, P99Us: p99, MaxUs: 2 * p99},
			Processes: []ProcessStats{{Name: "node", CPUSec: 1.5, PeakRSSBytes: 64 << 20}}, GeneratorCPUSec: 0.5}
	}
	tb := BuildTable("t", []TableEntry{
		{Result: mk("local/3", 1000, 800, 4000, 1000), Group: "3", InProcess: true},
		{Result: mk("grpc/3", 1500, 1000, 2000, 900), Group: "3", Baseline: "local/3"},
		{Result: mk("x", 1, 1, 1, 1), Baseline: "missing"},
	})
	l, g, x := tb.Rows[0], tb.Rows[1], tb.Rows[2]
	if l.Baseline != "" || l.ServerCPUSec != -1 || l.ServerRSSMB != -1 || l.RatioAvg != 0 {
		t.Errorf("baseline row %+v", l)
	}
	if g.RatioAvg != 1.5 || g.RatioP50 != 1.25 || g.RatioP99 != 0.5 || g.RatioRate != 0.9 || g.ServerCPUSec != 1.5 || g.ServerRSSMB != 64 || g.MaxMs != 4 {
		t.Errorf("grpc row %+v", g)
	}
	if x.Baseline != "" || x.RatioAvg != 0 {
		t.Errorf("row with an unknown baseline %+v", x)
	}
	var b bytes.Buffer
	if err := WriteText(&b, &Report{Tables: []Table{tb}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"avg ×", "1.50", "1.25", "0.50", "0.90", "base", "64.0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestNurlRing(t *testing.T) {
	var r nurlRing
	if _, ok := r.pick(rand.New(rand.NewPCG(1, 1)), nil); ok || len(r.buf) > 0 {
		t.Fatal("empty ring picked something")
	}
	r.harvest([]byte(`{"id":"x","seatbid":[{"bid":[{"price":1,"nurl":"http://h:1/win?t=AbC\u0026p=${AUCTION_PRICE}","adm":"x"}]}]}`))
	r.harvest([]byte(`{"id":"x","nbr":2}`))
	got, ok := r.pick(rand.New(rand.NewPCG(1, 1)), []byte("http://127.0.0.1:9"))
	if !ok || string(got) != "http://127.0.0.1:9/win?t=AbC&p=0.01" || r.seen != 1 {
		t.Errorf("picked %q %v (seen %d)", got, ok, r.seen)
	}
	for i := 0; i < nurlRingSize+10; i++ {
		r.harvest([]byte(`"nurl":"http://h/win?t=z"`))
	}
	if len(r.buf) != nurlRingSize {
		t.Errorf("ring holds %d, want %d", len(r.buf), nurlRingSize)
	}
}

func TestBidWorkloadBodies(t *testing.T) {
	w := NewWorker(3, 1)
	for _, weight := range []int{3, 15, 30} {
		b := bidWorkload{users: 10, weight: weight}.body(w, nil)
		var want string
		switch weight {
		case 3:
			want = `"banner":{"w":`
		case 15:
			want = `"native":{"request":"{\"ver\":\"1.2\"`
		case 30:
			want = `"w":160,"h":600`
		}
		if !bytes.Contains(b, []byte(want)) || !bytes.Contains(b, []byte(`"buyeruid":"demo-user-`)) || !json.Valid(b) {
			t.Errorf("weight %d: %s", weight, b)
		}
	}
}

func TestMainUsageErrors(t *testing.T) {
	ctx := context.Background()
	var out, errb bytes.Buffer
	for _, args := range [][]string{
		nil,
		{"nope"},
		{"store", "-rate", "x"},
		{"store", "-weights", "3,zero"},
		{"store", "-targets", "local,memcached"},
		{"store", "-targets", "aerospike"},
		{"store", "-concurrency", "4", "-find-max"},
		{"store", "extra"},
		{"bidder", "-weights", "7"},
		{"bidder", "-find-max"},
		{"bidder", "-http", "ftp://x", "-topologies", "local"},
		{"compare", "a.json"},
		{"all", "-rate", "100"},
		{"all", "-weights", "4"},
	} {
		err := Main(ctx, args, &out, &errb)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("%q: %v, want ErrUsage", args, err)
		}
	}
	out.Reset()
	if err := Main(ctx, []string{"-h"}, &out, &errb); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "rtbd bench SCENARIO") || !strings.Contains(out.String(), "  near ") {
		t.Errorf("-h: %v", err)
	}
	if err := Main(ctx, []string{"compare", "/nonexistent/a.json", "/nonexistent/b.json"}, &out, &errb); err == nil || errors.Is(err, ErrUsage) {
		t.Errorf("compare of missing files: %v", err)
	}
}

// FuzzNurlHarvest: any bid response body (outside input) is harvested
// without panicking, and whatever is kept is a /win path with the price
// macro filled.
func FuzzNurlHarvest(f *testing.F) {
	f.Add([]byte(`{"seatbid":[{"bid":[{"nurl":"http://h:1/win?t=AbC\u0026p=${AUCTION_PRICE}"}]}]}`))
	f.Add([]byte(`"nurl":"`))
	f.Add([]byte(`"nurl":"/win?"`))
	f.Add([]byte(`"nurl":"x/win?${AUCTION_PRICE}${AUCTION_PRICE`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var r nurlRing
		r.harvest(body)
		got, ok := r.pick(rand.New(rand.NewPCG(1, 2)), nil)
		if ok && (!bytes.HasPrefix(got, []byte("/win?")) || bytes.Contains(got, priceMacro) || bytes.IndexByte(got, '"') >= 0) {
			t.Fatalf("kept %q from %q", got, body)
		}
	})
}
