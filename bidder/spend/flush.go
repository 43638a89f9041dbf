package spend

// The Writer's flushing: its workers drain campaigns' buffers into batches,
// flush them to the Store with backoff, apply the fleet-wide totals the
// store returns; its timers queue the campaigns that are due and sweep
// expired frequency entries.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"go.uber.org/zap"
)

func (w *Writer) worker() {
	defer w.workers.Done()
	batch := make([]*campState, 0, w.opts.MaxBatch)
	for cs := range w.queue {
		batch = append(batch[:0], cs)
	more:
		for len(batch) < w.opts.MaxBatch {
			select {
			case c, ok := <-w.queue:
				if !ok {
					break more
				}
				batch = append(batch, c)
			default:
				break more
			}
		}
		w.flushCampaigns(batch)
		w.outstanding.Add(-int64(len(batch)))
		clear(batch)
	}
}

// flushCampaigns makes one Store.Flush call for the campaigns given (each
// either its failed batch, retried unchanged, or its drained buffers), then
// applies the result. Campaigns owned by another flusher are skipped.
func (w *Writer) flushCampaigns(list []*campState) {
	items := make([]*campBatch, 0, len(list))
	room := w.opts.MaxFlushNotices // notices this call may still carry
	var later []*campState         // campaigns left for the next call
	for _, cs := range list {
		cs.queued.Store(false)
		if room <= 0 {
			later = append(later, cs)
			continue
		}
		if !cs.flushing.CompareAndSwap(false, true) {
			continue
		}
		b := cs.retry
		if b == nil {
			b = w.drain(cs, room)
		}
		if b == nil {
			cs.flushing.Store(false)
			continue
		}
		room -= b.notices()
		items = append(items, b)
	}
	// A campaign left out, or drained only in part, is queued again once
	// this call is done, so a backlog goes out in bounded calls.
	defer func() {
		for _, cs := range later {
			w.kick(cs)
		}
		for _, b := range items {
			if b.capped {
				w.kick(b.cs)
			}
		}
	}()
	if len(items) == 0 {
		return
	}
	n := 0
	for _, b := range items {
		n += len(b.deltas)
	}
	deltas := make([]Delta, 0, n)
	for _, b := range items {
		deltas = append(deltas, b.deltas...)
	}
	ctx, cancel := context.WithTimeout(w.base, w.opts.FlushTimeout)
	start := time.Now()
	totals, err := w.store.Flush(ctx, deltas)
	cancel()
	w.m.flushSeconds.Observe(time.Since(start).Seconds())
	if err == nil && len(totals) != len(deltas) {
		err = fmt.Errorf("spend: store returned %d totals for %d deltas", len(totals), len(deltas))
	}
	now := w.opts.Now()
	if err != nil {
		w.m.flushErr.Inc()
		w.log.Warn("spend: flush failed; deltas kept for a retry", zap.Int("campaigns", len(items)), zap.Int("deltas", len(deltas)), zap.Error(err))
		for _, b := range items {
			cs := b.cs
			cs.retry = b
			cs.failures++
			cs.retryAt.Store(now.Add(w.backoff(cs.failures)).UnixNano())
			cs.hasRetry.Store(true)
			cs.flushing.Store(false)
		}
		return
	}
	w.m.flushOK.Inc()
	w.m.flushDeltas.Add(float64(len(deltas)))
	off := 0
	for _, b := range items {
		cs := b.cs
		w.apply(b, totals[off:off+len(b.deltas)], now)
		off += len(b.deltas)
		cs.retry = nil
		cs.failures = 0
		cs.retryAt.Store(0)
		cs.hasRetry.Store(false)
		cs.flushing.Store(false)
		// Adds that passed a threshold during the flush found the campaign
		// busy (their kick was skipped): queue it again now.
		if w.overThreshold(cs, cs.set.Load(), cs.pendMicros.Load(), cs.pendImps.Load()) {
			w.kick(cs)
		}
	}
}

func (w *Writer) backoff(failures int) time.Duration {
	d := w.opts.RetryMin
	for i := 1; i < failures && d < w.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, w.opts.RetryMax)
	w.randMu.Lock()
	j := 0.8 + 0.4*w.rnd.Float64()
	w.randMu.Unlock()
	return time.Duration(float64(d) * j)
}

// drain moves cs's accepted notices into a new batch (pending -> in
// flight), or returns nil when there are none. The batch has one delta per
// day (more when a day has more than MaxDeltaUsers notices), each carrying
// its notices and the frequency counts they add, all sealed with one
// Delta.Seq: max(the previous batch's + 1, unix nanoseconds now), so Seq
// grows per campaign and Options.InstanceID across restarts too (as long
// as the clock does not go back by more than a restart takes).
func (w *Writer) drain(cs *campState, limit int) *campBatch {
	var notes []pendNote
	capped := false
	for i := range cs.shards {
		sh := &cs.shards[i]
		sh.mu.Lock()
		k := min(len(sh.notes), limit-len(notes))
		if k < len(sh.notes) {
			capped = true
		}
		for j := range sh.notes[:k] {
			if e := sh.notes[j].e; e != nil {
				e.pending--
				e.inflight++
			}
		}
		notes = append(notes, sh.notes[:k]...)
		rest := copy(sh.notes, sh.notes[k:])
		clear(sh.notes[rest:])
		sh.notes = sh.notes[:rest]
		sh.mu.Unlock()
	}
	cd, cday, hasCounts := w.drainCounts(cs)
	if len(notes) == 0 && !hasCounts {
		return nil
	}
	var sumM int64
	for i := range notes {
		sumM += notes[i].n.Micros
	}
	cs.pendMicros.Add(-sumM)
	cs.pendImps.Add(-int64(len(notes)))

	seq := max(cs.lastSeq+1, time.Now().UnixNano())
	cs.lastSeq = seq
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].day < notes[j].day })
	b := &campBatch{cs: cs, capped: capped}
	var idx map[*freqEntry]int
	for i := range notes {
		p := &notes[i]
		last := len(b.deltas) - 1
		if last < 0 || b.days[last] != p.day || len(b.deltas[last].Notices) >= w.opts.MaxDeltaUsers {
			b.deltas = append(b.deltas, Delta{ID: w.nextID(), Campaign: cs.id, Day: dayString(p.day), Origin: w.opts.InstanceID, Seq: seq})
			b.days = append(b.days, p.day)
			b.refs = append(b.refs, nil)
			last++
			clear(idx)
		}
		d := &b.deltas[last]
		d.Micros += p.n.Micros
		d.Imps++
		n := p.n
		n.FreqRef = 0
		if p.e != nil {
			if idx == nil {
				idx = map[*freqEntry]int{}
			}
			j, ok := idx[p.e]
			if !ok {
				j = len(d.Freq)
				idx[p.e] = j
				d.Freq = append(d.Freq, FreqDelta{User: p.e.key.user, Window: p.e.key.window, Expires: time.Unix(p.e.expires, 0)})
				b.refs[last] = append(b.refs[last], freqRef{e: p.e, sh: p.sh})
			}
			d.Freq[j].Count++
			b.refs[last][j].n++
			n.FreqRef = j + 1
		}
		d.Notices = append(d.Notices, n)
	}
	if hasCounts {
		cd.Seq = seq
		b.deltas = append(b.deltas, cd)
		b.days = append(b.days, cday)
		b.refs = append(b.refs, nil)
	}
	return b
}

func (w *Writer) nextID() string {
	return w.opts.WriterID + ":" + strconv.FormatUint(w.seq.Add(1), 36)
}

// apply records a confirmed batch: the fleet totals, and that its counts
// are no longer unconfirmed.
func (w *Writer) apply(b *campBatch, totals []Total, now time.Time) {
	cs := b.cs
	for i := range b.deltas {
		d := &b.deltas[i]
		t := &totals[i]
		if d.Counts != nil {
			// Counts only (see drainCounts): its day's spend says nothing new.
			cs.confirmCounts(d)
			cs.mergeFleetCounts(&t.Counts)
			continue
		}
		cs.updateFleet(b.days[i], t, now.UnixNano())
		cs.unflTotal.Add(-d.Micros)
		if dc := cs.day.Load(); dc != nil && dc.day == b.days[i] {
			dc.micros.Add(-d.Micros)
			dc.imps.Add(-d.Imps)
		}
		for j, r := range b.refs[i] {
			var c int64
			if j < len(t.Freq) {
				c = t.Freq[j]
			}
			r.sh.mu.Lock()
			r.e.inflight -= r.n
			if c > r.e.fleet {
				r.e.fleet = c
			}
			r.sh.mu.Unlock()
		}
		if t.Duplicates > 0 {
			w.m.duplicates.Add(float64(t.Duplicates))
		}
	}
	if w.opts.Confirmed != nil {
		var seqs []uint64
		for i := range b.deltas {
			for j := range b.deltas[i].Notices {
				if q := b.deltas[i].Notices[j].Seq; q != 0 {
					seqs = append(seqs, q)
				}
			}
		}
		if len(seqs) > 0 {
			w.opts.Confirmed(seqs)
		}
	}
}

// updateFleet merges totals of day into the fleet view: counters only grow,
// so the larger value wins (flushes may return out of order).
func (cs *campState) updateFleet(day int32, t *Total, at int64) {
	cs.mergeFleetCounts(&t.Counts)
	for {
		old := cs.fleet.Load()
		n := &fleetView{day: day, dayMicros: t.DayMicros, dayImps: t.DayImps, totalMicros: t.TotalMicros, totalImps: t.TotalImps, at: at}
		if old != nil {
			switch {
			case old.day > day:
				n.day, n.dayMicros, n.dayImps = old.day, old.dayMicros, old.dayImps
			case old.day == day:
				n.dayMicros = max(n.dayMicros, old.dayMicros)
				n.dayImps = max(n.dayImps, old.dayImps)
			}
			n.totalMicros = max(n.totalMicros, old.totalMicros)
			n.totalImps = max(n.totalImps, old.totalImps)
			n.at = max(n.at, old.at)
		}
		if cs.fleet.CompareAndSwap(old, n) {
			return
		}
	}
}

func (w *Writer) timerLoop() {
	defer w.loops.Done()
	t := time.NewTicker(w.opts.FlushInterval)
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if !w.enqueueReady(w.stop) {
			return
		}
		if time.Since(lastSweep) >= w.opts.SweepInterval {
			w.sweep(w.opts.Now())
			lastSweep = time.Now()
		}
	}
}

// enqueueReady queues every campaign with unflushed counts or a retry that
// is due. It blocks while the queue is full; false if done closed meanwhile.
func (w *Writer) enqueueReady(done <-chan struct{}) bool {
	now := w.opts.Now().UnixNano()
	for _, cs := range *w.camps.Load() {
		if cs.pendImps.Load() == 0 && cs.counts.any.Load() == 0 && !cs.hasRetry.Load() {
			continue
		}
		if cs.retryAt.Load() > now || cs.queued.Swap(true) {
			continue
		}
		w.outstanding.Add(1)
		select {
		case w.queue <- cs:
		case <-done:
			w.outstanding.Add(-1)
			cs.queued.Store(false)
			return false
		}
	}
	return true
}

// refreshLoop reads the fleet totals of active campaigns whose view is
// older than one flush interval (those this bidder did not flush), so every
// bidder sees the fleet's spend within about one interval.
func (w *Writer) refreshLoop() {
	defer w.loops.Done()
	t := time.NewTicker(w.opts.FlushInterval)
	defer t.Stop()
	w.refresh() // learn the fleet state at start
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.refresh()
	}
}

func (w *Writer) refresh() {
	stale := w.opts.Now().Add(-w.opts.FlushInterval * 9 / 10).UnixNano()
	_, _ = w.readFleet(w.base, func(cs *campState) bool {
		f := cs.fleet.Load()
		return f == nil || f.at <= stale
	}, true)
}

// sweep drops frequency entries whose window has ended and that hold
// nothing unconfirmed.
func (w *Writer) sweep(now time.Time) {
	sec := now.Unix()
	for _, cs := range *w.camps.Load() {
		for i := range cs.shards {
			sh := &cs.shards[i]
			sh.mu.Lock()
			for k, e := range sh.freq {
				if e.end <= sec && e.pending == 0 && e.inflight == 0 {
					delete(sh.freq, k)
				}
			}
			sh.mu.Unlock()
		}
	}
}
