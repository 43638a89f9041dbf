package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
	"github.com/rtbd/rtbd/records/report"
)

var t0 = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func nonce(i int) records.Nonce {
	var n records.Nonce
	n[0], n[1], n[15] = byte(i>>8), byte(i), 1
	return n
}

// writeFixture writes, for campaigns c1 and c2: 10 bids each (c2's on
// native), c1 has 4 wins, 3 charges of 1500 micros (one delivered twice),
// 2 clicks; c2 has 1 charge of 2000 micros at 10:40 for a bid of 9:30;
// plus a test bid and a charge without a bid record.
func writeFixture(t *testing.T, dir string) {
	t.Helper()
	s, err := filesink.Open(filesink.Options{Dir: dir, Instance: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	var recs, charges []records.Record
	for i := range 20 {
		c, f := "c1", "300x250"
		if i >= 10 {
			c, f = "c2", "native"
		}
		recs = append(recs, records.Record{Kind: records.KindBid, Time: t0, Nonce: nonce(i), CampaignID: c, Exchange: "x",
			Publisher: "p" + c, Format: f, PriceMicros: 2_000_000})
	}
	recs = append(recs, records.Record{Kind: records.KindBid, Time: t0, Nonce: nonce(99), CampaignID: "c1", Test: true})
	for i := range 4 {
		recs = append(recs, records.Record{Kind: records.KindWin, Time: t0.Add(time.Minute), Nonce: nonce(i), CampaignID: "c1", Exchange: "x"})
	}
	for i := range 2 {
		recs = append(recs, records.Record{Kind: records.KindClick, Time: t0.Add(2 * time.Minute), Nonce: nonce(i), CampaignID: "c1", Exchange: "x"})
	}
	seq := uint64(0)
	charge := func(i int, c string, at time.Time, micros int64) {
		seq++
		charges = append(charges, records.Record{Kind: records.KindCharge, Time: at, Nonce: nonce(i), CampaignID: c,
			Exchange: "x", SpendMicros: micros, Seq: seq})
	}
	for i := range 3 {
		charge(i, "c1", t0.Add(time.Minute), 1500)
	}
	charge(1, "c1", t0.Add(time.Minute), 1500) // delivered again
	charge(10, "c2", t0.Add(70*time.Minute), 2000)
	charge(500, "c1", t0.Add(71*time.Minute), 7) // no bid record
	s.Write(recs)
	if _, err := s.WriteCharges(charges); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	writeFixture(t, dir)
	var out, errOut bytes.Buffer
	err := report.Main(t.Context(), []string{"-records", dir, "-by", "campaign,format", "-format", "json", "-check"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	got := map[string]map[string]any{}
	for _, r := range rows {
		got[r["campaign"].(string)+"/"+r["format"].(string)] = r
	}
	c1, c2, orphan := got["c1/300x250"], got["c2/native"], got["c1/?"]
	if c1 == nil || c2 == nil || orphan == nil || len(rows) != 3 {
		t.Fatalf("rows %v", rows)
	}
	for _, tc := range []struct {
		row  map[string]any
		col  string
		want float64
	}{
		{c1, "bids", 10}, {c1, "wins", 4}, {c1, "charges", 3}, {c1, "spend_micros", 4500}, {c1, "clicks", 2},
		{c1, "win_rate", 0.4}, {c1, "ecpm_micros", 1_500_000},
		{c2, "bids", 10}, {c2, "charges", 1}, {c2, "spend_micros", 2000}, // joined across the hour
		{orphan, "charges", 1}, {orphan, "spend_micros", 7},
	} {
		if v, _ := tc.row[tc.col].(float64); v != tc.want {
			t.Errorf("%v/%v %s = %v, want %v", tc.row["campaign"], tc.row["format"], tc.col, tc.row[tc.col], tc.want)
		}
	}
	if !strings.Contains(errOut.String(), "check: 1 charges and 0 imps without a bid record") ||
		!strings.Contains(errOut.String(), "nonce="+nonce(500).String()) {
		t.Errorf("check output: %s", errOut.String())
	}

	// -from/-to select by date; the table and csv formats print the same numbers.
	out.Reset()
	if err := report.Main(t.Context(), []string{"-records", dir, "-by", "", "-format", "csv", "-from", "2026-03-15"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Count(s, "\n") != 1 {
		t.Errorf("a day without records: %q, want the header only", s)
	}
	out.Reset()
	if err := report.Main(t.Context(), []string{"-records", dir, "-by", "", "-from", "2026-03-14", "-to", "2026-03-14"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "0.006507") { // 4500 + 2000 + 7 micros
		t.Errorf("total spend missing in %q", s)
	}
}

func TestReportUsage(t *testing.T) {
	for _, args := range [][]string{
		{}, {"-records", "x", "-by", "country"}, {"-records", "x", "-format", "xml"}, {"-records", "x", "-from", "yesterday"},
		{"-records", "x", "-from", "2026-03-02", "-to", "2026-03-01"}, {"-records", "x", "extra"},
	} {
		err := report.Main(t.Context(), args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
