package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rtbd/rtbd/catalog"
)

// maxFanIn bounds how many runs one merge reads at once (open files and
// read buffers: maxFanIn * runReadBuffer per merging goroutine). More runs
// are first merged in groups into longer runs.
const maxFanIn = 64

// mergeSources reads srcs (each in (key, seq) order, each key at most once
// per source) and calls emit with the last record (highest seq) of every
// key, in key order. It returns how many records were superseded.
func mergeSources(ctx context.Context, srcs []source, emit func(*rec) error) (dups int64, err error) {
	// The heap holds each live source with its current record (cur returns
	// the same pointer for a source's life).
	type item struct {
		s source
		r *rec
	}
	h := make([]item, 0, len(srcs))
	for _, s := range srcs {
		if s.next() {
			h = append(h, item{s, s.cur()})
		} else if err := s.err(); err != nil {
			return 0, err
		}
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && h[r].r.less(h[l].r) {
				m = r
			}
			if !h[m].r.less(h[i].r) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	var n int64
	for len(h) > 0 {
		if n++; n&0xffff == 0 && ctx.Err() != nil {
			return dups, ctx.Err()
		}
		top := h[0]
		superseded := false
		if len(h) > 1 {
			c := h[1].r
			if len(h) > 2 && h[2].r.less(c) {
				c = h[2].r
			}
			superseded = c.sameKey(top.r)
		}
		if superseded {
			dups++
		} else if err := emit(top.r); err != nil {
			return dups, err
		}
		if !top.s.next() {
			if err := top.s.err(); err != nil {
				return dups, err
			}
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	for _, s := range srcs {
		dups += s.dups()
	}
	return dups, nil
}

// reduceRuns merges runs in groups of maxFanIn into longer runs until at
// most maxFanIn are left (deletes and seqs are kept: a later merge still
// needs them).
func (j *job) reduceRuns(ctx context.Context, runs []*runFile) ([]*runFile, error) {
	for len(runs) > maxFanIn {
		group := runs[:maxFanIn]
		srcs := make([]source, 0, len(group))
		closeAll := func() {
			for _, s := range srcs {
				s.close()
			}
		}
		for _, r := range group {
			s, err := openFileSource(r, bound{}, bound{})
			if err != nil {
				closeAll()
				return nil, err
			}
			srcs = append(srcs, s)
		}
		out, err := j.newRunFile()
		if err != nil {
			closeAll()
			return nil, err
		}
		var scratch []byte
		dups, err := mergeSources(ctx, srcs, func(r *rec) error {
			scratch = out.add(r, scratch)
			return out.err
		})
		closeAll()
		run, cerr := out.close()
		if err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		j.dups.Add(dups)
		for _, r := range group {
			removeQuiet(r.path)
		}
		runs = append(runs[maxFanIn:], run)
	}
	return runs, nil
}

// splitPoints picks up to parts-1 keys that cut the records of runs and
// mem into parts of about equal size.
func splitPoints(runs []*runFile, mem *arena, parts int) []bound {
	if parts <= 1 {
		return nil
	}
	var samples []bound
	for _, r := range runs {
		for _, e := range r.index {
			samples = append(samples, bound{g: e.g, id: e.id, ok: true})
		}
	}
	if mem != nil {
		for i := 0; i < len(mem.ents); i += max(1, len(mem.ents)/1024) {
			samples = append(samples, bound{g: mem.ents[i].g, id: mem.ents[i].id, ok: true})
		}
	}
	slices.SortFunc(samples, func(a, b bound) int {
		if a.g != b.g {
			return cmp.Compare(a.g, b.g)
		}
		return cmp.Compare(a.id, b.id)
	})
	samples = slices.Compact(samples)
	var cuts []bound
	for i := 1; i < parts; i++ {
		k := len(samples) * i / parts
		if k == 0 || k >= len(samples) {
			continue
		}
		if len(cuts) == 0 || cuts[len(cuts)-1] != samples[k] {
			cuts = append(cuts, samples[k])
		}
	}
	return cuts
}

// writeTables merges the sorted runs (and the in-memory last run) into
// tables of the new version, in parallel over key ranges, and returns the
// tables' paths.
func (j *job) writeTables(ctx context.Context, runs []*runFile, mem *arena) ([]string, error) {
	parts := int(min(int64(j.opts.Workers), max(1, j.total.Load()/j.opts.perWorker)))
	cuts := splitPoints(runs, mem, parts)
	ranges := make([][2]bound, 0, len(cuts)+1)
	lo := bound{}
	for _, c := range cuts {
		ranges = append(ranges, [2]bound{lo, c})
		lo = c
	}
	ranges = append(ranges, [2]bound{lo, {}})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([][]string, len(ranges))
	errs := make([]error, len(ranges))
	var wg sync.WaitGroup
	for i, rg := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = j.writeRange(ctx, runs, mem, rg[0], rg[1])
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	var paths []string
	for i := range ranges {
		paths = append(paths, results[i]...)
	}
	if err := errors.Join(errs...); err != nil {
		return paths, err
	}
	return paths, nil
}

// writeRange merges the records in [lo, hi) into tables.
func (j *job) writeRange(ctx context.Context, runs []*runFile, mem *arena, lo, hi bound) ([]string, error) {
	srcs := make([]source, 0, len(runs)+1)
	defer func() {
		for _, s := range srcs {
			s.close()
		}
	}()
	for _, r := range runs {
		s, err := openFileSource(r, lo, hi)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s)
	}
	if mem != nil {
		srcs = append(srcs, newMemSource(mem, lo, hi))
	}
	w := &tableWriter{j: j}
	dups, err := mergeSources(ctx, srcs, w.add)
	j.dups.Add(dups)
	if ferr := w.finish(); err == nil {
		err = ferr
	}
	j.sets.Add(w.sets)
	j.tombstones.Add(w.deletes)
	j.inserted.Add(w.inserted)
	j.updated.Add(w.updated)
	j.removed.Add(w.removed)
	j.absent.Add(w.absent)
	return w.paths, err
}

// tableWriter turns merged records into tables of the new version, rolling
// to a new table at opts.TableBytes.
type tableWriter struct {
	j     *job
	sst   *catalog.SST
	paths []string
	n     int64

	sets, deletes                      int64
	inserted, updated, removed, absent int64 // delta: against the base version
}

func (w *tableWriter) add(r *rec) error {
	w.n++
	if w.n&1023 == 0 {
		w.j.written.Add(1024)
	}
	if r.kind == kindDelete && !w.j.opts.Delta {
		return nil // a full snapshot: the product is simply absent
	}
	if w.sst == nil {
		s, err := w.j.newSST()
		if err != nil {
			return err
		}
		w.sst = s
	}
	if w.j.opts.Delta {
		exists, err := w.j.baseHas(r.key)
		if err != nil {
			return err
		}
		switch {
		case r.kind == kindSet && exists:
			w.updated++
		case r.kind == kindSet:
			w.inserted++
		case exists:
			w.removed++
		default:
			w.absent++
		}
	}
	var err error
	if r.kind == kindSet {
		err = w.sst.Set(r.key, r.value)
		w.sets++
	} else {
		err = w.sst.Delete(r.key)
		w.deletes++
	}
	if err != nil {
		return err
	}
	if w.sst.Len()&255 == 0 && w.sst.EstimatedSize() >= uint64(w.j.opts.TableBytes) {
		return w.roll()
	}
	return nil
}

func (w *tableWriter) roll() error {
	path, err := w.sst.Finish()
	w.sst = nil
	if err != nil {
		return err
	}
	if path != "" {
		w.paths = append(w.paths, path)
		w.j.tableDone()
	}
	return nil
}

func (w *tableWriter) finish() error {
	w.j.written.Add(w.n & 1023)
	if w.sst == nil {
		return nil
	}
	return w.roll()
}

// newSST creates the next table (Builder.NewSST is not safe for concurrent
// use; the writers share it).
func (j *job) newSST() (*catalog.SST, error) {
	j.sstMu.Lock()
	defer j.sstMu.Unlock()
	if j.opts.Delta {
		return j.b.NewDeltaSST() // tombstones must not be written for the lowest level
	}
	return j.b.NewSST()
}

// tableDone is called after each finished table (the crash point "sst").
func (j *job) tableDone() {
	if j.tables.Add(1) == 1 {
		j.crash(CrashSST)
	}
}

// baseHas reports whether the version the delta applies to holds key (the
// builder's DB holds exactly the base until the tables are ingested).
func (j *job) baseHas(key []byte) (bool, error) {
	_, closer, err := j.b.DB().Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ingest: reading the base version: %w", err)
	}
	closer.Close()
	return true, nil
}

// newRunFile starts the next run file in the temp dir.
func (j *job) newRunFile() (*runWriter, error) {
	n := j.runSeq.Add(1)
	path := filepath.Join(j.tmp, "run-"+strconv.FormatInt(n, 10))
	f, err := createExcl(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	return newRunWriter(f, path), nil
}
