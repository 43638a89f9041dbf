package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"
)

// soakFault is one scheduled fault.
type soakFault struct {
	kind   string
	target int // node or bidder index (0-based); unused for redis
	at     time.Duration
}

// schedule spreads Rounds x the runnable fault kinds evenly over the
// measured phase; each round alternates the node and bidder it hits.
func (f *soakFleet) schedule() []soakFault {
	kinds := slices.DeleteFunc(slices.Clone(SoakFaultKinds), func(k string) bool { return !slices.Contains(f.o.Faults, k) })
	every := f.o.Duration / time.Duration(len(kinds)*f.o.Rounds+1)
	var out []soakFault
	for r := range f.o.Rounds {
		for i, k := range kinds {
			t := r % 2
			if k == FaultNodeCut {
				t = (r + 1) % 2 // the other one than kill hits in the round
			}
			out = append(out, soakFault{kind: k, target: t, at: time.Duration(r*len(kinds)+i+1) * every})
		}
	}
	return out
}

// runFaults runs the schedule, one fault at a time (a fault that overruns
// its slot delays the next), until ctx ends.
func (f *soakFleet) runFaults(ctx context.Context, sched []soakFault) {
	for _, fl := range sched {
		if !sleepCtx(ctx, time.Until(f.measured.Add(fl.at))) {
			return
		}
		rec := SoakFault{Kind: fl.kind, StartSec: time.Since(f.measured).Seconds()}
		err := f.inject(ctx, fl, &rec)
		rec.EndSec = time.Since(f.measured).Seconds()
		if err != nil {
			rec.Error = err.Error()
			f.logf("  fault %s FAILED: %v", rec.Label, err)
		} else {
			f.logf("  fault %s: t=%.1f-%.1f s: %s", rec.Label, rec.StartSec, rec.EndSec, rec.Detail)
		}
		f.sum.Faults = append(f.sum.Faults, rec)
	}
}

// soakCut is how long node-cut keeps a node stopped.
const soakCut = 5 * time.Second

// inject runs one fault to its recovery. ctx ending stops waiting, never a
// restart: everything killed is started again.
func (f *soakFleet) inject(ctx context.Context, fl soakFault, rec *SoakFault) error {
	p, outage := f.redis, f.o.Outage
	switch fl.kind {
	case FaultNodeKill, FaultNodeCut:
		p = f.nodes[fl.target]
	case FaultBidderKill:
		p, outage = f.bidders[fl.target], 0
	}
	rec.Target = p.name
	if fl.kind == FaultNodeCut {
		rec.Label = p.name + " SIGSTOP"
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		stopped := pause(ctx, soakCut)
		rec.Detail = fmt.Sprintf("stopped (SIGSTOP) for %s, then SIGCONT: connections open, nothing answered", stopped)
		return p.Signal(syscall.SIGCONT)
	}
	rec.Label = p.name + " kill -9"
	old, t0 := p.curPID.Load(), time.Now()
	p.Kill()
	down := pause(ctx, outage)
	if err := p.launch(context.WithoutCancel(ctx), true); err != nil {
		return fmt.Errorf("pid %d killed (SIGKILL), down %s; restart: %w", old, down, err)
	}
	rec.Detail = fmt.Sprintf("pid %d killed (SIGKILL), down %s, restarted on its ports and data (pid %d), ready %v after the fault",
		old, down, p.curPID.Load(), time.Since(t0).Round(time.Millisecond))
	return nil
}

// pause waits d, or until ctx ends (the load is over), and says how long
// it waited: d, or the shorter time when ctx cut it short.
func pause(ctx context.Context, d time.Duration) string {
	t0 := time.Now()
	sleepCtx(ctx, d)
	if waited := time.Since(t0); waited < d {
		return fmt.Sprintf("%v (cut short by the end of the load; %v planned)", waited.Round(time.Millisecond), d)
	}
	return d.String()
}

// sleepCtx waits d, or until ctx ends; false when ctx has ended (even
// when d was up too: select picks either ready case at random).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return ctx.Err() == nil
}

// faultAt returns the index of the fault an anomaly at sec is due to: the
// one whose outage (its start, less 0.2 s, to its recovery) holds sec, else
// the most recent one whose grace after its recovery holds it; -1: none.
// (On a short schedule a fault's grace runs into the next fault.)
func faultAt(faults []SoakFault, sec, grace float64) int {
	i := -1
	for j, fl := range faults {
		if sec >= fl.StartSec-0.2 && sec <= fl.EndSec {
			return j
		}
		if sec > fl.EndSec && sec <= fl.EndSec+grace {
			i = j
		}
	}
	return i
}

// attribute counts every error and late answer of the measured phase
// under the fault it is due to (faultAt), else "unattributed".
func (f *soakFleet) attribute() {
	sum := f.sum
	counts := map[SoakAnomalyCount]int64{} // Count 0: the key
	for _, a := range f.anomalies {
		if a.AtSec < 0 || a.AtSec > f.o.Duration.Seconds()+f.o.Timeout.Seconds() {
			continue // warmup, or notices after the load ended
		}
		i := faultAt(sum.Faults, a.AtSec, f.o.FaultGrace.Seconds())
		cause := "unattributed"
		if i >= 0 {
			cause = sum.Faults[i].Label
		} else if len(sum.Unattributed) < 50 {
			sum.Unattributed = append(sum.Unattributed, a)
		}
		counts[SoakAnomalyCount{Kind: a.Kind, Outcome: a.Outcome, Cause: cause}]++
	}
	for k, n := range counts {
		k.Count = n
		sum.Anomalies = append(sum.Anomalies, k)
	}
	slices.SortFunc(sum.Anomalies, func(a, b SoakAnomalyCount) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Outcome, b.Outcome), strings.Compare(a.Cause, b.Cause))
	})
}
