package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/ingest/similar"
	"github.com/rtbd/rtbd/records"
)

// DefaultViewsWindow is how far back views are read (-views-window).
const DefaultViewsWindow = 720 * time.Hour

// SimilarSummary is what the similar-lists step of a full ingest did.
type SimilarSummary struct {
	// Computed: lists were computed from views (Stats); otherwise the
	// previous version's lists were carried over (Carried of them, from
	// CarriedFrom; 0 and "" when there was no previous version or it had
	// none).
	Computed    bool
	Stats       similar.Stats
	Carried     int64
	CarriedFrom string
	// MissingDirs: -views directories that do not exist; BadFiles: view
	// files that could not be read to the end (skipped from there).
	MissingDirs []string
	BadFiles    int64
	// Reason says why lists were carried over ("no -views given", "no view
	// records in the window").
	Reason  string
	Elapsed time.Duration
}

// similarLists writes the similar lists of the version being built (a
// full snapshot): computed from the views under opts.Views when they hold
// any view in the window, else the live version's lists, carried over
// unchanged (a missing or empty views directory never wipes the lists).
func (j *job) similarLists() (*SimilarSummary, error) {
	start := time.Now()
	s := &SimilarSummary{}
	defer func() { s.Elapsed = time.Since(start) }()
	var dirs []string
	for _, d := range j.opts.Views {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			s.MissingDirs = append(s.MissingDirs, d)
			j.log.Warn("views directory missing: skipped", zap.String("dir", d))
			continue
		} else if err != nil {
			return s, fmt.Errorf("-views %s: %w", d, err)
		}
		dirs = append(dirs, d)
	}
	w, err := j.b.NewSimilarWriter()
	if err != nil {
		return s, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	computed := false
	if len(dirs) > 0 {
		if computed, err = j.computeSimilar(dirs, w, s); err != nil {
			return s, err
		}
	}
	if !computed {
		s.Reason = "no -views given"
		if len(j.opts.Views) > 0 {
			s.Reason = "no view records in the window"
		}
		if prev, perr := catalog.ReadPointer(j.opts.Data, catalog.CurrentFile); perr == nil {
			n, err := j.b.CopySimilar(prev, w)
			if err != nil {
				return s, fmt.Errorf("carrying the similar lists of %s over: %w", prev, err)
			}
			s.Carried, s.CarriedFrom = n, prev
		}
		j.log.Info("similar lists carried over from the previous version", zap.String("reason", s.Reason),
			zap.String("from", s.CarriedFrom), zap.Int64("lists", s.Carried))
	}
	if err := w.Finish(); err != nil {
		return s, err
	}
	ok = true
	return s, nil
}

// computeSimilar reads the version's products and the views, and writes
// the lists through w; false (nothing written) when no view record lies in
// the window.
func (j *job) computeSimilar(dirs []string, w *catalog.SimilarWriter, s *SimilarSummary) (bool, error) {
	c := similar.New(j.opts.Similar)
	err := j.b.EachProduct(func(p *catalogpb.Product) error {
		c.AddProduct(similar.Product{Group: p.ProductGroupId, ID: p.ProductId, PriceMicros: p.PriceMicros,
			Category: p.Category, Brand: p.Brand, InStock: p.InStock})
		return nil
	})
	if err != nil {
		return false, err
	}
	to := j.opts.ViewsUntil
	if to.IsZero() {
		to = j.start
	}
	from := to.Add(-j.opts.ViewsWindow)
	var views int64
	for _, d := range dirs {
		parts, err := records.Partitions(d, records.KindView, from, to)
		if err != nil {
			return false, fmt.Errorf("-views %s: %w", d, err)
		}
		for _, p := range parts {
			for _, f := range p.Files {
				err := records.ReadFile(f, records.KindView, func(r *records.Record) error {
					if r.Time.Before(from) || !r.Time.Before(to) {
						return nil
					}
					views++
					c.AddView(r.UserID, r.GroupID, r.ProductID, r.Time)
					return nil
				})
				if err != nil { // a damaged file: what it gave is kept, the rest skipped
					s.BadFiles++
					j.log.Warn("views file unreadable: skipped", zap.String("file", f), zap.Error(err))
				}
			}
		}
	}
	if views == 0 {
		return false, nil
	}
	st, err := c.Compute(func(g, id int64, list []catalog.Similar) error { return w.Add(g, id, list) })
	s.Stats = st
	if err != nil {
		return false, err
	}
	s.Computed = true
	j.log.Info("similar lists computed", zap.String("summary", st.String()))
	return true, nil
}
