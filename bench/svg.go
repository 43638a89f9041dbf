package bench

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Chart geometry (SVG user units).
const (
	chartW   = 760
	chartH   = 320
	padLeft  = 64
	padRight = 16
	padTop   = 28
	padBot   = 44
)

var palette = [...]string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func colorOf(i int) string { return palette[i%len(palette)] }

type series struct {
	name   string
	color  string
	dashed bool
	pts    [][2]float64
	// more continues the series before it (same name and colour, one
	// legend entry): a line with a gap.
	more bool
}

// dash is the stroke attribute of a dashed series ("" for a solid one).
func (s series) dash() string {
	if s.dashed {
		return ` stroke-dasharray="5 3"`
	}
	return ""
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
	for i := 0; i <= 4*n; i++ { // bounded: float steps may not reach max exactly
		v := float64(i) * step
		if v > a.max+step/2 {
			break
		}
		a.ticks = append(a.ticks, tick{v, fmtTick(v)})
	}
	return a
}

func fmtTick(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// mark is a vertical line at x with a label (an event on a timeline).
type mark struct {
	x     float64
	label string
}

// lineChart renders series on linear axes as an inline <svg> element,
// with optional vertical marks.
func lineChart(title string, xa, ya axis, ss []series, marks ...mark) string {
	var b strings.Builder
	pw := float64(chartW - padLeft - padRight)
	ph := float64(chartH - padTop - padBot)
	sx := func(v float64) float64 { return padLeft + (v-xa.min)/(xa.max-xa.min)*pw }
	sy := func(v float64) float64 { return padTop + ph - (v-ya.min)/(ya.max-ya.min)*ph }
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, chartW, chartH, chartW, chartH, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s</text>`, padLeft, esc(title))
	// grid and ticks
	for _, t := range ya.ticks {
		y := sy(t.v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid"/>`, padLeft, y, chartW-padRight, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="ylab">%s</text>`, padLeft-6, y+4, esc(t.label))
	}
	for _, t := range xa.ticks {
		x := sx(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" class="grid"/>`, x, padTop, x, padTop+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="xlab">%s</text>`, x, padTop+ph+16, esc(t.label))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" class="frame"/>`, padLeft, padTop, pw, ph)
	for i, m := range marks {
		x := sx(m.x)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#555" stroke-width="1.2" stroke-dasharray="2 2"><title>%s</title></line>`, x, padTop, x, padTop+ph, esc(m.label))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="legend" text-anchor="end" transform="rotate(-90 %.1f %d)">%s</text>`, x-3, padTop+8+110*(i%2), x-3, padTop+8+110*(i%2), esc(m.label))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axlab">%s</text>`, padLeft+pw/2, chartH-6, esc(xa.label))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" class="axlab">%s</text>`, padTop+ph/2, esc(ya.label))
	for _, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		var pts strings.Builder
		for i, p := range s.pts {
			if i > 0 {
				pts.WriteByte(' ')
			}
			fmt.Fprintf(&pts, "%.1f,%.1f", sx(p[0]), sy(p[1]))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"%s><title>%s</title></polyline>`, pts.String(), s.color, s.dash(), esc(s.name))
	}
	// legend, on a white box so it stays readable over the lines
	lx, ly := padLeft+10, padTop+14
	maxName, entries := 0, 0
	for _, s := range ss {
		if !s.more {
			maxName = max(maxName, len([]rune(s.name)))
			entries++
		}
	}
	if entries > 0 {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" class="legendbox"/>`, lx-4, ly-12, 34+7*maxName, 16*entries+2)
	}
	for _, s := range ss {
		if s.more {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`, lx, ly-4, lx+18, ly-4, s.color, s.dash())
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="legend">%s</text>`, lx+24, ly, esc(s.name))
		ly += 16
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// percentileX maps a percentile to the log scale of 1/(1 - p): 90 -> 1,
// 99 -> 2, 99.9 -> 3. 100 maps to capX.
func percentileX(p, capX float64) float64 {
	if p >= 100 {
		return capX
	}
	return min(-math.Log10(1-p/100), capX)
}

// percentileChart plots every result's percentile curve on one chart. When
// the latencies span more than two orders of magnitude (a fast median and a
// slow tail, or a fast target beside a slow one) the y axis is logarithmic,
// so that the medians stay readable beside the tails.
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
	maxX := lastX + 0.5 // the maximum is drawn at the right edge
	logY := maxY > 0 && !math.IsInf(minY, 1) && maxY/minY > 100
	y := func(ms float64) float64 { return ms }
	if logY {
		minY = max(minY, 0.001)
		y = func(ms float64) float64 { return math.Log10(max(ms, minY)) }
	}
	var ss []series
	for i, r := range rs {
		s := series{name: r.Target, color: colorOf(i)}
		for _, p := range r.Percentiles {
			s.pts = append(s.pts, [2]float64{percentileX(p.P, maxX), y(usToMs(p.Us))})
		}
		ss = append(ss, s)
	}
	xt := []tick{{0, "0%"}, {math.Log10(2), "50%"}, {1, "90%"}, {2, "99%"}}
	for x := 3.0; x <= lastX; x++ {
		xt = append(xt, tick{x, "99." + strings.Repeat("9", int(x)-2) + "%"})
	}
	xt = append(xt, tick{maxX, "max"})
	ya := axis{label: "latency ms"}
	if logY {
		lo, hi := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
		if hi <= lo {
			hi = lo + 1
		}
		ya = axis{label: "latency ms (log scale)", min: lo, max: hi}
		for k := lo; k <= hi; k++ {
			ya.ticks = append(ya.ticks, tick{k, strconv.FormatFloat(math.Pow(10, k), 'f', -1, 64)})
		}
	} else {
		ya = linearAxis(ya.label, maxY, 6)
	}
	return lineChart("Latency by percentile (x: log scale of 1/(1-p); right edge = max)",
		axis{label: "percentile", min: 0, max: maxX, ticks: xt}, ya, ss)
}

// timelineChart plots a per-second value of every result.
func timelineChart(title, ylabel string, rs []*Result, val func(Second) float64, withP50 bool) string {
	maxT, maxY := 1.0, 0.0
	var ss []series
	for i, r := range rs {
		s := series{name: r.Target, color: colorOf(i)}
		p50 := series{name: r.Target + " p50", color: colorOf(i), dashed: true}
		anyFull := slices.ContainsFunc(r.Timeline, func(s Second) bool { return s.Full })
		for _, sec := range r.Timeline {
			if anyFull && !sec.Full {
				continue // the drain tail and partial windows would read as spikes
			}
			x := float64(sec.T) + 0.5
			maxT = max(maxT, float64(sec.T+1))
			v := val(sec)
			maxY = max(maxY, v)
			s.pts = append(s.pts, [2]float64{x, v})
			if withP50 {
				p50.pts = append(p50.pts, [2]float64{x, usToMs(sec.P50Us)})
			}
		}
		ss = append(ss, s)
		if withP50 {
			ss = append(ss, p50)
		}
	}
	var marks []mark
	seen := map[Event]bool{}
	for _, r := range rs {
		for _, e := range r.Events {
			if !seen[e] {
				seen[e] = true
				marks = append(marks, mark{x: e.AtSec, label: e.What})
				maxT = max(maxT, e.AtSec)
			}
		}
	}
	return lineChart(title, linearAxis("seconds since start of measured phase", maxT, 8), linearAxis(ylabel, maxY, 6), ss, marks...)
}

func esc(s string) string { return html.EscapeString(s) }
