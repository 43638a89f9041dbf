package bench

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
)

// WriteHTML writes r as one self-contained HTML page: inline SVG charts
// generated here (percentile curves on one plot, throughput and p99 over
// time with the run's events marked, the soak's RSS), then the text report.
// A report with scenario Tables gets one set of charts per table group
// (say, "3 products": local, grpc, redis), so that each plot compares a few
// lines; results in no group are charted together. It references no
// external script, style sheet, font or image.
func WriteHTML(w io.Writer, r *Report) error {
	type chartGroup struct {
		Title                  string
		Percentiles, Rate, P99 template.HTML
	}
	var text strings.Builder
	if err := WriteText(&text, r); err != nil {
		return err
	}
	v := struct {
		R       *Report
		Groups  []chartGroup
		SoakRSS template.HTML
		Text    string
	}{R: r, Text: text.String()}
	if r.Soak != nil {
		v.SoakRSS = template.HTML(rssChart(r.Soak))
	}
	for _, g := range chartGroups(r) {
		cg := chartGroup{Title: g.title, Percentiles: template.HTML(percentileChart(g.results))}
		if slices.ContainsFunc(g.results, func(res *Result) bool { return len(res.Timeline) > 0 }) {
			cg.Rate = template.HTML(timelineChart("Throughput over time (completed requests per full 1 s window)", "req/s", g.results,
				func(s Second) float64 { return float64(s.Requests) }, false))
			cg.P99 = template.HTML(timelineChart("p99 latency over time (solid p99, dashed p50, per full 1 s window)", "latency ms", g.results,
				func(s Second) float64 { return usToMs(s.P99Us) }, true))
		}
		v.Groups = append(v.Groups, cg)
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
	byName := map[string][]*Result{}
	for _, res := range r.Results {
		byName[res.Target] = append(byName[res.Target], res)
	}
	used := map[*Result]bool{}
	var gs []resultGroup
	index := map[[2]string]int{} // table title, row group -> gs index
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			i, ok := index[[2]string{t.Title, row.Group}]
			if !ok {
				i = len(gs)
				index[[2]string{t.Title, row.Group}] = i
				gs = append(gs, resultGroup{title: strings.TrimSuffix(t.Title+": "+row.Group, ": ")})
			}
			same := byName[row.Target]
			if k := slices.IndexFunc(same, func(res *Result) bool { return !used[res] }); k >= 0 {
				used[same[k]] = true
				gs[i].results = append(gs[i].results, same[k])
			}
		}
	}
	if rest := slices.DeleteFunc(slices.Clone(r.Results), func(res *Result) bool { return used[res] }); len(rest) > 0 {
		title := ""
		if len(gs) > 0 {
			title = "Other results"
		}
		gs = append(gs, resultGroup{title: title, results: rest})
	}
	return slices.DeleteFunc(gs, func(g resultGroup) bool { return len(g.results) == 0 })
}

var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>rtbd bench{{if .R.Title}}: {{.R.Title}}{{end}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
pre{font-size:12px}
.chart{display:block;margin:10px 0;background:#fff}
.chart .title{font-size:13px;font-weight:600}
.chart .grid{stroke:#e6e6e6;stroke-width:1}
.chart .frame{fill:none;stroke:#999}
.chart .ylab{font-size:11px;text-anchor:end;fill:#444}
.chart .xlab{font-size:11px;text-anchor:middle;fill:#444}
.chart .axlab{font-size:12px;text-anchor:middle;fill:#222}
.chart .legend{font-size:12px;fill:#222}
.chart .legendbox{fill:#fff;fill-opacity:0.85;stroke:#ddd}
</style></head><body>
<h1>rtbd bench report{{if .R.Title}}: {{.R.Title}}{{end}}</h1>
{{.SoakRSS}}
{{if .Groups}}<h2 id="charts">Latency percentiles and over time</h2>
{{range .Groups}}{{if .Title}}<h3>{{.Title}}</h3>{{end}}{{.Percentiles}}{{.Rate}}{{.P99}}
{{end}}{{end}}
<h2 id="report">Report</h2>
<pre>{{.Text}}</pre>
</body></html>
`))
