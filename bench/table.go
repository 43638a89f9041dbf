package bench

import (
	"fmt"
	"math"
	"strings"
)

// Table is a comparison table of targets (BuildTable): the talk's columns
// (average, p50, p99 in ms and throughput), ratio columns against a baseline
// row of the same group (remote/local), and the harness's own columns.
type Table struct {
	Title string     `json:"title"`
	Rows  []TableRow `json:"rows"`
}

// TableRow is one target's line of a Table. Ratio fields are this row's
// value divided by its baseline row's (0 when the row has none).
type TableRow struct {
	Target        string  `json:"target"`
	Group         string  `json:"group,omitempty"`    // rows with the same group are compared ("3 products")
	Baseline      string  `json:"baseline,omitempty"` // target the ratios divide by; "" for a baseline row
	AvgMs         float64 `json:"avg_ms"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	Rate          float64 `json:"rate"`                   // achieved req/s
	OfferedRate   float64 `json:"offered_rate,omitempty"` // open loop
	P90Ms         float64 `json:"p90_ms"`
	P999Ms        float64 `json:"p999_ms"`
	MaxMs         float64 `json:"max_ms"`
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	ErrorPct      float64 `json:"error_pct"`
	NoBidPct      float64 `json:"no_bid_pct"`
	Misses        int64   `json:"deadline_misses"`
	HarnessCPUSec float64 `json:"harness_cpu_sec"` // the bench process (generator, and an in-process store)
	ServerCPUSec  float64 `json:"server_cpu_sec"`  // watched child processes, summed; -1: none (in-process store)
	ServerRSSMB   float64 `json:"server_rss_mb"`   // their peak RSS (VmHWM), summed, MiB; -1: none
	RatioAvg      float64 `json:"ratio_avg,omitempty"`
	RatioP50      float64 `json:"ratio_p50,omitempty"`
	RatioP99      float64 `json:"ratio_p99,omitempty"`
	RatioRate     float64 `json:"ratio_rate,omitempty"`
}

// TableEntry is one input line of BuildTable.
type TableEntry struct {
	Result          *Result
	Group, Baseline string // as in TableRow
	// InProcess marks a target served inside the harness: the server
	// columns are n/a (its CPU is in the harness column).
	InProcess bool
}

// BuildTable computes a Table from entries, in order.
func BuildTable(title string, entries []TableEntry) Table {
	t := Table{Title: title}
	byTarget := map[string]int{}
	for _, e := range entries {
		r := e.Result
		if r == nil {
			continue
		}
		l := r.Latency
		row := TableRow{
			Target: r.Target, Group: e.Group, Baseline: e.Baseline,
			AvgMs: l.AvgUs / 1000, P50Ms: usToMs(l.P50Us), P99Ms: usToMs(l.P99Us), Rate: r.AchievedRate,
			OfferedRate: r.OfferedRate, P90Ms: usToMs(l.P90Us), P999Ms: usToMs(l.P999Us), MaxMs: usToMs(l.MaxUs),
			Requests: r.Requests, Errors: r.Errors.Total, ErrorPct: 100 * r.ErrorRatio(),
			NoBidPct: 100 * r.NoBidRatio(), Misses: r.DeadlineMisses, ServerCPUSec: -1, ServerRSSMB: -1,
			HarnessCPUSec: r.GeneratorCPUSec / float64(max(r.GeneratorShared, 1)), // shared by a mixed run's loads: split evenly
		}
		if !e.InProcess && len(r.Processes) > 0 {
			row.ServerCPUSec, row.ServerRSSMB = 0, 0
			for _, p := range r.Processes {
				row.ServerCPUSec += p.CPUSec
				row.ServerRSSMB += float64(p.PeakRSSBytes) / (1 << 20)
			}
		}
		byTarget[r.Target] = len(t.Rows)
		t.Rows = append(t.Rows, row)
	}
	for i := range t.Rows {
		row := &t.Rows[i]
		bi, ok := byTarget[row.Baseline]
		if row.Baseline == "" || !ok || row.Baseline == row.Target {
			row.Baseline = ""
			continue
		}
		b := t.Rows[bi]
		row.RatioAvg = safeDiv(row.AvgMs, b.AvgMs)
		row.RatioP50 = safeDiv(row.P50Ms, b.P50Ms)
		row.RatioP99 = safeDiv(row.P99Ms, b.P99Ms)
		row.RatioRate = safeDiv(row.Rate, b.Rate)
	}
	return t
}

func safeDiv(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return a / b
}

func writeTable(out *textWriter, t Table) {
	out.printf("\n%s\n", t.Title)
	tw := out.tab()
	fmt.Fprintln(tw, "target\tgroup\tavg ms\tp50 ms\tp99 ms\treq/s\tavg ×\tp50 ×\tp99 ×\treq/s ×\t"+
		"offered\tp90 ms\tp99.9 ms\tmax ms\trequests\terrors\tno-bid %\tmisses\tharness CPU s\tserver CPU s\tserver RSS MB\t")
	na := func(v float64, f string) string { // -1: not applicable
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf(f, v)
	}
	for _, r := range t.Rows {
		ratio := func(v float64) string {
			if r.Baseline == "" {
				return "base"
			}
			if v == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", v)
		}
		offered := "-"
		if r.OfferedRate > 0 {
			offered = fmtRate(r.OfferedRate)
		}
		fmt.Fprintln(tw, strings.Join([]string{r.Target, r.Group,
			fmtMs(r.AvgMs), fmtMs(r.P50Ms), fmtMs(r.P99Ms), fmtRate(r.Rate),
			ratio(r.RatioAvg), ratio(r.RatioP50), ratio(r.RatioP99), ratio(r.RatioRate),
			offered, fmtMs(r.P90Ms), fmtMs(r.P999Ms), fmtMs(r.MaxMs), fmt.Sprint(r.Requests),
			fmt.Sprint(r.Errors), fmt.Sprintf("%.1f", r.NoBidPct), fmt.Sprint(r.Misses),
			fmt.Sprintf("%.2f", r.HarnessCPUSec), na(r.ServerCPUSec, "%.2f"), na(r.ServerRSSMB, "%.1f")}, "\t")+"\t")
	}
	out.flush(tw)
	out.printf("(talk's columns: avg, p50, p99 ms and achieved req/s; × = ratio to the group's baseline row; then ours.\n" +
		" harness CPU s: the bench process, which also runs an in-process store; server columns: the child processes it watched)\n")
}
