package bench

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
)

// WriteHTML writes r as one self-contained HTML page: tables and inline SVG
// charts generated here (percentile curves of all targets on one plot,
// throughput and p99 over time, a histogram per target). A report with
// scenario Tables gets one set of charts per table group (say, "3
// products": local, grpc, redis), so that each plot compares a few lines;
// results in no group are charted together. It references no external
// script, style sheet, font or image.
func WriteHTML(w io.Writer, r *Report) error {
	type kv struct{ K, V string }
	type tableView struct {
		Title  string
		Header []string
		Rows   [][]string
		Notes  []string
	}
	type targetView struct {
		R         *Result
		Histogram template.HTML
		Summary   []kv
	}
	type chartGroup struct {
		Title                  string
		Percentiles, Rate, P99 template.HTML
	}
	v := struct {
		R               *Report
		Meta            []kv
		Config          []kv
		Groups          []chartGroup
		Targets         []targetView
		Tables          []tableView
		HasTimeline     bool
		Soak            *SoakSummary
		SoakRSS         template.HTML
		SoakOutcomes    func(map[string]int64) string
		FmtMs           func(float64) string
		FmtRate         func(float64) string
		UsMs            func(int64) string
		Pct             func(float64) string
		RatioPct        func(float64) string
		PercentileLabel func(float64) string
	}{
		R:        r,
		FmtMs:    fmtMs,
		FmtRate:  fmtRate,
		UsMs:     func(us int64) string { return fmtMs(usToMs(us)) },
		Pct:      func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) },
		RatioPct: func(f float64) string { return strconv.FormatFloat(100*f, 'f', 3, 64) },
		PercentileLabel: func(p float64) string {
			return strconv.FormatFloat(p, 'f', -1, 64)
		},
	}
	if r.Soak != nil {
		v.Soak, v.SoakRSS, v.SoakOutcomes = r.Soak, template.HTML(rssChart(r.Soak)), fmtOutcomes
	}
	v.Meta = []kv{
		{"created", r.Created.Format("2006-01-02 15:04:05 MST")},
		{"host", r.Host},
		{"go", fmt.Sprintf("%s %s/%s", r.GoVersion, r.OS, r.Arch)},
		{"cpus", fmt.Sprintf("%d (GOMAXPROCS %d)", r.NumCPU, r.GOMAXPROCS)},
		{"schema", r.Schema},
	}
	if r.GitRev != "" {
		v.Meta = append(v.Meta, kv{"git", r.GitRev})
	}
	keys := make([]string, 0, len(r.Config))
	for k := range r.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.Config = append(v.Config, kv{k, r.Config[k]})
	}
	for _, t := range r.Tables {
		tv := tableView{Title: t.Title, Header: tableHeader, Notes: t.Notes}
		for _, row := range t.Rows {
			tv.Rows = append(tv.Rows, tableCells(row))
		}
		v.Tables = append(v.Tables, tv)
	}
	for _, g := range chartGroups(r) {
		cg := chartGroup{Title: g.title, Percentiles: template.HTML(percentileChart(g.results))}
		hasTimeline := false
		for _, res := range g.results {
			hasTimeline = hasTimeline || len(res.Timeline) > 0
		}
		if hasTimeline {
			v.HasTimeline = true
			cg.Rate = template.HTML(timelineChart("Throughput over time (completed requests per full 1 s window)", "req/s", g.results,
				func(s Second) float64 { return float64(s.Requests) }, false))
			cg.P99 = template.HTML(timelineChart("p99 latency over time (solid p99, dashed p50, per full 1 s window)", "latency ms", g.results,
				func(s Second) float64 { return usToMs(s.P99Us) }, true))
		}
		v.Groups = append(v.Groups, cg)
	}
	for i, res := range r.Results {
		e := res.Errors
		how := string(res.Mode)
		if res.Mode == ModeOpenLoop {
			how = fmt.Sprintf("open loop, %s req/s offered (%s), max in flight %d", fmtRate(res.OfferedRate), res.Arrival, res.MaxInFlight)
		} else if res.Mode == ModeClosedLoop {
			how = fmt.Sprintf("closed loop, concurrency %d", res.Concurrency)
		}
		tv := targetView{R: res, Histogram: template.HTML(histogramChart(res, colorOf(i)))}
		tv.Summary = []kv{
			{"load", how},
			{"measured", fmt.Sprintf("%.1f s after %.1f s warmup (elapsed %.2f s)", res.DurationSec, res.WarmupSec, res.ElapsedSec)},
			{"requests", fmt.Sprintf("%d (%s req/s achieved)", res.Requests, fmtRate(res.AchievedRate))},
			{"outcomes", fmt.Sprintf("ok %d, no-bid %d, deadline-miss %d, errors %d (timeout %d, conn %d, 4xx %d, 5xx %d, other %d), expired in generator %d",
				res.Successes, res.NoBids, res.DeadlineMisses, e.Total, e.Timeout, e.Conn, e.Status4xx, e.Status5xx, e.Other, res.Expired)},
			{"latency ms", fmt.Sprintf("avg %s, min %s, p50 %s, p90 %s, p95 %s, p99 %s, p99.9 %s, max %s",
				fmtMs(res.Latency.AvgUs/1000), fmtMs(usToMs(res.Latency.MinUs)), fmtMs(usToMs(res.Latency.P50Us)), fmtMs(usToMs(res.Latency.P90Us)),
				fmtMs(usToMs(res.Latency.P95Us)), fmtMs(usToMs(res.Latency.P99Us)), fmtMs(usToMs(res.Latency.P999Us)), fmtMs(usToMs(res.Latency.MaxUs)))},
			{"generator", fmt.Sprintf("%.2f CPU s, %.3f cores, %d workers; send lag p50 %s ms, p99 %s ms",
				res.GeneratorCPUSec, res.GeneratorCores, res.Workers, fmtMs(usToMs(res.SendLag.P50Us)), fmtMs(usToMs(res.SendLag.P99Us)))},
		}
		for _, h := range res.ServerSide {
			tv.Summary = append(tv.Summary, kv{"server side", serverLine(h)})
		}
		for _, m := range res.Moving {
			cov := ""
			if !m.Complete {
				cov = fmt.Sprintf(" (run covers only %d s)", m.CoveredSec)
			}
			tv.Summary = append(tv.Summary, kv{fmt.Sprintf("req/s %d min", m.WindowSec/60), fmt.Sprintf("EWMA %s, SMA %s%s", fmtRate(m.EWMA), fmtRate(m.SMA), cov)})
		}
		for _, p := range res.Processes {
			tv.Summary = append(tv.Summary, kv{"process " + p.Name, fmt.Sprintf("pid %d: %.2f CPU s, %.3f cores, peak RSS %.1f MiB %s",
				p.PID, p.CPUSec, p.Cores, float64(p.PeakRSSBytes)/(1<<20), p.Error)})
		}
		v.Targets = append(v.Targets, tv)
	}
	if err := htmlPage.Execute(w, v); err != nil {
		return fmt.Errorf("bench: write html: %w", err)
	}
	return nil
}

type resultGroup struct {
	title   string
	results []*Result
}

// chartGroups splits r's results by the groups of its tables, in order
// (results not in any table row are charted together at the end); a
// report without tables is one untitled group.
func chartGroups(r *Report) []resultGroup {
	if len(r.Results) == 0 {
		return nil
	}
	byName := map[string][]*Result{}
	for _, res := range r.Results {
		byName[res.Target] = append(byName[res.Target], res)
	}
	used := map[*Result]bool{}
	var gs []resultGroup
	for _, t := range r.Tables {
		idx := map[string]int{}
		for _, row := range t.Rows {
			i, ok := idx[row.Group]
			if !ok {
				i = len(gs)
				idx[row.Group] = i
				title := t.Title
				if row.Group != "" {
					title += ": " + row.Group
				}
				gs = append(gs, resultGroup{title: title})
			}
			for _, res := range byName[row.Target] {
				if !used[res] {
					used[res] = true
					gs[i].results = append(gs[i].results, res)
					break
				}
			}
		}
	}
	var rest []*Result
	for _, res := range r.Results {
		if !used[res] {
			rest = append(rest, res)
		}
	}
	if len(rest) > 0 {
		title := ""
		if len(gs) > 0 {
			title = "Other results"
		}
		gs = append(gs, resultGroup{title: title, results: rest})
	}
	var out []resultGroup
	for _, g := range gs {
		if len(g.results) > 0 {
			out = append(out, g)
		}
	}
	return out
}

var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>rtbd bench{{if .R.Title}}: {{.R.Title}}{{end}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.chart{display:block;margin:10px 0;background:#fff}
.chart .title{font-size:13px;font-weight:600}
.chart .grid{stroke:#e6e6e6;stroke-width:1}
.chart .frame{fill:none;stroke:#999}
.chart .ylab{font-size:11px;text-anchor:end;fill:#444}
.chart .xlab{font-size:11px;text-anchor:middle;fill:#444}
.chart .axlab{font-size:12px;text-anchor:middle;fill:#222}
.chart .legend{font-size:12px;fill:#222}
.chart .legendbox{fill:#fff;fill-opacity:0.85;stroke:#ddd}
.note{color:#666}
.wide{overflow-x:auto;max-width:100%}
.wide table{font-size:12px}.wide td,.wide th{padding:2px 5px}.wide th{white-space:normal;vertical-align:bottom}
</style></head><body>
<h1>rtbd bench report{{if .R.Title}}: {{.R.Title}}{{end}}</h1>
<table>{{range .Meta}}<tr><th class="l">{{.K}}</th><td class="l">{{.V}}</td></tr>{{end}}</table>
{{with .Soak}}<h2 id="soak">Fault-injection soak</h2>
<table>{{range .Checks}}<tr><th class="l">{{if .Pass}}PASS{{else}}<span style="color:#c00">FAIL</span>{{end}}</th><td class="l">{{.Name}}</td><td class="l">{{.Detail}}</td></tr>{{end}}</table>
{{range .Environment}}<p class="note">{{.}}</p>{{end}}
{{$.SoakRSS}}
<h3>Faults</h3>
<table><tr><th>start s</th><th>end s</th><th class="l">fault</th><th class="l">detail</th></tr>
{{range .Faults}}<tr><td>{{printf "%.1f" .StartSec}}</td><td>{{printf "%.1f" .EndSec}}</td><td class="l">{{.Label}}</td><td class="l">{{if .Error}}<b>ERROR {{.Error}}</b>; {{end}}{{.Detail}}</td></tr>
{{end}}</table>
<h3>Billing notices against the store</h3>
<table>
<tr><th class="l">accepted</th><td class="l">{{.Notices.Accepted}} ({{.Notices.Distinct}} distinct impressions)</td></tr>
<tr><th class="l">lost</th><td class="l">{{.Notices.Lost}}</td></tr>
<tr><th class="l">double-charged</th><td class="l">{{.Notices.DoubleCharged}} (micros mismatch {{.Notices.MicrosMismatch}})</td></tr>
<tr><th class="l">store</th><td class="l">{{.Notices.StoreImps}} impressions, {{.Notices.StoreMicros}} micros, {{.Notices.StoreKeys}} charge-once keys</td></tr>
<tr><th class="l">outcomes</th><td class="l">{{call $.SoakOutcomes .Notices.BillOutcomes}}; retries {{.Notices.Retries}}, gave up {{.Notices.GaveUp}}</td></tr>
<tr><th class="l">replays</th><td class="l">{{.Notices.ReplaysSent}} to the other bidder: {{call $.SoakOutcomes .Notices.ReplayOutcomes}}</td></tr>
</table>
<h3>Errors and late answers by cause</h3>
<p class="note">{{.BidRequests}} bid requests, {{.BidsLate}} past tmax.</p>
<table><tr><th class="l">kind</th><th class="l">outcome</th><th class="l">cause</th><th>count</th></tr>
{{range .Anomalies}}<tr><td class="l">{{.Kind}}</td><td class="l">{{.Outcome}}</td><td class="l">{{.Cause}}</td><td>{{.Count}}</td></tr>
{{end}}</table>
<h3>RSS per process incarnation (after its warm-up)</h3>
<table><tr><th class="l">process</th><th>pid</th><th>from s</th><th>to s</th><th>first MiB</th><th>last MiB</th><th>min</th><th>max</th><th>growth %</th><th class="l">verdict</th></tr>
{{range .RSSChecks}}<tr><td class="l">{{.Name}}</td><td>{{.PID}}</td><td>{{printf "%.0f" .FromSec}}</td><td>{{printf "%.0f" .ToSec}}</td><td>{{printf "%.1f" .FirstMiB}}</td><td>{{printf "%.1f" .LastMiB}}</td><td>{{printf "%.1f" .MinMiB}}</td><td>{{printf "%.1f" .MaxMiB}}</td><td>{{printf "%+.1f" .GrowthPct}}</td><td class="l">{{if .Judged}}{{if .Flat}}flat{{else}}NOT FLAT{{end}}{{else}}-{{end}} {{.Note}}</td></tr>
{{end}}</table>
{{end}}
{{range $ti, $t := .Tables}}<h2{{if eq $ti 0}} id="tables"{{end}}>{{.Title}}</h2>
<div class="wide"><table><tr>{{range $i, $h := .Header}}<th{{if lt $i 2}} class="l"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if lt $i 2}} class="l"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>
<p class="note">The talk's columns (avg, p50, p99 ms, achieved req/s), then × = ratio to the group's baseline row (remote/local), then ours. harness CPU s is the bench process, which also runs an in-process store; the server columns are the child processes it watched (CPU over the measured phase, peak RSS).</p>
{{range .Notes}}<p class="note">{{.}}</p>{{end}}{{end}}
{{range .R.Notes}}<p class="note">{{.}}</p>{{end}}
{{if .Groups}}<h2 id="charts">Latency percentiles{{if .HasTimeline}} and over time{{end}}</h2>
{{range .Groups}}{{if .Title}}<h3>{{.Title}}</h3>{{end}}{{.Percentiles}}{{.Rate}}{{.P99}}
{{end}}{{end}}
{{if .R.Rows}}<h2 id="comparison">Comparison</h2>
<table><tr><th class="l">target</th><th class="l">mode</th><th>requests</th><th>avg ms</th><th>p50 ms</th><th>p99 ms</th><th>req/s 1 min</th><th>5 min</th><th>15 min</th><th>errors %</th><th>no-bid %</th><th>miss %</th></tr>
{{range .R.Rows}}<tr><td class="l">{{.Target}}</td><td class="l">{{.Mode}}</td><td>{{.Requests}}</td><td>{{call $.FmtMs .AvgMs}}</td><td>{{call $.FmtMs .P50Ms}}</td><td>{{call $.FmtMs .P99Ms}}</td><td>{{call $.FmtRate .Rate1m}}</td><td>{{call $.FmtRate .Rate5m}}</td><td>{{call $.FmtRate .Rate15m}}</td><td>{{call $.Pct .ErrorPct}}</td><td>{{call $.Pct .NoBidPct}}</td><td>{{call $.Pct .MissPct}}</td></tr>
{{end}}</table>
<p class="note">req/s columns: EWMA of per-second throughput (1, 5, 15 minute windows); a run shorter than a window describes only itself (see covered seconds per target).</p>{{end}}
{{if .Config}}<h2>Config</h2><table>{{range .Config}}<tr><th class="l">{{.K}}</th><td class="l">{{.V}}</td></tr>{{end}}</table>{{end}}
{{range .Targets}}<h2>{{.R.Target}}</h2>
<table>{{range .Summary}}<tr><th class="l">{{.K}}</th><td class="l">{{.V}}</td></tr>{{end}}</table>
{{.Histogram}}
<h3>Latency distribution</h3>
<table><tr>{{range .R.Distribution}}<th>{{call $.PercentileLabel .P}} %</th>{{end}}</tr><tr>{{range .R.Distribution}}<td>{{call $.UsMs .Us}} ms</td>{{end}}</tr></table>
{{range .R.Notes}}<p class="note">{{.}}</p>{{end}}
{{end}}
{{range .R.Searches}}<h2>Max rate search: {{.Target}}</h2>
<p>objective: {{.Objective}}; max rate <b>{{call $.FmtRate .MaxRate}} req/s</b>{{if not .Bracketed}} (search cap reached, no failing rate found){{end}}</p>
<table><tr><th>rate</th><th class="l">pass</th><th>requests</th><th>achieved</th><th>p50 ms</th><th>p99 ms</th><th>errors %</th><th class="l">reason</th></tr>
{{range .Steps}}<tr><td>{{call $.FmtRate .Rate}}</td><td class="l">{{.Pass}}</td><td>{{.Requests}}</td><td>{{call $.FmtRate .AchievedRate}}</td><td>{{call $.UsMs .P50Us}}</td><td>{{call $.UsMs .P99Us}}</td><td>{{call $.RatioPct .ErrorRatio}}</td><td class="l">{{.Reason}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))
