package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// maxTimelineRows bounds the timeline printed per result: a longer one
// prints its head and tail (the JSON has all).
const maxTimelineRows = 120

// WriteText writes r as aligned plain-text tables for a terminal: metadata,
// the soak's findings and the scenario's tables, then per target a ghz-style
// summary, histogram, latency distribution, watched processes and the
// per-second timeline; then the max-rate searches.
func WriteText(w io.Writer, r *Report) error {
	out := &textWriter{}
	title := "rtbd bench report"
	if r.Title != "" {
		title += ": " + r.Title
	}
	out.printf("%s\n", title)
	out.printf("created %s  host %s  %s %s/%s  %d CPUs (GOMAXPROCS %d)",
		r.Created.Format("2006-01-02 15:04:05 MST"), r.Host, r.GoVersion, r.OS, r.Arch, r.NumCPU, r.GOMAXPROCS)
	if r.GitRev != "" {
		out.printf("  git %s", r.GitRev)
	}
	out.printf("\n")
	if len(r.Config) > 0 {
		out.printf("config:\n")
		tw := out.tab()
		for _, k := range slices.Sorted(maps.Keys(r.Config)) {
			fmt.Fprintf(tw, "  %s\t%s\n", k, r.Config[k])
		}
		out.flush(tw)
	}
	for _, n := range r.Notes {
		out.printf("note: %s\n", n)
	}
	if r.Soak != nil {
		writeSoak(out, r.Soak)
	}
	for _, t := range r.Tables {
		writeTable(out, t)
	}
	for _, res := range r.Results {
		out.printf("\n")
		writeResult(out, res)
	}
	for _, s := range r.Searches {
		out.printf("\n")
		writeSearch(out, s)
	}
	return out.copyTo(w)
}

func writeResult(out *textWriter, res *Result) {
	how := string(res.Mode)
	switch res.Mode {
	case ModeOpenLoop:
		how = fmt.Sprintf("open loop: %s req/s offered, %s arrival, max in flight %d", fmtRate(res.OfferedRate), res.Arrival, res.MaxInFlight)
	case ModeClosedLoop:
		how = fmt.Sprintf("closed loop: concurrency %d", res.Concurrency)
	}
	out.printf("== %s (%s; %.1f s measured after %.1f s warmup; timeout %s ms, tmax %s ms) ==\n",
		res.Target, how, res.DurationSec, res.WarmupSec, fmtMs(res.TimeoutMs), fmtMs(res.TmaxMs))
	if res.Aborted {
		out.printf("ABORTED: partial result\n")
	}
	l, e := res.Latency, res.Errors
	out.printf("Summary:\n")
	tw := out.tab()
	fmt.Fprintf(tw, "  Count:\t%d\n", res.Requests)
	fmt.Fprintf(tw, "  Total:\t%.2f s\n", res.ElapsedSec)
	fmt.Fprintf(tw, "  Slowest:\t%s ms\n", fmtMs(usToMs(l.MaxUs)))
	fmt.Fprintf(tw, "  Fastest:\t%s ms\n", fmtMs(usToMs(l.MinUs)))
	fmt.Fprintf(tw, "  Average:\t%s ms\n", fmtMs(l.AvgUs/1000))
	fmt.Fprintf(tw, "  Requests/sec:\t%s\n", fmtRate(res.AchievedRate))
	fmt.Fprintf(tw, "  Outcomes:\tok %d, no-bid %d, deadline-miss %d, errors %d (timeout %d, conn %d, 4xx %d, 5xx %d, other %d), expired in generator %d\n",
		res.Successes, res.NoBids, res.DeadlineMisses, e.Total, e.Timeout, e.Conn, e.Status4xx, e.Status5xx, e.Other, res.Expired)
	gen := fmt.Sprintf("%.2f CPU s, %.3f cores", res.GeneratorCPUSec, res.GeneratorCores)
	if res.GeneratorShared > 1 {
		gen += fmt.Sprintf(" (shared by %d loads)", res.GeneratorShared)
	}
	if res.Mode == ModeOpenLoop {
		gen += fmt.Sprintf("; send lag p50 %s ms, p99 %s ms, max %s ms", fmtMs(usToMs(res.SendLag.P50Us)), fmtMs(usToMs(res.SendLag.P99Us)), fmtMs(usToMs(res.SendLag.MaxUs)))
	}
	fmt.Fprintf(tw, "  Generator:\t%s; %d workers\n", gen, res.Workers)
	out.flush(tw)

	if len(res.Histogram) > 0 {
		out.printf("\nResponse time histogram (ms):\n")
		maxC := slices.MaxFunc(res.Histogram, func(a, b HistogramBucket) int { return cmp.Compare(a.Count, b.Count) }).Count
		tw = out.tab()
		for _, b := range res.Histogram {
			bar := min(max(b.Count*40/max(maxC, 1), 0), 40) // clamped: a report read from a file may hold anything
			fmt.Fprintf(tw, "  %.3f\t[%d]\t|%s\n", b.MarkUs/1000, b.Count, strings.Repeat("∎", int(bar)))
		}
		out.flush(tw)
	}
	if len(res.Distribution) > 0 {
		out.printf("\nLatency distribution:\n")
		for _, p := range res.Distribution {
			out.printf("  %s %% in %s ms\n", strconv.FormatFloat(p.P, 'f', -1, 64), fmtMs(usToMs(p.Us)))
		}
	}
	if len(res.Processes) > 0 {
		out.printf("\nProcesses:\n")
		tw = out.tab()
		fmt.Fprintf(tw, "  name\tpid\tCPU s\tcores\tpeak RSS MiB\tRSS MiB\terror\n")
		for _, p := range res.Processes {
			fmt.Fprintf(tw, "  %s\t%d\t%.2f\t%.3f\t%.1f\t%.1f\t%s\n", p.Name, p.PID, p.CPUSec, p.Cores,
				float64(p.PeakRSSBytes)/(1<<20), float64(p.RSSBytes)/(1<<20), p.Error)
		}
		out.flush(tw)
	}
	for _, n := range res.Notes {
		out.printf("note: %s\n", n)
	}
	if len(res.Timeline) > 0 {
		out.printf("\nTimeline (1 s windows, by completion time; * = drain or partial window):\n")
		tw = out.tab()
		fmt.Fprintln(tw, "  t\trequests\tok\tno-bid\terrors\tmiss\tavg ms\tp50 ms\tp99 ms\tmax ms")
		tl, half := res.Timeline, maxTimelineRows/2
		for i, s := range tl {
			if len(tl) > maxTimelineRows && i >= half && i < len(tl)-half {
				if i == half {
					fmt.Fprintf(tw, "  ...\t%d rows omitted\n", len(tl)-maxTimelineRows)
				}
				continue
			}
			mark := ""
			if !s.Full {
				mark = "*"
			}
			ev, sep := "", "\t<- " // the events of this second
			for _, e := range res.Events {
				if int(e.AtSec) == s.T {
					ev += sep + fmt.Sprintf("%s at %.1f s", e.What, e.AtSec)
					sep = "; "
				}
			}
			fmt.Fprintf(tw, "  %d%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s%s\n", s.T, mark, s.Requests, s.Successes, s.NoBids, s.Errors, s.DeadlineMisses,
				fmtMs(s.AvgUs/1000), fmtMs(usToMs(s.P50Us)), fmtMs(usToMs(s.P99Us)), fmtMs(usToMs(s.MaxUs)), ev)
		}
		out.flush(tw)
	}
}

func writeSearch(out *textWriter, s *MaxRateResult) {
	out.printf("== max rate search: %s (objective: %s) ==\n", s.Target, s.Objective)
	state := "converged between a passing and a failing rate"
	if !s.Bracketed {
		state = "no failing rate found up to the search cap"
	}
	out.printf("max rate: %s req/s (%s)\n", fmtRate(s.MaxRate), state)
	tw := out.tab()
	fmt.Fprintf(tw, "  step\trate\tpass\trequests\tachieved\tp50 ms\tp99 ms\terrors %%\tmiss %%\treason\n")
	for i, st := range s.Steps {
		fmt.Fprintf(tw, "  %d\t%s\t%v\t%d\t%s\t%s\t%s\t%.3f\t%.3f\t%s\n", i+1, fmtRate(st.Rate), st.Pass, st.Requests, fmtRate(st.AchievedRate),
			fmtMs(usToMs(st.P50Us)), fmtMs(usToMs(st.P99Us)), 100*st.ErrorRatio, 100*st.MissRatio, st.Reason)
	}
	out.flush(tw)
}

// summary is a result's latency and rate in one line, for progress logs.
func summary(r *Result) string {
	return fmt.Sprintf("avg %s ms, p50 %s ms, p99 %s ms, %s req/s", fmtMs(r.Latency.AvgUs/1000),
		fmtMs(usToMs(r.Latency.P50Us)), fmtMs(usToMs(r.Latency.P99Us)), fmtRate(r.AchievedRate))
}

func usToMs(us int64) float64 { return float64(us) / 1000 }

// fmtMs formats milliseconds with precision suited to the magnitude.
func fmtMs(ms float64) string {
	switch a := math.Abs(ms); {
	case a < 10:
		return strconv.FormatFloat(ms, 'f', 3, 64)
	case a < 1000:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	}
	return strconv.FormatFloat(ms, 'f', 1, 64)
}

// fmtRate formats a rate with thousands separators: 3732.4 -> "3,732.4".
func fmtRate(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	for i := strings.IndexByte(s, '.') - 3; i > 0 && s[i-1] != '-'; i -= 3 { // every 3 digits left of the point
		s = s[:i] + "," + s[i:]
	}
	return s
}

// textWriter collects a text report: the writers print into it and
// copyTo writes it out once, so that they need not check errors.
type textWriter struct{ bytes.Buffer }

func (t *textWriter) printf(format string, args ...any) { fmt.Fprintf(t, format, args...) }

func (t *textWriter) tab() *tabwriter.Writer { return tabwriter.NewWriter(t, 0, 0, 2, ' ', 0) }

func (t *textWriter) flush(tw *tabwriter.Writer) { _ = tw.Flush() } // into a buffer: cannot fail

func (t *textWriter) copyTo(w io.Writer) error {
	if _, err := t.WriteTo(w); err != nil {
		return fmt.Errorf("bench: write: %w", err)
	}
	return nil
}
