package bench

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
)

// WriteHTML writes r as one self-contained HTML page (no external script,
// style sheet, font or image): inline SVG charts, then the text report.
// Each table group (say, "3 products": local, grpc, redis) gets its own
// charts, so that each plot compares a few lines; results in no group are
// charted together.
func WriteHTML(w io.Writer, r *Report) error {
	var text strings.Builder
	if err := WriteText(&text, r); err != nil {
		return err
	}
	v := struct {
		R       *Report
		Groups  []chartGroup
		SoakRSS template.HTML
		Text    string
	}{R: r, Groups: chartGroups(r), Text: text.String()}
	if r.Soak != nil {
		v.SoakRSS = template.HTML(rssChart(r.Soak))
	}
	for i, g := range v.Groups {
		charts := []string{percentileChart(g.results)}
		if slices.ContainsFunc(g.results, func(res *Result) bool { return len(res.Timeline) > 0 }) {
			charts = append(charts,
				timelineChart("Throughput over time (completed requests per full 1 s window)", "req/s", g.results,
					func(s Second) float64 { return float64(s.Requests) }, false),
				timelineChart("p99 latency over time (solid p99, dashed p50, per full 1 s window)", "latency ms", g.results,
					func(s Second) float64 { return usToMs(s.P99Us) }, true))
		}
		v.Groups[i].Charts = template.HTML(strings.Join(charts, "\n"))
	}
	if err := htmlPage.Execute(w, v); err != nil {
		return fmt.Errorf("bench: write html: %w", err)
	}
	return nil
}

type chartGroup struct {
	Title   string
	results []*Result
	Charts  template.HTML
}

// chartGroups splits r's results by the groups of its tables, in order,
// then the results in no table row; a report without tables is one
// untitled group.
func chartGroups(r *Report) []chartGroup {
	used := make([]bool, len(r.Results))
	var gs []chartGroup
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			title := strings.TrimSuffix(t.Title+": "+row.Group, ": ")
			g := slices.IndexFunc(gs, func(g chartGroup) bool { return g.Title == title })
			if g < 0 {
				g = len(gs)
				gs = append(gs, chartGroup{Title: title})
			}
			if i := claim(r.Results, used, row.Target); i >= 0 {
				gs[g].results = append(gs[g].results, r.Results[i])
			}
		}
	}
	rest := chartGroup{}
	if len(gs) > 0 {
		rest.Title = "Other results"
	}
	for i, res := range r.Results {
		if !used[i] {
			rest.results = append(rest.results, res)
		}
	}
	gs = append(gs, rest)
	return slices.DeleteFunc(gs, func(g chartGroup) bool { return len(g.results) == 0 })
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
{{range .Groups}}{{if .Title}}<h3>{{.Title}}</h3>{{end}}{{.Charts}}
{{end}}{{end}}
<h2 id="report">Report</h2>
<pre>{{.Text}}</pre>
</body></html>
`))
