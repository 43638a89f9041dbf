package supply

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Sizes of the large load: sellers in one sellers.json, ads.txt lines over
// largePubs publisher files.
const (
	largeSellers = 100_000
	largeLines   = 1_000_000
	largePubs    = 1_000
)

// writeLarge writes a supply.dir of largeSellers sellers and largeLines
// ads.txt lines (largePubs files), and returns it.
func writeLarge(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	for _, sub := range []string{"sellers", "ads"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	fh, err := os.Create(filepath.Join(dir, "sellers", "bigssp.com.json"))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(fh)
	fmt.Fprint(w, `{"contact_email":"ops@bigssp.com","version":"1.0","sellers":[`)
	for i := range largeSellers {
		if i > 0 {
			w.WriteByte(',')
		}
		typ := [3]string{"PUBLISHER", "INTERMEDIARY", "BOTH"}[i%3]
		fmt.Fprintf(w, `{"seller_id":"%d","name":"Seller %d","domain":"seller%d.com","seller_type":"%s"}`, 1_000_000+i, i, i, typ)
	}
	fmt.Fprint(w, "]}\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	fh.Close()
	per := largeLines / largePubs
	for p := range largePubs {
		fh, err := os.Create(filepath.Join(dir, "ads", fmt.Sprintf("pub%d.com.txt", p)))
		if err != nil {
			tb.Fatal(err)
		}
		w := bufio.NewWriter(fh)
		fmt.Fprintf(w, "# pub%d.com\ncontact=ads@pub%d.com\n", p, p)
		for i := range per {
			rel := "RESELLER"
			if i%3 == 0 {
				rel = "DIRECT"
			}
			asi := fmt.Sprintf("ssp%d.com", i%200)
			if i%200 == 0 {
				asi = "bigssp.com"
			}
			fmt.Fprintf(w, "%s, %d, %s, f08c47fec0942fa0\n", asi, 1_000_000+(p*per+i)%largeSellers, rel)
		}
		if err := w.Flush(); err != nil {
			tb.Fatal(err)
		}
		fh.Close()
	}
	return dir
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLoadLarge loads 100,000 sellers and 1,000,000 ads.txt lines: every
// entry is indexed, the heap the index holds stays under 200 bytes per
// entry, and a refresh with nothing changed parses nothing. It logs the
// load time and the heap figures (quoted in the README).
func TestLoadLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads 1,000,000 ads.txt lines")
	}
	dir := writeLarge(t)
	before := heapInUse()
	start := time.Now()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	held := heapInUse() - before
	files, entries := s.Index().Counts()
	if entries[KindSellers] != largeSellers || entries[KindAds] != largeLines || files[KindAds] != largePubs {
		t.Fatalf("files %v entries %v", files, entries)
	}
	total := uint64(largeSellers + largeLines)
	if held > 200*total {
		t.Errorf("index holds %d bytes, %d per entry: want < 200", held, held/total)
	}
	start = time.Now()
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	again := time.Since(start)
	if s.Index().ads["pub1.com"] != s.files["ads/pub1.com.txt"].ads {
		t.Error("an unchanged file was parsed again")
	}
	t.Logf("load of %d sellers + %d ads.txt lines (%d files): %v, heap held %.1f MB (%d bytes/entry); refresh with nothing changed: %v",
		largeSellers, largeLines, largePubs, took.Round(time.Millisecond), float64(held)/(1<<20), held/total, again.Round(time.Millisecond))
	runtime.KeepAlive(s)
}

// BenchmarkCheck is one two-hop verdict against the large index; its
// baseline, BenchmarkMapLookup, is the bare map lookups the verdict is
// made of (ads.txt and sellers.json of two nodes).
func BenchmarkCheck(b *testing.B) {
	dir := writeLarge(b)
	s, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	ix := s.Index()
	// pub3.com's line 0 is DIRECT bigssp.com, a PUBLISHER; its line 200
	// RESELLER bigssp.com, a seller of type BOTH.
	per := largeLines / largePubs
	r := &Request{SiteDomain: "www.pub3.com", Chain: chainOf(
		"bigssp.com", fmt.Sprint(1_000_000+(3*per)%largeSellers),
		"bigssp.com", fmt.Sprint(1_000_000+(3*per+200)%largeSellers))}
	var sc Scratch
	if v := ix.Check(r, &sc); v.Reason != OK {
		b.Fatalf("verdict %s (%s)", v.Reason, v.Explain(r, v.Reason))
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var sc Scratch
		for pb.Next() {
			ix.Check(r, &sc)
		}
	})
}

func BenchmarkMapLookup(b *testing.B) {
	m := map[string]map[string]Relationship{"bigssp.com": {"1003000": Direct, "1003200": Reseller}}
	sellers := map[string]SellerType{"1003000": SellerPublisher, "1003200": SellerBoth}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = m["bigssp.com"]["1003000"], sellers["1003000"]
			_, _ = m["bigssp.com"]["1003200"], sellers["1003200"]
		}
	})
}

// BenchmarkLoad is Open of the large directory.
func BenchmarkLoad(b *testing.B) {
	dir := writeLarge(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Open(Options{Dir: dir}); err != nil {
			b.Fatal(err)
		}
	}
}
