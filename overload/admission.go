package overload

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Admission is the bidder's overload controller: CoDel-style shedding by
// each request's measured queueing delay, judged against that request's
// own budget. bidder.max_in_flight bounds the requests in the handler;
// Admission sees the queue in front of it (the socket, the CPU), which
// under overload is where the time goes: every answer gets later until
// all of them, bids included, arrive after the SSP's tmax.
//
// The design, in full (README.md beside this file explains it):
//
//   - Wait and allowance. A request's wait is arrival (the kernel's receive
//     time, overload/arrival) to handler start. Its allowed wait is the
//     larger of Target and a sixteenth of its budget (the tmax-derived
//     budget the deadline uses), so a request with a long tmax may wait
//     longer than one with a short tmax. Its lateness is wait / allowed
//     wait; it is late above 1.
//   - Standing queue. The controller keeps a moving average of the
//     requests' lateness (1/16 per request) that also decays with time:
//     it halves every Interval without requests. When the average has
//     stayed above 1 for a whole Interval, the queue is standing (not a
//     burst: a GC pause or a neighbour's moment sheds nothing), and each
//     late request is shed until the average is back at or under 1.
//   - Young share. Shedding only the late requests keeps a queue from
//     growing, not from standing (a bidder at its limit serving every
//     young request has no CPU left to drain it), so once per Interval
//     while the queue stands the share of young requests shed rises by a
//     quarter of the rest (at least 5 points, at most MaxShed); once the
//     average is under 1/2 it falls by 5 points per Interval, requests or
//     not. Young requests are shed evenly at that share (a deterministic
//     credit, not a coin).
//   - Quiet. A second without requests ends any overload: the next
//     request starts from a clean state and is served.
//
// A shed request is answered at once, before its body is decoded (a no-bid
// with nbr 507, or 503). A request without an arrival time (another
// platform, a race build, a connection that is not TCP) is not judged:
// max_in_flight and the deadline still apply to it.
//
// Shed is safe for concurrent use and allocation-free. Admission runs no
// goroutine: time enters only through Shed's now, so a test drives it with
// its own clock.
type Admission struct {
	o  AdmissionOptions
	mu sync.Mutex
	s  admState
}

// admState is the controller's state, guarded by Admission.mu.
type admState struct {
	// last is the newest request's now (zero before the first).
	last time.Time
	// avg is the moving average of the requests' lateness.
	avg float64
	// aboveSince is when avg last went above 1; zero while at or under.
	aboveSince time.Time
	standing   bool
	// young is the share of young requests shed; tick starts the Interval
	// it was last updated for; credit accumulates young per young
	// request, one shed per whole unit.
	young, credit float64
	tick          time.Time
}

// AdmissionOptions configure an Admission.
type AdmissionOptions struct {
	// Target is the least allowed wait (arrival to handler): a request
	// is late when its wait exceeds both Target and a sixteenth of its
	// budget. Default 5ms.
	Target time.Duration
	// Interval is how long the average lateness must stay above 1 before
	// late requests are shed (CoDel's interval), the step of the young
	// share, and the half-life of the average without requests. Default
	// 25ms.
	Interval time.Duration
	// MaxShed caps the share of young requests shed (so that a probe of
	// the real load always gets through). Default 0.95.
	MaxShed float64
	// Registerer receives rtbd_bidder_admission_*; nil registers none.
	Registerer prometheus.Registerer
}

const (
	// budgetShare: a request may wait 1/budgetShare of its budget.
	budgetShare = 16
	// lateEWMA: the weight of one request in the average lateness is
	// 1/lateEWMA.
	lateEWMA = 16
	// quietReset: this long without requests resets the controller.
	quietReset = time.Second
)

// NewAdmission returns an Admission in its rest state: it sheds nothing
// until a queue stands.
func NewAdmission(o AdmissionOptions) *Admission {
	if o.Target <= 0 {
		o.Target = 5 * time.Millisecond
	}
	if o.Interval <= 0 {
		o.Interval = 25 * time.Millisecond
	}
	if o.MaxShed <= 0 || o.MaxShed > 1 {
		o.MaxShed = 0.95
	}
	a := &Admission{o: o}
	if o.Registerer != nil {
		o.Registerer.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtbd_bidder_admission_queue_shed_ratio",
			Help: "Share of the bid requests within their allowed wait that the admission control sheds too, to drain a standing queue."},
			func() float64 { return a.YoungShare(time.Now()) }))
	}
	return a
}

// Target is the least allowed wait: a request that waited no longer is
// young whatever its budget (the caller need not work its budget out).
func (a *Admission) Target() time.Duration {
	if a == nil {
		return 0
	}
	return a.o.Target
}

// Allowed is the wait a request with this budget may have: the larger of
// Target and budget/16 (Target for a budget <= 0: unknown).
func (a *Admission) Allowed(budget time.Duration) time.Duration {
	return max(a.o.Target, budget/budgetShare)
}

// Shed reports whether a request that waited queued (arrival to handler
// start) with this budget (its tmax-derived deadline budget; 0 when
// queued <= Target, where it does not matter) is to be shed. now is the
// handler's start. A nil Admission sheds nothing.
func (a *Admission) Shed(queued, budget time.Duration, now time.Time) bool {
	if a == nil {
		return false
	}
	late := float64(queued) / float64(a.Allowed(budget))
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &a.s
	s.advance(now, &a.o)
	s.avg += (late - s.avg) / lateEWMA
	if s.avg > 1 {
		if s.aboveSince.IsZero() {
			s.aboveSince = now
		}
		s.standing = now.Sub(s.aboveSince) >= a.o.Interval
	} else {
		s.aboveSince, s.standing = time.Time{}, false
	}
	if late > 1 && s.standing {
		return true
	}
	if s.young > 0 {
		s.credit += s.young
		if s.credit >= 1 {
			s.credit--
			return true
		}
	}
	return false
}

// advance brings the state to now: the quiet reset, the average's decay
// with time, and the young share's steps for the Intervals passed.
func (s *admState) advance(now time.Time, o *AdmissionOptions) {
	if s.last.IsZero() || now.Sub(s.last) >= quietReset {
		*s = admState{last: now, tick: now}
		return
	}
	if gap := now.Sub(s.last); gap > 0 {
		s.avg *= math.Exp2(-float64(gap) / float64(o.Interval))
		s.last = now
		if s.avg <= 1 {
			s.aboveSince, s.standing = time.Time{}, false
		}
	}
	n := now.Sub(s.tick) / o.Interval
	if n <= 0 {
		return
	}
	s.tick = s.tick.Add(n * o.Interval)
	switch {
	case s.standing:
		s.young += max((1-s.young)/4, 0.05)
	case s.avg < 0.5:
		s.young -= 0.05 * float64(n)
	}
	s.young = min(max(s.young, 0), o.MaxShed)
	if s.young == 0 {
		s.credit = 0
	}
}

// Standing reports whether the queue stood at the latest request.
func (a *Admission) Standing() bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.s.standing
}

// YoungShare is the share of young requests a request arriving at now
// would see shed (the state is read, not advanced).
func (a *Admission) YoungShare(now time.Time) float64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	s := a.s
	a.mu.Unlock()
	s.advance(now, &a.o)
	return s.young
}
