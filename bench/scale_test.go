package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestScaleProductsForDisk(t *testing.T) {
	const gb = 1_000_000_000
	cases := []struct {
		free uint64
		want int
		err  bool
	}{
		{200 * gb, ScaleMaxProducts, false}, // capped at the talk's 100M
		{80 * gb, ScaleMaxProducts, false},  // (80e9 - 8 GiB) / 700 = 102.0M, capped
		{30 * gb, 30_000_000, false},        // (30e9 - 8.59e9) / 700 = 30.6M -> 30M
		{20 * gb, 0, true},                  // 16.3M < 20M
		{1 * gb, 0, true},                   // less than the reserve
	}
	for _, c := range cases {
		got, err := ScaleProductsForDisk(c.free)
		if c.err {
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Errorf("free %d: got %d, %v; want an ErrInvalid error", c.free, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("free %d: got %d, %v; want %d", c.free, got, err, c.want)
		}
		if got%1_000_000 != 0 {
			t.Errorf("free %d: %d is not a multiple of a million", c.free, got)
		}
	}
}

func TestScaleProfiles(t *testing.T) {
	const products, groups = 1_000_000, 8
	for _, uniform := range []bool{true, false} {
		ps, err := scaleProfiles(products, groups, 15, 500, uniform, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 500 {
			t.Fatalf("%d profiles", len(ps))
		}
		for i, p := range ps {
			if len(p.Viewed) != 1 || len(p.Recommended) != 1 || p.Viewed[0].Group != p.Recommended[0].Group {
				t.Fatalf("profile %d: %+v", i, p)
			}
			g := p.Viewed[0].Group
			all := append(append([]int64{}, p.Viewed[0].IDs...), p.Recommended[0].IDs...)
			if len(p.Viewed[0].IDs) > 5 || len(all) > 15 || len(all) == 0 {
				t.Fatalf("profile %d: %d viewed, %d in all", i, len(p.Viewed[0].IDs), len(all))
			}
			for _, id := range all {
				// feedgen: product index id-1 is in group 1 + (id-1)%groups.
				if id < 1 || id > products || 1+(id-1)%groups != g {
					t.Fatalf("profile %d: id %d not in group %d of the catalog", i, id, g)
				}
			}
		}
	}
	a, _ := scaleProfiles(products, groups, 15, 10, false, 3)
	b, _ := scaleProfiles(products, groups, 15, 10, false, 3)
	if a[7].Viewed[0].IDs[0] != b[7].Viewed[0].IDs[0] {
		t.Fatal("not deterministic for a seed")
	}
}

func TestDedupIDs(t *testing.T) {
	got := dedupIDs([]int64{5, 3, 5, 9, 3, 1})
	if len(got) != 4 || got[0] != 5 || got[1] != 3 || got[2] != 9 || got[3] != 1 {
		t.Fatalf("got %v", got)
	}
}

func TestScaleOptionsValidate(t *testing.T) {
	if err := (ScaleOptions{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	err := ScaleOptions{Groups: 9, Products: -1, IDs: 1, StoreRate: -1}.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"groups", "products", "ids", "rate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %s", err, want)
		}
	}
}

func TestReadScaleIngest(t *testing.T) {
	dir := t.TempDir()
	if _, ok := readScaleIngest(dir); ok {
		t.Fatal("an empty dir has an index")
	}
	// A record without a published index is not one.
	if err := os.WriteFile(filepath.Join(dir, scaleIngestFile), []byte(`{"products":5,"groups":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := readScaleIngest(dir); ok {
		t.Fatal("record without CURRENT accepted")
	}
}

func TestScaleIngestNotes(t *testing.T) {
	lines := scaleIngestNotes(ScaleIngest{Products: 2_000_000, Groups: 8, WallSec: 10, RowsPerSec: 200_000,
		MaxRSSBytes: 512 << 20, IndexBytes: 400_000_000, FreeBytesBefore: 50e9})
	text := strings.Join(lines, "\n")
	for _, want := range []string{"2000000 products", "200000 rows/s", "512 MiB", "0.40 GB (200 bytes per product)", "50.0 GB were free"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q lacks %q", text, want)
		}
	}
}

func TestNewCommandsUsageErrors(t *testing.T) {
	t.Setenv("RTBD_BENCH_SCALE_PRODUCTS", "")
	t.Setenv(EnvNearCacheBytes, "")
	ctx := context.Background()
	var out, errb bytes.Buffer
	for _, args := range [][]string{
		{"scale", "-groups", "9"},
		{"scale", "-ids", "1"},
		{"scale", "-products", "-5"},
		{"scale", "-near-cache", "big"},
		{"scale", "extra"},
		{"near", "-near-cache", "big"},
		{"near", "extra"},
		{"bidder", "-popularity", "pareto"},
		{"bidder", "-popularity", "zipf", "-http", "http://127.0.0.1:1", "-topologies", "external"},
		{"bidder", "-near-cache", "-1"},
		{"store", "-near-cache", "1.5GiB"},
	} {
		if err := Main(ctx, args, &out, &errb); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: %v, want ErrUsage", args, err)
		}
	}
	t.Setenv("RTBD_BENCH_SCALE_PRODUCTS", "many")
	if err := Main(ctx, []string{"scale"}, &out, &errb); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "RTBD_BENCH_SCALE_PRODUCTS") {
		t.Errorf("bad env: %v", err)
	}
}

func TestBidWorkloadUserPrefix(t *testing.T) {
	w := NewWorker(3, 1)
	b := bidWorkload{users: 10, weight: 15, userPrefix: "bench-z-"}.body(w, nil)
	if !bytes.Contains(b, []byte(`"id":"bench-z-`)) || bytes.Contains(b, []byte("demo-user-")) || !json.Valid(b) {
		t.Fatalf("body: %s", b)
	}
}

// The warming pass names every user once, in turn, whatever the worker.
func TestBidWorkloadEachUser(t *testing.T) {
	wl := bidWorkload{users: 4, weight: 3, each: new(atomic.Uint64)}
	var got []string
	for i := range 6 {
		b := wl.body(NewWorker(i%2, uint64(i)), nil)
		var req struct {
			User struct{ ID string } `json:"user"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
		got = append(got, req.User.ID)
	}
	want := []string{"demo-user-1", "demo-user-2", "demo-user-3", "demo-user-4", "demo-user-1", "demo-user-2"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("users %q, want %q", got, want)
	}
}
