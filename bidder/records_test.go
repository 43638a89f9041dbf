package bidder

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtbd/rtbd/bidder/spend/journal"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
)

func gatherSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// TestRecordsDirUnusable: with records.dir impossible to create (its
// parent is a regular file: refused even to root) or deleted while the
// bidder runs, bidding goes on; the records are dropped and counted and
// the failure counted.
func TestRecordsDirUnusable(t *testing.T) {
	for _, tc := range []string{"unwritable", "deleted"} {
		t.Run(tc, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "records")
			if tc == "unwritable" {
				if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				dir = filepath.Join(base, "file", "records")
			}
			reg := prometheus.NewRegistry()
			m, err := records.NewMetrics(reg, nil, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := filesink.Open(filesink.Options{Dir: dir, Instance: "t1", Metrics: m, RollInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := records.NewRecorder(records.Options{Instance: "t1", Metrics: m, FlushInterval: 10 * time.Millisecond}, fs)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Close()
			f := newFixture(t, func(o *Options) { o.Records = rec })
			body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk)
			if tc == "deleted" {
				if r := f.bid(body); r.status != 200 {
					t.Fatalf("bid: %d", r.status)
				}
				waitFor(t, 5*time.Second, "the first file", func() bool {
					n := 0
					_ = records.Scan(dir, records.KindBid, time.Time{}, time.Time{}, func(*records.Record) error { n++; return nil })
					return n == 1
				})
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dir, nil, 0o444); err != nil { // and something in its way
					t.Fatal(err)
				}
			}
			for i := range 20 {
				if r := f.bid(body); r.status != 200 {
					t.Fatalf("bid %d with records.dir %s: %d", i, tc, r.status)
				}
			}
			waitFor(t, 5*time.Second, "the drops counted", func() bool {
				return gatherSum(t, reg, "rtbd_records_dropped_total") >= 20 && gatherSum(t, reg, "rtbd_records_errors_total") > 0
			})
		})
	}
}

// TestChargeExportFull: past records.charge_max_pending export records,
// a billing notice is still accepted and charged; its charge record is
// dropped and counted (an export outage never refuses a bill).
func TestChargeExportFull(t *testing.T) {
	var dropped atomic.Int64
	j, err := journal.Open(filepath.Join(t.TempDir(), "journal"), journal.Options{Exporters: []string{records.SinkFile},
		MaxExport: 2, ExportDropped: func() { dropped.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rec, err := records.NewRecorder(records.Options{Instance: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	mf := newMoneyFixture(t, moneyCampaigns(t, ""), func(o *Options) { o.Journal, o.Records = j, rec })
	for i := range 5 {
		if st := mf.notice(billPath(t, mf.keys, fmt.Sprintf("a%d", i), "${AUCTION_PRICE}"), "1.5"); st != 204 {
			t.Fatalf("bill %d: %d", i, st)
		}
	}
	if j.Exports() != 2 || dropped.Load() != 3 || j.Pending() != 5 {
		t.Fatalf("exports %d, dropped %d, pending notices %d; want 2, 3, 5", j.Exports(), dropped.Load(), j.Pending())
	}
	var got []records.Record
	if err := j.ReadAfter(0, 10, func(seq uint64, b []byte) error {
		var r records.Record
		if _, err := r.DecodeBinary(b); err != nil {
			return err
		}
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != records.KindCharge || got[0].SpendMicros != 1500 || got[0].CampaignID != "money" ||
		got[0].PriceMicros != 1_500_000 || got[0].Instance != "t1" || got[0].RequestID != "a0" {
		t.Fatalf("export records %+v", got)
	}
}
