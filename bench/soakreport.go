package bench

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// SoakSummary is what the fault-injection soak (RunSoak) found, beside
// the load's Results (their Events are the faults). Times are seconds
// since the start of the measured phase.
type SoakSummary struct {
	Checks      []SoakCheck `json:"checks"` // the soak's verdicts, each with what it measured
	Faults      []SoakFault `json:"faults"`
	Notices     SoakNotices `json:"notices"`
	BidRequests int64       `json:"bid_requests"` // of the measured phase
	BidsLate    int64       `json:"bids_late"`    // answered past tmax
	// Anomalies count every error and late answer by request kind,
	// outcome and cause: the fault it is due to (faultAt), else "unattributed".
	Anomalies    []SoakAnomalyCount `json:"anomalies"`
	Unattributed []SoakAnomaly      `json:"unattributed,omitempty"` // the first 50 anomalies with no cause, in full
	RSS          []SoakRSS          `json:"rss"`                    // every process incarnation's RSS, once a second, and its verdict
}

// SoakCheck is one verdict of the soak.
type SoakCheck struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// SoakFault is one fault as it ran.
type SoakFault struct {
	Kind     string  `json:"kind"`
	Target   string  `json:"target"`
	Label    string  `json:"label"`
	StartSec float64 `json:"start_sec"`
	EndSec   float64 `json:"end_sec"` // recovered (restarted and ready, or continued)
	Detail   string  `json:"detail,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// SoakNotices reconciles the billing notices with the store.
type SoakNotices struct {
	Accepted       int64 `json:"accepted"`                  // burls answered 204 accepted or replay
	Distinct       int64 `json:"distinct"`                  // impressions among them
	SameImpression int64 `json:"same_impression,omitempty"` // accepted burls of an impression accepted before
	Unparsed       int64 `json:"unparsed,omitempty"`        // tokens the harness could not read
	// Lost: accepted, and no charge-once key in the store 30 s after the
	// load ended (or fewer impressions in the store's totals than distinct
	// bills accepted). LostKeys: the first 20 of the missing keys.
	Lost     int64    `json:"lost"`
	LostKeys []string `json:"lost_keys,omitempty"`
	// DoubleCharged: impressions the store counted beyond its notice keys
	// (one key per impression charged), or beyond the distinct bills the
	// harness sent (accepted or given up). MicrosMismatch: store micros less
	// one charge (soakChargeMicros) per impression.
	DoubleCharged  int64 `json:"double_charged"`
	MicrosMismatch int64 `json:"micros_mismatch"`
	// The store's totals over the campaigns billed, and its notice keys;
	// ChargedNotAccepted: keys of notices whose answer the harness never
	// got (lost in transit, then retried elsewhere: still one charge).
	StoreImps          int64            `json:"store_imps"`
	StoreMicros        int64            `json:"store_micros"`
	StoreKeys          int64            `json:"store_keys"`
	ChargedNotAccepted int64            `json:"charged_not_accepted"`
	StoreError         string           `json:"store_error,omitempty"`
	BillOutcomes       map[string]int64 `json:"bill_outcomes"` // by X-Rtbd-Notice, or "refused CODE outcome"
	Retries            int64            `json:"retries"`       // attempts re-sent after a transport error or a 5xx
	GaveUp             int64            `json:"gave_up"`       // bills no bidder took within 20 s
	// Replays of accepted bills to the other bidder, and their outcomes.
	ReplaysSent    int64            `json:"replays_sent"`
	ReplaysGaveUp  int64            `json:"replays_gave_up,omitempty"`
	ReplayOutcomes map[string]int64 `json:"replay_outcomes,omitempty"`
	// Latency of the notice attempts answered, ms.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
}

// account derives DoubleCharged, MicrosMismatch and ChargedNotAccepted
// from the counts, and raises Lost (the keys found missing) to the
// distinct bills the store's totals lack.
func (n *SoakNotices) account() {
	n.DoubleCharged = max(0, n.StoreImps-n.StoreKeys, n.StoreImps-(n.Distinct+n.GaveUp))
	n.MicrosMismatch = n.StoreMicros - n.StoreImps*soakChargeMicros
	n.ChargedNotAccepted = max(0, n.StoreKeys-n.Distinct)
	n.Lost = max(n.Lost, n.Distinct-n.StoreImps)
}

// SoakAnomaly is one error or late answer.
type SoakAnomaly struct {
	AtSec   float64 `json:"at_sec"`
	Kind    string  `json:"kind"`    // bid, event, click, win, bill, bill-replay
	Outcome string  `json:"outcome"` // late, timeout, conn, status_4xx, status_5xx, other, ...
	Bidder  string  `json:"bidder,omitempty"`
	Detail  string  `json:"detail,omitempty"`
}

// SoakAnomalyCount counts anomalies of one kind, outcome and cause.
type SoakAnomalyCount struct {
	Kind    string `json:"kind"`
	Outcome string `json:"outcome"`
	Cause   string `json:"cause"`
	Count   int64  `json:"count"`
}

// SoakRSS is one process incarnation's RSS (a restart starts a new
// one), and its verdict: after its warm-up, the median RSS of its last
// fifth against that of its first fifth.
type SoakRSS struct {
	Name      string          `json:"name"`
	PID       int             `json:"pid"`
	Samples   []SoakRSSSample `json:"samples"`
	FromSec   float64         `json:"from_sec"`
	ToSec     float64         `json:"to_sec"`
	FirstMiB  float64         `json:"first_mib"`
	LastMiB   float64         `json:"last_mib"`
	MinMiB    float64         `json:"min_mib"`
	MaxMiB    float64         `json:"max_mib"`
	GrowthPct float64         `json:"growth_pct"`
	Judged    bool            `json:"judged"` // false with less than 60 s after its warm-up: too short to tell
	Flat      bool            `json:"flat"`   // growth within 10%
	Note      string          `json:"note,omitempty"`
}

// SoakRSSSample is one reading.
type SoakRSSSample struct {
	AtSec    float64 `json:"at_sec"`
	RSSBytes int64   `json:"rss_bytes"`
}

// addRSS adds a sample of process slot name, running as pid, to that
// incarnation in rss, or to a new one.
func addRSS(rss []SoakRSS, name string, pid int, x SoakRSSSample) []SoakRSS {
	i := slices.IndexFunc(rss, func(r SoakRSS) bool { return r.Name == name && r.PID == pid })
	if i < 0 {
		return append(rss, SoakRSS{Name: name, PID: pid, Samples: []SoakRSSSample{x}})
	}
	rss[i].Samples = append(rss[i].Samples, x)
	return rss
}

// judgeRSS judges every incarnation from warmup after its first sample.
func (s *SoakSummary) judgeRSS(warmup time.Duration) {
	for i := range s.RSS {
		r := &s.RSS[i]
		r.FromSec, r.ToSec = r.Samples[0].AtSec+warmup.Seconds(), r.Samples[len(r.Samples)-1].AtSec
		var mib []float64 // after the warm-up
		for _, x := range r.Samples {
			if x.AtSec >= r.FromSec {
				mib = append(mib, float64(x.RSSBytes)/(1<<20))
			}
		}
		if len(mib) < 60 {
			r.Note = fmt.Sprintf("%d s after its warm-up: too short to judge", len(mib))
			continue
		}
		fifth := max(len(mib)/5, 5)
		r.FirstMiB, r.LastMiB = median(mib[:fifth]), median(mib[len(mib)-fifth:])
		r.MinMiB, r.MaxMiB = slices.Min(mib), slices.Max(mib)
		r.GrowthPct = 100 * (r.LastMiB - r.FirstMiB) / r.FirstMiB
		r.Judged, r.Flat = true, r.GrowthPct <= 10
		if r.Name == "redis-server" {
			r.Note = "holds the run's data (a charge-once key per billed impression, profiles): grows with it"
		}
	}
}

// verdict fills Checks.
func (s *SoakSummary) verdict(o SoakOptions) {
	check := func(name string, pass bool, format string, args ...any) {
		s.Checks = append(s.Checks, SoakCheck{Name: name, Pass: pass, Detail: fmt.Sprintf(format, args...)})
	}
	// Each fault at least Rounds times, without a harness error.
	var parts []string
	pass := true
	for _, k := range o.Faults {
		ran, failed := 0, []string{}
		for _, fl := range s.Faults {
			if fl.Kind == k && fl.Error == "" {
				ran++
			} else if fl.Kind == k {
				failed = append(failed, fl.Label+": "+fl.Error)
			}
		}
		part := fmt.Sprintf("%s x%d", k, ran)
		if ran < o.Rounds || len(failed) > 0 {
			pass = false
			part += fmt.Sprintf(" of %d", o.Rounds)
		}
		if len(failed) > 0 {
			part += " (failed: " + strings.Join(failed, "; ") + ")"
		}
		parts = append(parts, part)
	}
	check("faults", pass, "%s", strings.Join(parts, ", "))

	n := s.Notices
	storeErr := ""
	if n.StoreError != "" {
		storeErr = "; store error: " + n.StoreError
	}
	check("no notice lost", n.Lost == 0 && n.Unparsed == 0 && n.StoreError == "" && n.Accepted > 0,
		"%d bills accepted (%d distinct impressions), %d without their charge in the store%s", n.Accepted, n.Distinct, n.Lost, storeErr)
	check("no notice double-charged", n.DoubleCharged == 0 && n.MicrosMismatch == 0 && n.StoreError == "",
		"store: %d impressions, %d micros for %d charge-once keys (%d replays sent to the other bidder: %s); %d impressions and %d micros over one charge each",
		n.StoreImps, n.StoreMicros, n.StoreKeys, n.ReplaysSent, fmtOutcomes(n.ReplayOutcomes), n.DoubleCharged, n.MicrosMismatch)

	var late, lateUnattr, errs, errsUnattr int64
	for _, a := range s.Anomalies {
		all, unattr := &errs, &errsUnattr
		if a.Kind == "bid" && a.Outcome == "late" {
			all, unattr = &late, &lateUnattr
		}
		*all += a.Count
		if a.Cause == "unattributed" {
			*unattr += a.Count
		}
	}
	ratio := safeDiv(float64(s.BidsLate), float64(s.BidRequests))
	check("bids past tmax <= 0.01%", ratio <= 0.0001, "%d of %d bid requests answered past tmax %v (%.4f%%)", s.BidsLate, s.BidRequests, o.Tmax, 100*ratio)
	check("every late answer attributed", lateUnattr == 0, "%d late bid answers logged, %d in no fault window", late, lateUnattr)
	check("every error attributed", errsUnattr == 0, "%d errors (every kind of request), %d in no fault window", errs, errsUnattr)

	var judged int
	var bad []string
	for _, c := range s.RSS {
		if c.Judged && c.Name != "redis-server" {
			judged++
			if !c.Flat {
				bad = append(bad, fmt.Sprintf("%s pid %d %+.1f%% (%.1f -> %.1f MiB)", c.Name, c.PID, c.GrowthPct, c.FirstMiB, c.LastMiB))
			}
		}
	}
	notFlat := ""
	if len(bad) > 0 {
		notFlat = "; not flat: " + strings.Join(bad, ", ")
	}
	check("RSS flat within 10%", judged > 0 && len(bad) == 0,
		"%d of %d rtbd process incarnations judged flat (last fifth's median RSS within +10%% of the first fifth's after the warm-up)%s", judged-len(bad), judged, notFlat)
}

func fmtOutcomes(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return cmp.Or(strings.Join(parts, ", "), "none")
}

// writeSoak is the soak section of the text report.
func writeSoak(ew *textWriter, s *SoakSummary) {
	ew.printf("\nFault-injection soak\n")
	for _, c := range s.Checks {
		ew.printf("  %s  %s: %s\n", map[bool]string{true: "PASS", false: "FAIL"}[c.Pass], c.Name, c.Detail)
	}
	ew.printf("\nFaults (seconds since the start of the measured phase)\n")
	tw := ew.tab()
	fmt.Fprintf(tw, "  start\tend\tfault\tdetail\n")
	for _, f := range s.Faults {
		d := f.Detail
		if f.Error != "" {
			d = "ERROR " + f.Error + "; " + d
		}
		fmt.Fprintf(tw, "  %.1f\t%.1f\t%s\t%s\n", f.StartSec, f.EndSec, f.Label, d)
	}
	ew.flush(tw)
	n := s.Notices
	ew.printf("\nBilling notices: %d accepted (%d distinct impressions), lost %d, double-charged %d, micros mismatch %d\n",
		n.Accepted, n.Distinct, n.Lost, n.DoubleCharged, n.MicrosMismatch)
	ew.printf("  outcomes: %s; retries %d; gave up %d; replays to the other bidder %d (%s)\n", fmtOutcomes(n.BillOutcomes), n.Retries, n.GaveUp, n.ReplaysSent, fmtOutcomes(n.ReplayOutcomes))
	ew.printf("  store: %d impressions, %d micros, %d charge-once keys (%d charged whose answer the harness did not get)\n", n.StoreImps, n.StoreMicros, n.StoreKeys, n.ChargedNotAccepted)
	ew.printf("  notice latency: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", n.LatencyP50Ms, n.LatencyP99Ms, n.LatencyMaxMs)
	for _, k := range n.LostKeys {
		ew.printf("  lost: %s\n", k)
	}
	ew.printf("\nErrors and late answers by cause (%d bid requests, %d past tmax)\n", s.BidRequests, s.BidsLate)
	tw = ew.tab()
	fmt.Fprintf(tw, "  kind\toutcome\tcause\tcount\n")
	for _, a := range s.Anomalies {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", a.Kind, a.Outcome, a.Cause, a.Count)
	}
	ew.flush(tw)
	for _, a := range s.Unattributed[:min(len(s.Unattributed), 10)] {
		ew.printf("  unattributed: t=%.2f s %s %s %s %s\n", a.AtSec, a.Kind, a.Outcome, a.Bidder, a.Detail)
	}
	ew.printf("\nRSS per process incarnation (after its warm-up)\n")
	tw = ew.tab()
	fmt.Fprintf(tw, "  process\tpid\tfrom s\tto s\tfirst MiB\tlast MiB\tmin\tmax\tgrowth\tverdict\n")
	for _, c := range s.RSS {
		v := "-"
		if c.Judged {
			v = map[bool]string{true: "flat", false: "NOT FLAT"}[c.Flat]
		}
		fmt.Fprintf(tw, "  %s\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%+.1f%%\t%s %s\n", c.Name, c.PID, c.FromSec, c.ToSec, c.FirstMiB, c.LastMiB, c.MinMiB, c.MaxMiB, c.GrowthPct, v, c.Note)
	}
	ew.flush(tw)
}

// rssChart plots every process's RSS (MiB) over the run, with the faults
// as marks.
func rssChart(s *SoakSummary) string {
	var ss []series
	maxT, maxY := 1.0, 0.0
	slot := -1
	for i, r := range s.RSS {
		// One line per process incarnation, one color per process slot.
		more := i > 0 && s.RSS[i-1].Name == r.Name
		if !more {
			slot++
		}
		se := series{name: r.Name, color: colorOf(slot), more: more}
		for _, x := range r.Samples {
			if x.AtSec >= 0 {
				v := float64(x.RSSBytes) / (1 << 20)
				se.pts = append(se.pts, [2]float64{x.AtSec, v})
				maxT, maxY = max(maxT, x.AtSec), max(maxY, v)
			}
		}
		ss = append(ss, se)
	}
	return lineChart("RSS of every process (MiB, once a second; a restart starts a new process)",
		linearAxis("seconds since start of measured phase", maxT, 8), linearAxis("RSS MiB", maxY, 6), ss, s.events()...)
}

// events are the faults as the charts' marks.
func (s *SoakSummary) events() []Event {
	var out []Event
	for _, f := range s.Faults {
		out = append(out, Event{AtSec: f.StartSec, What: f.Label})
	}
	return out
}
