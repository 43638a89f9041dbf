// Package report is `rtbd report`: what was bid, won, bought, clicked and
// spent, per campaign, exchange, date, hour, publisher or format, from the
// log-level records under a records directory (records.dir).
//
// # What it counts
//
// bids (bid records), wins (win records), win_rate (wins per bid),
// charges (billed impressions: charge records), imps (impression notices:
// imp records), clicks (bids clicked at least once), ctr (clicks per
// charge), spend (the sum of the charges' spend_micros, in each
// campaign's currency: group by campaign to keep currencies apart) and
// ecpm (spend per thousand charges). Records of test requests are left out.
// Every kind is deduplicated by (nonce, kind): a charge delivered twice
// (the journal's export is at least once) counts once. A duplicate has
// the original's ts, so it is in the same hour partition, and
// deduplication needs one hour's nonces at a time.
//
// # Grouping and joins
//
// campaign, exchange, date and hour come from each record itself;
// publisher and format only from bid records, so a notice is joined to its
// bid by nonce among the bids of the last JoinWindow (default 2h, more
// than bidder.notice_ttl): a notice without one counts under "?".
//
// # Memory
//
// The report streams the partitions hour by hour, oldest first: it holds
// one hour's nonces of each kind (for deduplication), the bids of the
// join window when it joins (-by publisher or format, or -check), and one
// row per group. So a day of records needs the memory of about one hour
// (two with a join), whatever the number of days.
//
// # -check
//
// Lists every charge and imp record whose bid record is not found within
// the join window, and counts them. Expected only where bid records were
// dropped (rtbd_records_dropped_total{kind="bid"}).
package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rtbd/rtbd/records"
)

// ErrUsage is wrapped by the errors of a bad command line.
var ErrUsage = errors.New("report: usage")

// Dimensions -by accepts.
var Dimensions = []string{"campaign", "exchange", "date", "hour", "publisher", "format"}

// Options configures Run.
type Options struct {
	// Dir is the records directory (records.dir).
	Dir string
	// From and To bound the records' ts: [From, To); zero: unbounded.
	From, To time.Time
	// By are the dimensions of a row, in order (Dimensions); none: one
	// total row.
	By []string
	// JoinWindow is how far back a notice's bid is looked for; default 2h.
	JoinWindow time.Duration
	// Check lists the charges and imps with no bid record to CheckOut.
	Check    bool
	CheckOut io.Writer
}

// Row is one group's counts. SpendMicros is in the campaign's currency.
type Row struct {
	Key                               []string
	Bids, Wins, Charges, Imps, Clicks int64
	SpendMicros                       int64
	Losses                            int64
}

// WinRate is wins per bid (0 without bids).
func (r *Row) WinRate() float64 { return ratio(r.Wins, r.Bids) }

// CTR is clicks per charge.
func (r *Row) CTR() float64 { return ratio(r.Clicks, r.Charges) }

// ECPMMicros is the spend per thousand charges, in micros.
func (r *Row) ECPMMicros() int64 {
	if r.Charges == 0 {
		return 0
	}
	return r.SpendMicros * 1000 / r.Charges
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Result is a report: its rows in key order, and what -check found.
type Result struct {
	By   []string
	Rows []Row
	// Orphans are the charge and imp records with no bid record in the
	// join window (-check).
	OrphanCharges, OrphanImps int64
}

// bidInfo is what a join needs of a bid.
type bidInfo struct{ publisher, format string }

// noticeKinds are read after the bids of each hour.
var noticeKinds = []records.Kind{records.KindWin, records.KindLoss, records.KindCharge, records.KindImp, records.KindClick}

// Run computes the report.
func Run(o Options) (*Result, error) {
	if o.JoinWindow <= 0 {
		o.JoinWindow = 2 * time.Hour
	}
	for _, d := range o.By {
		if !slices.Contains(Dimensions, d) {
			return nil, fmt.Errorf("%w: -by %q: want some of %s", ErrUsage, d, strings.Join(Dimensions, ","))
		}
	}
	join := o.Check || slices.Contains(o.By, "publisher") || slices.Contains(o.By, "format")
	// The hours that have records of any kind, in order.
	hourSet := map[int64]bool{}
	for _, k := range append([]records.Kind{records.KindBid}, noticeKinds...) {
		parts, err := records.Partitions(o.Dir, k, o.From, o.To)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			hourSet[p.Hour.Unix()] = true
		}
	}
	hours := make([]int64, 0, len(hourSet))
	for h := range hourSet {
		hours = append(hours, h)
	}
	slices.Sort(hours)

	rows := map[string]*Row{}
	res := &Result{By: o.By}
	var key []string
	rowOf := func(r *records.Record, bi *bidInfo) *Row {
		key = key[:0]
		for _, d := range o.By {
			switch d {
			case "campaign":
				key = append(key, r.CampaignID)
			case "exchange":
				key = append(key, r.Exchange)
			case "date":
				key = append(key, r.Time.UTC().Format(time.DateOnly))
			case "hour":
				key = append(key, r.Time.UTC().Format("2006-01-02T15"))
			case "publisher", "format":
				v := "?"
				if bi != nil {
					v = bi.publisher
					if d == "format" {
						v = bi.format
					}
				}
				key = append(key, v)
			}
		}
		ks := strings.Join(key, "\x00")
		row := rows[ks]
		if row == nil {
			row = &Row{Key: slices.Clone(key)}
			rows[ks] = row
		}
		return row
	}
	// Bids of the join window, one map per hour.
	type hourBids struct {
		hour int64
		bids map[records.Nonce]bidInfo
	}
	var window []hourBids
	lookup := func(n records.Nonce) (*bidInfo, bool) {
		for i := len(window) - 1; i >= 0; i-- {
			if bi, ok := window[i].bids[n]; ok {
				return &bi, true
			}
		}
		return nil, false
	}
	scanHour := func(k records.Kind, h int64, fn func(*records.Record) error) error {
		from, to := time.Unix(h, 0).UTC(), time.Unix(h, 0).UTC().Add(time.Hour)
		if !o.From.IsZero() && o.From.After(from) {
			from = o.From
		}
		if !o.To.IsZero() && o.To.Before(to) {
			to = o.To
		}
		seen := map[records.Nonce]struct{}{}
		return records.Scan(o.Dir, k, from, to, func(r *records.Record) error {
			if r.Test {
				return nil
			}
			if _, dup := seen[r.Nonce]; dup {
				return nil
			}
			seen[r.Nonce] = struct{}{}
			return fn(r)
		})
	}
	for _, h := range hours {
		for len(window) > 0 && time.Duration(h-window[0].hour)*time.Second > o.JoinWindow {
			window = window[1:]
		}
		cur := hourBids{hour: h}
		if join {
			cur.bids = map[records.Nonce]bidInfo{}
		}
		err := scanHour(records.KindBid, h, func(r *records.Record) error {
			bi := bidInfo{publisher: r.Publisher, format: r.Format}
			if join {
				cur.bids[r.Nonce] = bi
			}
			rowOf(r, &bi).Bids++
			return nil
		})
		if err != nil {
			return nil, err
		}
		window = append(window, cur)
		for _, k := range noticeKinds {
			err := scanHour(k, h, func(r *records.Record) error {
				var bi *bidInfo
				found := false
				if join {
					bi, found = lookup(r.Nonce)
				}
				row := rowOf(r, bi)
				switch k {
				case records.KindWin:
					row.Wins++
				case records.KindLoss:
					row.Losses++
				case records.KindCharge:
					row.Charges++
					row.SpendMicros += r.SpendMicros
				case records.KindImp:
					row.Imps++
				case records.KindClick:
					row.Clicks++
				}
				if o.Check && !found && (k == records.KindCharge || k == records.KindImp) {
					if k == records.KindCharge {
						res.OrphanCharges++
					} else {
						res.OrphanImps++
					}
					if o.CheckOut != nil {
						fmt.Fprintf(o.CheckOut, "no bid record: %s nonce=%s campaign=%s exchange=%s ts=%s\n",
							k, r.Nonce, r.CampaignID, r.Exchange, r.Time.UTC().Format(time.RFC3339Nano))
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	for _, r := range rows {
		res.Rows = append(res.Rows, *r)
	}
	slices.SortFunc(res.Rows, func(a, b Row) int { return slices.Compare(a.Key, b.Key) })
	return res, nil
}

// Micros formats micros as a decimal with six places ("12.345678").
func Micros(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%06d", sign, v/1_000_000, v%1_000_000)
}

var columns = []string{"bids", "wins", "win_rate", "charges", "imps", "clicks", "ctr", "spend", "ecpm"}

func (r *Row) cells() []string {
	return []string{strconv.FormatInt(r.Bids, 10), strconv.FormatInt(r.Wins, 10), strconv.FormatFloat(r.WinRate(), 'f', 4, 64),
		strconv.FormatInt(r.Charges, 10), strconv.FormatInt(r.Imps, 10), strconv.FormatInt(r.Clicks, 10),
		strconv.FormatFloat(r.CTR(), 'f', 4, 64), Micros(r.SpendMicros), Micros(r.ECPMMicros())}
}

// Write prints res as format: table, csv or json.
func (res *Result) Write(w io.Writer, format string) error {
	header := append(slices.Clone(res.By), columns...)
	switch format {
	case "table":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
		for i := range res.Rows {
			fmt.Fprintln(tw, strings.Join(append(slices.Clone(res.Rows[i].Key), res.Rows[i].cells()...), "\t")+"\t")
		}
		return tw.Flush()
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write(header)
		for i := range res.Rows {
			_ = cw.Write(append(slices.Clone(res.Rows[i].Key), res.Rows[i].cells()...))
		}
		cw.Flush()
		return cw.Error()
	case "json":
		out := make([]map[string]any, 0, len(res.Rows))
		for i := range res.Rows {
			r := &res.Rows[i]
			m := map[string]any{}
			for j, d := range res.By {
				m[d] = r.Key[j]
			}
			m["bids"], m["wins"], m["win_rate"] = r.Bids, r.Wins, r.WinRate()
			m["charges"], m["imps"], m["clicks"], m["ctr"] = r.Charges, r.Imps, r.Clicks, r.CTR()
			m["spend_micros"], m["ecpm_micros"] = r.SpendMicros, r.ECPMMicros()
			out = append(out, m)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return fmt.Errorf("%w: -format %q: want table, csv or json", ErrUsage, format)
}
