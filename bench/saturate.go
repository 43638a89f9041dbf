package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// saturateRounds is how many closed-loop runs each topology gets per
// popularity in runSaturated.
const saturateRounds = 3

// runSaturated measures each topology's throughput when the bidder is
// the bottleneck: bid requests alone at the middle weight with the users
// of popularity pop, closed loop with o.Saturate connections (each sends
// its next request when the last is answered, as wrk does), for
// Load.Duration. The topologies take turns (local, remote; remote, local;
// local, remote), saturateRounds runs each, so a host whose speed drifts
// moves them alike. A note per popularity gives, over all rounds of each
// topology, the bids/s and the CPU per answered bid of the bidder and its
// nodes (/proc), their ratios to the first topology, and each round's
// bids/s ratio.
func runSaturated(ctx context.Context, o BidderOptions, ts []*topo, pop string, rep *Report, entries *[]TableEntry, near map[string]NearStats, logf func(string, ...any)) error {
	w := o.Weights[len(o.Weights)/2]
	wl := bidWorkload{users: o.Users, weight: w}
	if u, ok := popUsers(pop); ok {
		wl.userPrefix = u.prefix
	}
	type sum struct {
		bids, answers, cpu, bidderCPU, elapsed float64
		rounds                                 []float64 // bids/s
		near                                   NearStats
	}
	sums := make([]sum, len(ts))
	logf("saturated %d %s: closed loop, %d connections, %v per run, %d runs per topology taking turns", w, pop, o.Saturate, o.Load.Duration, saturateRounds)
	for round := 0; round < saturateRounds; round++ {
		for i := range ts {
			k := inTurn(round, i, len(ts))
			t := ts[k]
			name := fmt.Sprintf("%s/%d %s saturated %d", t.name, w, pop, round+1)
			var near0 NearStats
			metrics := t.metricsURL()
			if metrics != "" {
				near0 = readNearStats(ctx, metrics)
			}
			r, err := RunClosedLoop(ctx, bidTarget(name, t.addr, wl, nil, o.Saturate), ClosedLoopOptions{
				Concurrency: o.Saturate, Duration: o.Load.Duration, Warmup: min(o.Load.Warmup, time.Second),
				Timeout: o.Load.Timeout, Tmax: o.Load.Tmax, Seed: o.Load.Seed + uint64(round), Watch: t.watch})
			if err != nil {
				return fmt.Errorf("bench: %s: %w", name, err)
			}
			if metrics != "" {
				if ns := readNearStats(ctx, metrics).Sub(near0); ns.Found {
					near[name] = ns
					sums[k].near.Hits += ns.Hits
					sums[k].near.Misses += ns.Misses
					sums[k].near.Found = true
				}
			}
			s := &sums[k]
			bidRate := float64(r.Successes) / max(r.ElapsedSec, 1e-9)
			s.bids += float64(r.Successes)
			s.answers += float64(r.Requests)
			s.elapsed += r.ElapsedSec
			s.rounds = append(s.rounds, bidRate)
			for _, p := range r.Processes {
				if p.Error == "" {
					s.cpu += p.CPUSec
					if strings.HasPrefix(p.Name, "bidder") {
						s.bidderCPU += p.CPUSec
					}
				}
			}
			rep.Results = append(rep.Results, r)
			e := TableEntry{Result: r, Group: "saturated"}
			if k > 0 {
				e.Baseline = fmt.Sprintf("%s/%d %s saturated %d", ts[0].name, w, pop, round+1)
			}
			*entries = append(*entries, e)
			logf("  %s: %s bids/s, %d no-bids, %d errors, p50 %s ms, p99 %s ms", name, fmtRate(bidRate), r.NoBids, r.Errors.Total,
				fmtMs(usToMs(r.Latency.P50Us)), fmtMs(usToMs(r.Latency.P99Us)))
		}
	}
	base := sums[0]
	perBid := func(cpu, bids float64) float64 { return cpu / max(bids, 1) * 1e6 }
	for k, t := range ts {
		s := sums[k]
		line := fmt.Sprintf("saturated %s/%d %s (%d connections, %d runs): %s bids/s (runs %s), %.1f%% of answers bids; CPU per bid: bidder %.0f us, bidder + nodes %.0f us",
			t.name, w, pop, o.Saturate, saturateRounds, fmtRate(s.bids/max(s.elapsed, 1e-9)), joinRates(s.rounds), 100*s.bids/max(s.answers, 1),
			perBid(s.bidderCPU, s.bids), perBid(s.cpu, s.bids))
		if k > 0 {
			var each []string
			for i := range s.rounds {
				each = append(each, fmt.Sprintf("%.2f", s.rounds[i]/max(base.rounds[i], 1e-9)))
			}
			line += fmt.Sprintf("; vs %s: bids/s %.2fx (each round's pair: %s), CPU per bid %.2fx",
				ts[0].name, (s.bids/max(s.elapsed, 1e-9))/max(base.bids/max(base.elapsed, 1e-9), 1e-9), strings.Join(each, ", "),
				perBid(s.cpu, s.bids)/max(perBid(base.cpu, base.bids), 1e-9))
		}
		if s.near.Found {
			line += "; near cache " + s.near.Ratio()
		}
		rep.Notes = append(rep.Notes, line)
		logf("%s", line)
	}
	return nil
}

// joinRates renders rates as "a, b, c".
func joinRates(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmtRate(r))
	}
	return strings.Join(s, ", ")
}
