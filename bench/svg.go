package bench

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Chart geometry (SVG user units): the plot area is inset from the chart's
// edges to leave room for the title, the tick labels and the axis labels.
const (
	chartW, chartH  = 760, 320
	padLeft, padTop = 64, 28
	plotW, plotH    = chartW - padLeft - 16, chartH - padTop - 44
)

var palette = [...]string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func colorOf(i int) string { return palette[i%len(palette)] }

// series is one line of a chart. dash is the stroke attribute of a dashed
// line ("" for a solid one); more continues the series before it (same
// name and colour, one legend entry): a line with a gap.
type series struct {
	name, color, dash string
	more              bool
	pts               [][2]float64
}

type tick struct {
	v     float64
	label string
}

type axis struct {
	label    string
	min, max float64
	ticks    []tick
}

// linearAxis is an axis from 0 to about hi with about n round ticks (1,
// 2, 5 x 10^k steps).
func linearAxis(label string, hi float64, n int) axis {
	if !(hi > 0) {
		hi = 1
	}
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	a := axis{label: label, max: math.Ceil(hi/step) * step}
	for i := 0; i <= 4*n && float64(i)*step <= a.max+step/2; i++ { // bounded: a huge hi makes max +Inf
		v := float64(i) * step
		text := strconv.FormatFloat(v, 'g', 4, 64)
		if v == math.Trunc(v) && v < 1e15 {
			text = strconv.FormatFloat(v, 'f', 0, 64)
		}
		a.ticks = append(a.ticks, tick{v, text})
	}
	return a
}

// lineChart renders series on linear axes as an inline <svg> element, with
// a labelled vertical line at each mark (events, faults).
func lineChart(title string, xa, ya axis, ss []series, marks ...Event) string {
	sx := func(v float64) float64 { return padLeft + (v-xa.min)/(xa.max-xa.min)*plotW }
	sy := func(v float64) float64 { return padTop + plotH - (v-ya.min)/(ya.max-ya.min)*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, chartW, chartH, chartW, chartH, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s</text>`, padLeft, esc(title))
	for _, t := range ya.ticks {
		y := sy(t.v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid"/>`, padLeft, y, padLeft+plotW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="ylab">%s</text>`, padLeft-6, y+4, esc(t.label))
	}
	for _, t := range xa.ticks {
		x := sx(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="grid"/>`, x, padTop, x, padTop+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="xlab">%s</text>`, x, padTop+plotH+16, esc(t.label))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>`, padLeft, padTop, plotW, plotH)
	for i, m := range marks {
		x, y := sx(m.AtSec), padTop+8+110*(i%2) // alternate heights so that close labels do not overlap
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" stroke-width="1.2" stroke-dasharray="2 2"><title>%s</title></line>`,
			x, padTop, x, padTop+plotH, esc(m.What))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="legend" text-anchor="end" transform="rotate(-90 %.1f %d)">%s</text>`, x-3, y, x-3, y, esc(m.What))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="axlab">%s</text>`, padLeft+plotW/2, chartH-6, esc(xa.label))
	fmt.Fprintf(&b, `<text transform="translate(14 %d) rotate(-90)" class="axlab">%s</text>`, padTop+plotH/2, esc(ya.label))
	for _, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		pts := make([]string, len(s.pts))
		for i, p := range s.pts {
			pts[i] = fmt.Sprintf("%.1f,%.1f", sx(p[0]), sy(p[1]))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"%s><title>%s</title></polyline>`,
			strings.Join(pts, " "), s.color, s.dash, esc(s.name))
	}
	// The legend, on a white box so that it stays readable over the lines.
	legend := slices.DeleteFunc(slices.Clone(ss), func(s series) bool { return s.more })
	if len(legend) > 0 {
		longest := 0
		for _, s := range legend {
			longest = max(longest, len([]rune(s.name)))
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" class="legendbox"/>`, padLeft+6, padTop+2, 34+7*longest, 16*len(legend)+2)
	}
	for i, s := range legend {
		x, y := padLeft+10, padTop+14+16*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`, x, y-4, x+18, y-4, s.color, s.dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="legend">%s</text>`, x+24, y, esc(s.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// percentileChart plots every result's percentile curve on one chart, x on
// the log scale of 1/(1 - p) (90% -> 1, 99% -> 2, 99.9% -> 3) with the
// maximum at the right edge. When the latencies span more than two orders
// of magnitude (a fast median and a slow tail, or a fast target beside a
// slow one) the y axis is logarithmic, so that the medians stay readable
// beside the tails.
func percentileChart(rs []*Result) string {
	lastX, maxY, minY := 1.0, 0.0, math.Inf(1)
	for _, r := range rs {
		if n := r.Latency.Count; n > 0 {
			lastX = max(lastX, math.Ceil(math.Log10(float64(n))))
		}
		maxY = max(maxY, usToMs(r.Latency.MaxUs))
		for _, p := range r.Percentiles {
			if p.Us > 0 {
				minY = min(minY, usToMs(p.Us))
			}
		}
	}
	lastX = min(lastX, 6)
	xa := axis{label: "percentile", max: lastX + 0.5, ticks: []tick{{0, "0%"}, {math.Log10(2), "50%"}, {1, "90%"}, {2, "99%"}}}
	for x := 3.0; x <= lastX; x++ {
		xa.ticks = append(xa.ticks, tick{x, "99." + strings.Repeat("9", int(x)-2) + "%"})
	}
	xa.ticks = append(xa.ticks, tick{xa.max, "max"})
	ya := linearAxis("latency ms", maxY, 6)
	y := func(ms float64) float64 { return ms }
	if maxY/minY > 100 { // minY >= 0.001 (1 us) when set
		ya = axis{label: "latency ms (log scale)", min: math.Floor(math.Log10(minY)), max: math.Ceil(math.Log10(maxY))}
		for k := ya.min; k <= ya.max; k++ {
			ya.ticks = append(ya.ticks, tick{k, strconv.FormatFloat(math.Pow(10, k), 'f', -1, 64)})
		}
		y = func(ms float64) float64 { return math.Log10(max(ms, minY)) }
	}
	var ss []series
	for i, r := range rs {
		s := series{name: r.Target, color: colorOf(i)}
		for _, p := range r.Percentiles {
			x := xa.max
			if p.P < 100 {
				x = min(-math.Log10(1-p.P/100), xa.max)
			}
			s.pts = append(s.pts, [2]float64{x, y(usToMs(p.Us))})
		}
		ss = append(ss, s)
	}
	return lineChart("Latency by percentile (x: log scale of 1/(1-p); right edge = max)", xa, ya, ss)
}

// timelineChart plots a per-second value of every result over its full
// windows (the drain tail and partial windows would read as spikes), with
// the results' events marked; withP50 adds each result's p50 as a dashed
// line.
func timelineChart(title, ylabel string, rs []*Result, val func(Second) float64, withP50 bool) string {
	maxT, maxY := 1.0, 0.0
	var ss []series
	var marks []Event
	for i, r := range rs {
		s := series{name: r.Target, color: colorOf(i)}
		p50 := series{name: r.Target + " p50", color: colorOf(i), dash: ` stroke-dasharray="5 3"`}
		anyFull := slices.ContainsFunc(r.Timeline, func(s Second) bool { return s.Full })
		for _, sec := range r.Timeline {
			if anyFull && !sec.Full {
				continue
			}
			x := float64(sec.T) + 0.5
			maxT, maxY = max(maxT, float64(sec.T+1)), max(maxY, val(sec))
			s.pts = append(s.pts, [2]float64{x, val(sec)})
			p50.pts = append(p50.pts, [2]float64{x, usToMs(sec.P50Us)})
		}
		ss = append(ss, s)
		if withP50 {
			ss = append(ss, p50)
		}
		for _, e := range r.Events {
			if !slices.Contains(marks, e) {
				marks = append(marks, e)
				maxT = max(maxT, e.AtSec)
			}
		}
	}
	return lineChart(title, linearAxis("seconds since start of measured phase", maxT, 8), linearAxis(ylabel, maxY, 6), ss, marks...)
}

func esc(s string) string { return html.EscapeString(s) }
