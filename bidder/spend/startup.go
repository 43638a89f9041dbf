package spend

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// readFleet reads (Store.Read) the fleet totals of the active campaigns
// pick selects, one call per day (campaigns in different time zones may be
// on different days), and records them as the campaigns' fleet view. It
// returns how many picked campaigns could not be read and the last error;
// warn logs failures at Warn (else Debug).
func (w *Writer) readFleet(parent context.Context, pick func(*campState) bool, warn bool) (failed int, err error) {
	now := w.opts.Now()
	byDay := map[int32][]*campState{}
	for _, cs := range *w.camps.Load() {
		if !cs.active.Load() || !pick(cs) {
			continue
		}
		d := dayOf(now, cs.location())
		byDay[d] = append(byDay[d], cs)
	}
	for day, list := range byDay {
		ids := make([]string, len(list))
		for i, cs := range list {
			ids[i] = cs.id
		}
		ctx, cancel := context.WithTimeout(parent, w.opts.FlushTimeout)
		totals, rerr := w.store.Read(ctx, ids, dayString(day))
		cancel()
		if rerr == nil && len(totals) != len(ids) {
			rerr = fmt.Errorf("spend: store read returned %d totals for %d campaigns", len(totals), len(ids))
		}
		if rerr != nil {
			w.m.readErr.Inc()
			failed += len(ids)
			err = rerr
			if warn {
				w.log.Warn("spend: fleet totals read failed", zap.Int("campaigns", len(ids)), zap.Error(rerr))
			} else {
				w.log.Debug("spend: fleet totals read failed", zap.Int("campaigns", len(ids)), zap.Error(rerr))
			}
			continue
		}
		w.m.readOK.Inc()
		at := w.opts.Now().UnixNano()
		for i, cs := range list {
			cs.updateFleet(day, &totals[i], at)
		}
	}
	return failed, err
}

// budgeted reports whether s has a daily or a total budget.
func (s *CampaignBudget) budgeted() bool { return s.DailyMicros > 0 || s.TotalMicros > 0 }

// isUnread selects the active budgeted campaigns whose fleet totals this
// bidder has never learned (no read nor flush has returned them yet).
func isUnread(cs *campState) bool {
	s := cs.set.Load()
	return s != nil && s.budgeted() && cs.fleet.Load() == nil
}

// ReadTotals reads now the fleet totals of every registered budgeted
// campaign (SetCampaigns, Check) whose totals this bidder does not know
// yet: the ones Check pauses with ReasonUnread when
// BudgetOptions.WaitForTotals is set. It returns how many of them are
// still unread and the store's error when a read failed. A bidder calls it
// at start, after SetCampaigns; Budgets also reads such campaigns in the
// background (right after Check first sees one, then with backoff while
// the store fails).
func (b *Budgets) ReadTotals(ctx context.Context) (unread int, err error) {
	_, err = b.w.readFleet(ctx, isUnread, false)
	return b.Unread(), err
}

// Unread is the number of active budgeted campaigns whose fleet totals
// this bidder has not read yet (paused by Check under WaitForTotals).
func (b *Budgets) Unread() int { return b.w.unreadCampaigns() }

func (w *Writer) unreadCampaigns() int {
	n := 0
	for _, cs := range *w.camps.Load() {
		if cs.active.Load() && isUnread(cs) {
			n++
		}
	}
	return n
}

// wakeGate asks the gate loop for an immediate read (no allocation, never
// blocks).
func (b *Budgets) wakeGate() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// startGate starts the loop that reads the totals of unread budgeted
// campaigns; the Writer's Close stops it. Nothing starts once Close has
// begun.
func (b *Budgets) startGate() {
	w := b.w
	w.active.Add(1) // Close waits for it, as for an Add
	defer w.active.Add(-1)
	if w.closed.Load() {
		return
	}
	w.loops.Add(1)
	go b.gateLoop()
}

// gateLoop reads the totals of unread budgeted campaigns when Check wakes
// it, and every FlushInterval; while reads fail it retries with backoff
// (RetryMin doubling up to FlushInterval) and does not answer wakes, so a
// bid rate cannot become a read rate against a failing store.
func (b *Budgets) gateLoop() {
	w := b.w
	defer w.loops.Done()
	maxWait := max(w.opts.FlushInterval, w.opts.RetryMin)
	wait := w.opts.RetryMin
	failing := false
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-b.wake:
			if failing {
				continue
			}
		}
		if b.Unread() == 0 {
			failing = false
			t.Reset(maxWait)
			continue
		}
		_, err := b.ReadTotals(w.base)
		if err != nil {
			if !failing {
				w.log.Warn("spend: reading the fleet totals of budgeted campaigns failed; they stay paused, retrying", zap.Int("campaigns", b.Unread()), zap.Error(err))
			}
			failing = true
			t.Reset(wait)
			wait = min(wait*2, maxWait)
			continue
		}
		if failing {
			w.log.Info("spend: fleet totals read; budgeted campaigns bid again")
		}
		failing, wait = false, w.opts.RetryMin
		t.Reset(maxWait)
	}
}
