package ingest

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"
	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal (a progress bar makes sense).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProgress reports progress until the returned stop is called: a bar
// on opts.Progress (a terminal), and a structured log line every
// opts.LogInterval.
func (j *job) startProgress() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	if j.opts.Progress != nil {
		wg.Add(1)
		go func() { defer wg.Done(); j.runBar(done) }()
	}
	if j.opts.LogInterval > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); j.runLog(done) }()
	}
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// runBar draws the parse bar (input bytes, bytes/s, ETA, rows/s), then the
// write bar (records merged into tables).
func (j *job) runBar(done <-chan struct{}) {
	w := j.opts.Progress
	total := j.bytesTotal.Load()
	if total == 0 {
		total = -1 // stdin: a spinner
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("parse"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	_ = bar.RenderBlank() // starts the bar's clock: rates and ETA count from here
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	phase := phaseParse
	for {
		select {
		case <-done:
			_ = bar.Finish()
			fmt.Fprintln(w)
			return
		case <-t.C:
		}
		el := time.Since(j.start).Seconds()
		switch p := j.phase.Load(); {
		case p == phaseParse || p == 0:
			_ = bar.Set64(j.bytesRead.Load())
			bar.Describe(fmt.Sprintf("parse %s rows (%s rows/s, %d rejected)",
				human(j.rows.Load()), human(int64(float64(j.rows.Load())/el)), j.rejected.Load()))
		case p != phase && p == phaseWrite:
			phase = p
			_ = bar.Finish()
			fmt.Fprintln(w)
			bar = progressbar.NewOptions64(j.total.Load(),
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription("write"),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("rows"),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(200*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
			_ = bar.RenderBlank()
		case p == phaseWrite:
			_ = bar.Set64(j.written.Load())
		case p == phasePublish && p != phase:
			phase = p
			_ = bar.Set64(j.total.Load())
			bar.Describe("publish")
		}
	}
}

// runLog writes a progress line every LogInterval (not on a terminal).
func (j *job) runLog(done <-chan struct{}) {
	t := time.NewTicker(j.opts.LogInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		el := time.Since(j.start).Seconds()
		rows, read, total := j.rows.Load(), j.bytesRead.Load(), j.bytesTotal.Load()
		fields := []zap.Field{
			zap.String("phase", phaseName(j.phase.Load())),
			zap.Int64("rows", rows), zap.Int64("accepted", j.accepted.Load()),
			zap.Int64("rejected", j.rejected.Load()),
			zap.Int64("bytes_read", read), zap.Int64("bytes_total", total),
			zap.Float64("rows_per_s", float64(rows)/el),
			zap.Float64("mb_per_s", float64(read)/el/1e6),
			zap.Int64("runs", j.runs.Load()), zap.Int64("written", j.written.Load()),
		}
		if j.phase.Load() == phaseParse && total > 0 && read > 0 {
			fields = append(fields, zap.Float64("percent", 100*float64(read)/float64(total)),
				zap.Duration("parse_eta", time.Duration(float64(total-read)/(float64(read)/el)*float64(time.Second)).Round(time.Second)))
		}
		j.log.Info("ingest progress", fields...)
	}
}

func phaseName(p int32) string {
	switch p {
	case phaseParse:
		return "parse"
	case phaseWrite:
		return "write"
	case phasePublish:
		return "publish"
	}
	return "start"
}

// human formats n with k/M suffixes.
func human(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
