//go:build !race

package bidder

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
)

// TestRecordsAllocations: with the file sink on, a bid (and its bid
// record) and a sampled no-bid (and its nobid record) cost no allocation
// over the pins without records; the records reach the files.
func TestRecordsAllocations(t *testing.T) {
	dir := t.TempDir()
	fs, err := filesink.Open(filesink.Options{Dir: dir, Instance: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := records.NewRecorder(records.Options{Instance: "t1", NoBidSample: 1, BufferBytes: 256 << 20}, fs)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Records = rec })
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
	h := f.b.Handler()
	if allocs := bidAllocs(t, h, bidCtx(body), "one bid with records"); allocs > 19 {
		t.Errorf("%.0f allocations per bid with records, want <= 19 (the pin without them)", allocs)
	}
	nb := bidCtx(withUser(t, body, "nobody"))
	if noBid := testing.AllocsPerRun(200, func() { nb.Response.Reset(); h(nb) }); noBid > 16 {
		t.Errorf("%.0f allocations per sampled no-bid with records, want <= 16", noBid)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []records.Kind{records.KindBid, records.KindNoBid} {
		n := 0
		if err := records.Scan(dir, k, time.Time{}, time.Time{}, func(r *records.Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n < 200 {
			t.Errorf("%d %s records in the files, want >= 200", n, k)
		}
	}
}
