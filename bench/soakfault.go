package bench

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// soakFault is one scheduled fault.
type soakFault struct {
	kind   string
	target int // node or bidder index (0-based); unused for redis and disks
	at     time.Duration
}

// schedule spreads Rounds x the runnable fault kinds evenly over the
// measured phase; each round alternates the node and bidder it hits.
func (f *soakFleet) schedule() []soakFault {
	var kinds []string
	for _, k := range SoakFaultKinds {
		if slices.Contains(f.o.Faults, k) {
			kinds = append(kinds, k)
		}
	}
	n := len(kinds) * f.o.Rounds
	if n == 0 {
		return nil
	}
	every := f.o.Duration / time.Duration(n+1)
	var out []soakFault
	for r := 0; r < f.o.Rounds; r++ {
		for i, k := range kinds {
			slot := r*len(kinds) + i
			t := r % 2
			switch k {
			case FaultNodeCut:
				t = (r + 1) % 2 // the other one than kill hits in the round
			}
			out = append(out, soakFault{kind: k, target: t, at: time.Duration(slot+1) * every})
		}
	}
	return out
}

// runFaults runs the schedule, one fault at a time (a fault that overruns
// its slot delays the next), until ctx ends.
func (f *soakFleet) runFaults(ctx context.Context, sched []soakFault, sum *SoakSummary) {
	for _, fl := range sched {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(f.measured.Add(fl.at))):
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
		sum.Faults = append(sum.Faults, rec)
	}
}

// inject runs one fault to its recovery. ctx ending stops waiting, never a
// restart: everything killed is started again.
func (f *soakFleet) inject(ctx context.Context, fl soakFault, rec *SoakFault) error {
	bg := context.WithoutCancel(ctx)
	switch fl.kind {
	case FaultNodeKill:
		n := f.nodes[fl.target]
		rec.Label, rec.Target = n.name+" kill -9", n.name
		old := n.srv.pid()
		n.srv.Kill()
		sleepCtx(ctx, f.o.Outage)
		if err := n.srv.start(bg, true); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		f.pids.Store(n.name, n.srv.PID())
		rec.Detail = fmt.Sprintf("pid %d killed (SIGKILL), down %v, restarted on the same port (pid %d), serving again", old, f.o.Outage, n.srv.pid())
	case FaultRedisKill:
		rec.Label, rec.Target = "redis kill -9", "redis-server"
		old := f.redis.pid()
		f.redis.Kill()
		sleepCtx(ctx, f.o.Outage)
		if err := f.redis.start(bg, true); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		f.pids.Store("redis-server", f.redis.PID())
		rec.Detail = fmt.Sprintf("pid %d killed (SIGKILL), down %v, restarted on the same port and AOF (pid %d)", old, f.o.Outage, f.redis.pid())
	case FaultBidderKill:
		b := f.bidders[fl.target]
		rec.Label, rec.Target = b.name+" kill -9", b.name
		b.mu.Lock()
		defer b.mu.Unlock()
		old := b.srv.pid()
		t0 := time.Now()
		b.srv.Kill()
		how := fmt.Sprintf("pid %d killed (SIGKILL)", old)
		b.starts++
		if err := b.srv.start(bg, true); err != nil {
			return fmt.Errorf("%s; restart: %w", how, err)
		}
		f.pids.Store(b.name, b.srv.PID())
		rec.Detail = fmt.Sprintf("%s; restarted on its data dir and ports (pid %d), ready %v after the fault", how, b.srv.pid(), time.Since(t0).Round(time.Millisecond))
	case FaultNodeCut:
		n := f.nodes[fl.target]
		rec.Target = n.name
		cut := 5 * time.Second
		rec.Label = n.name + " SIGSTOP"
		if err := signalOf(n.srv, syscall.SIGSTOP); err != nil {
			return err
		}
		sleepCtx(ctx, cut)
		if err := signalOf(n.srv, syscall.SIGCONT); err != nil {
			return err
		}
		rec.Detail = fmt.Sprintf("stopped (SIGSTOP) for %v, then SIGCONT: connections open, nothing answered", cut)
	default:
		return fmt.Errorf("unknown fault %q", fl.kind)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
