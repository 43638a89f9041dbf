package shading

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// fleetStatus is what the Shader's Syncs and Loads did, for the view
// (FleetSnapshot). Written at the start and end of each, never on the bid
// path; its own lock, so the view never waits for a Sync.
type fleetStatus struct {
	mu          sync.Mutex
	store       string // the Store's type, as fmt's %T names it, without the *
	lastOK      time.Time
	lastErr     string
	lastErrAt   time.Time
	lastErrLoad bool      // the last error was a Load's
	lastFailed  bool      // the last Sync or Load failed
	syncs       [2]uint64 // failed, ok
	loads       [2]uint64
	last        *SyncView
}

// fleetStarted notes the store a Sync or Load syncs with.
func (s *Shader) fleetStarted(st Store) {
	name := strings.TrimPrefix(fmt.Sprintf("%T", st), "*")
	s.status.mu.Lock()
	s.status.store = name
	s.status.mu.Unlock()
}

// fleetDone notes the end of a Sync (a Load when load) at now that took
// took and did stats, failing with err when not nil.
func (s *Shader) fleetDone(load bool, now time.Time, took time.Duration, stats SyncStats, err error) {
	v := &SyncView{At: now, Load: load, Millis: float64(took) / float64(time.Millisecond),
		Flushed: stats.Flushed, Fields: stats.Fields, Segments: stats.Segments,
		Slots: stats.Slots, Keys: stats.Keys, Calls: stats.Calls, Entries: stats.Read}
	if stats.Slots > 0 {
		v.OldestSlot = time.Unix(stats.OldestSlot, 0).UTC()
	}
	if err != nil {
		v.Error = err.Error()
	}
	ok := 0
	if err == nil {
		ok = 1
	}
	st := &s.status
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last = v
	st.lastFailed = err != nil
	if load {
		st.loads[ok]++
	} else {
		st.syncs[ok]++
	}
	if err == nil {
		st.lastOK = now
	} else {
		st.lastErr, st.lastErrAt, st.lastErrLoad = err.Error(), now, load
	}
}

// FleetView is the Shader's sharing with its fleet as FleetSnapshot shows
// it (GET /admin/shading, "fleet").
type FleetView struct {
	// Enabled: the Shader shares its counts with a fleet (Options.Fleet;
	// shading.fleet_interval > 0).
	Enabled bool `json:"enabled"`
	// Store is the type of the store the last Sync or Load used
	// ("redisstore.Store", "aerostore.Store", "pebblestore.Store"); empty
	// before the first.
	Store string `json:"store,omitempty"`
	// Slot, Horizon and Interval are FleetOptions' (Go durations).
	Slot     string `json:"slot,omitempty"`
	Horizon  string `json:"horizon,omitempty"`
	Interval string `json:"interval,omitempty"`
	// LastOK is the time of the last Sync or Load that succeeded (the time
	// it was run for), AgeSeconds its age at the snapshot; absent before
	// the first.
	LastOK     *time.Time `json:"last_ok,omitempty"`
	AgeSeconds *float64   `json:"last_ok_age_s,omitempty"`
	// Stale: the last attempt failed, or there was one and none
	// succeeded, or the last success is older than two Intervals.
	Stale bool `json:"stale"`
	// LastError is the last failed Sync's or Load's error (LastErrorOp
	// "sync" or "load") and LastErrorAt its time; they stay after a later
	// success (LastOK then is newer).
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	LastErrorOp string     `json:"last_error_op,omitempty"`
	// SyncsOK, SyncsFailed, LoadsOK and LoadsFailed count the Syncs and
	// Loads since the Shader started.
	SyncsOK     uint64 `json:"syncs_ok"`
	SyncsFailed uint64 `json:"syncs_failed"`
	LoadsOK     uint64 `json:"loads_ok"`
	LoadsFailed uint64 `json:"loads_failed"`
	// Pending is the counts (bids, wins, losses and minimum bids to win)
	// settled here and not yet written to the store, over PendingSegments
	// segments: the next Sync adds them.
	Pending         int64 `json:"pending"`
	PendingSegments int   `json:"pending_segments"`
	// LastSync is the last Sync or Load, ok or not.
	LastSync *SyncView `json:"last_sync,omitempty"`
}

// SyncView is one Sync or Load as the view shows it.
type SyncView struct {
	// At is the time it was run for; Load is true for a Load; Millis its
	// duration (ms); Error its error, if any.
	At     time.Time `json:"at"`
	Load   bool      `json:"load,omitempty"`
	Millis float64   `json:"ms"`
	Error  string    `json:"error,omitempty"`
	// Flushed and Fields: the segment counts written and their non-zero
	// counts (SyncStats).
	Flushed int `json:"flushed"`
	Fields  int `json:"fields"`
	// The read-back: Segments read, over Slots time slots from OldestSlot
	// to the current one; Keys (segment, slot) pairs asked in Calls
	// ReadShading calls (Redis: pipelines); Entries found with counts.
	Segments   int       `json:"segments"`
	Slots      int       `json:"slots"`
	OldestSlot time.Time `json:"oldest_slot,omitzero"`
	Keys       int       `json:"keys"`
	Calls      int       `json:"calls"`
	Entries    int       `json:"entries"`
}

// SegmentFleet is one segment's share of the fleet's counts (SegmentView).
type SegmentFleet struct {
	// Read: the fleet's counts of the segment have been read (a Sync or
	// Load); until then its counts are this bidder's own.
	Read bool `json:"read"`
	// Pending is its counts settled here and not yet written to the store.
	Pending int64 `json:"pending"`
	// OwnBids, OwnWins, OwnLosses and OwnMinToWin are the part of
	// SegmentView's Bids, Wins, Losses and MinToWin this bidder counted
	// (written or pending), decayed alike.
	OwnBids     float64 `json:"own_bids"`
	OwnWins     float64 `json:"own_wins"`
	OwnLosses   float64 `json:"own_losses"`
	OwnMinToWin float64 `json:"own_min_to_win"`
	// FleetShare is the share of the segment's observations (bids, wins,
	// losses and minimum bids to win together) the other bidders of the
	// fleet counted, in [0, 1].
	FleetShare float64 `json:"fleet_share"`
}

// segmentFleet is g's SegmentFleet; total its observations. g.mu held.
func (s *Shader) segmentFleet(g *segment, total float64) *SegmentFleet {
	f := g.fl
	if f == nil {
		return nil
	}
	v := &SegmentFleet{Read: f.read}
	var own [NumKinds]float64
	for k := range NumKinds {
		own[k] = f.own[k]
		if dt := g.lastDecay - f.ownAt; f.ownAt != 0 && dt > 0 {
			own[k] *= math.Exp(-float64(dt) / s.tau)
		}
		for _, n := range f.pending[k] {
			own[k] += float64(n)
			v.Pending += int64(n)
		}
	}
	v.OwnBids, v.OwnWins, v.OwnLosses, v.OwnMinToWin = own[kindBids], own[kindWins], own[kindLosses], own[kindMins]
	if sum := own[0] + own[1] + own[2] + own[3]; total > 0 && sum < total {
		v.FleetShare = 1 - sum/total
	}
	return v
}

// FleetSnapshot returns the Shader's sharing with its fleet at now (the
// age of the last success is taken from it). A nil Shader, or one without
// Options.Fleet, shows Enabled false.
func (s *Shader) FleetSnapshot(now time.Time) FleetView {
	if s == nil || s.opts.Fleet == nil {
		return FleetView{}
	}
	o := s.opts.Fleet
	v := FleetView{Enabled: true, Slot: o.Slot.String(), Horizon: o.Horizon.String()}
	if o.Interval > 0 {
		v.Interval = o.Interval.String()
	}
	for _, g := range s.held() {
		g.mu.Lock()
		var n int64
		for k := range g.fl.pending {
			for _, c := range g.fl.pending[k] {
				n += int64(c)
			}
		}
		g.mu.Unlock()
		if n > 0 {
			v.Pending += n
			v.PendingSegments++
		}
	}
	st := &s.status
	st.mu.Lock()
	defer st.mu.Unlock()
	v.Store = st.store
	v.SyncsFailed, v.SyncsOK = st.syncs[0], st.syncs[1]
	v.LoadsFailed, v.LoadsOK = st.loads[0], st.loads[1]
	if !st.lastOK.IsZero() {
		at := st.lastOK
		age := now.Sub(at).Seconds()
		v.LastOK, v.AgeSeconds = &at, &age
	}
	if st.lastErr != "" {
		at := st.lastErrAt
		v.LastError, v.LastErrorAt, v.LastErrorOp = st.lastErr, &at, "sync"
		if st.lastErrLoad {
			v.LastErrorOp = "load"
		}
	}
	if st.last != nil {
		l := *st.last
		v.LastSync = &l
	}
	v.Stale = st.lastFailed || (st.last != nil && st.lastOK.IsZero()) ||
		(o.Interval > 0 && !st.lastOK.IsZero() && now.Sub(st.lastOK) > 2*o.Interval)
	return v
}
