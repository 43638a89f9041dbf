package overload

import (
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

// queueSim is a bidder in front of which requests queue: one server,
// first come first served, a served request costs serve and a shed one
// shed. Time is the simulation's own (an injected clock): offer feeds
// requests to the controller at their handler's start and returns how
// many it shed, and the longest wait of a request served.
type queueSim struct {
	a           *Admission
	now         time.Time // next arrival
	busyUntil   time.Time
	serve, shed time.Duration
}

func (q *queueSim) offer(n int, every, budget time.Duration) (shed int, maxServedWait time.Duration) {
	for range n {
		start := q.now
		if q.busyUntil.After(start) {
			start = q.busyUntil
		}
		wait := start.Sub(q.now)
		if q.a.Shed(wait, budget, start) {
			shed++
			q.busyUntil = start.Add(q.shed)
		} else {
			maxServedWait = max(maxServedWait, wait)
			q.busyUntil = start.Add(q.serve)
		}
		q.now = q.now.Add(every)
	}
	return shed, maxServedWait
}

// TestAdmissionBurstThenQuiet: offered twice what it can serve, the
// controller sheds, and the requests it serves wait less than their
// budget; after the burst, with the clock advanced (no sleeping), the
// first request following a second of quiet is served (at the default
// Interval and at one of a second, where the average has only halved), and
// so is every request of a trickle just under one a second: the shed state
// decays with time, not only with requests.
func TestAdmissionBurstThenQuiet(t *testing.T) {
	const budget = 80 * ms // tmax 100 ms less the 20 ms margin
	for _, interval := range []time.Duration{25 * ms, time.Second} {
		a := NewAdmission(AdmissionOptions{Interval: interval})
		q := &queueSim{a: a, now: time.Unix(1_700_000_000, 0), serve: 100 * time.Microsecond, shed: 5 * time.Microsecond}
		q.busyUntil = q.now
		// Below capacity (half of it): nothing shed.
		if n, _ := q.offer(5000, 200*time.Microsecond, budget); n != 0 {
			t.Fatalf("interval %v, at half capacity: %d shed", interval, n)
		}
		// 2x for 4 s: 80,000 requests, one per 50 us.
		shed, maxWait := q.offer(80_000, 50*time.Microsecond, budget)
		if interval == 25*ms && (shed < 35_000 || shed > 50_000) {
			t.Fatalf("2x burst: %d of 80000 shed, want about half", shed)
		}
		if shed == 0 || !a.Standing() && a.YoungShare(q.busyUntil) == 0 {
			t.Fatalf("interval %v: the 2x burst left the controller not shedding (%d shed)", interval, shed)
		}
		if interval == 25*ms && maxWait >= budget {
			t.Fatalf("2x burst: a request served after waiting %v, its budget %v", maxWait, budget)
		}
		// One second of quiet after the last request's handler started.
		q.now = q.busyUntil.Add(time.Second)
		if a.Shed(0, budget, q.now) {
			t.Fatalf("interval %v: the first request after 1 s of quiet was shed", interval)
		}
		if a.Standing() || a.YoungShare(q.now) != 0 {
			t.Fatalf("interval %v, after 1 s of quiet: standing %v, young share %v", interval, a.Standing(), a.YoungShare(q.now))
		}
	}

	// Again, now followed by a trickle just under one request a second:
	// each is served (the state decays between them, not per request).
	a := NewAdmission(AdmissionOptions{})
	q := &queueSim{a: a, now: time.Unix(1_700_000_000, 0), serve: 100 * time.Microsecond, shed: 5 * time.Microsecond}
	q.busyUntil = q.now
	if shed, _ := q.offer(40_000, 50*time.Microsecond, budget); shed == 0 {
		t.Fatal("2x burst: nothing shed")
	}
	q.now = q.busyUntil
	for i := range 22 {
		q.now = q.now.Add(900 * ms)
		if a.Shed(time.Millisecond, budget, q.now) {
			t.Fatalf("trickle request %d (%v after the burst) was shed", i, time.Duration(i+1)*900*ms)
		}
	}
}

// TestAdmissionOwnBudget: a late request is one whose wait exceeds what its
// own budget allows (the larger of Target and budget/16). While a queue
// stands, late requests are shed, a request that waited more than its
// whole budget among them, while a request that waited as long but has a
// long tmax is not. A burst shorter than Interval sheds nothing.
func TestAdmissionOwnBudget(t *testing.T) {
	a := NewAdmission(AdmissionOptions{Target: 5 * ms, Interval: 25 * ms})
	if got := a.Allowed(30 * ms); got != 5*ms {
		t.Errorf("allowed wait of a 30ms budget: %v, want Target 5ms", got)
	}
	if got := a.Allowed(480 * ms); got != 30*ms {
		t.Errorf("allowed wait of a 480ms budget: %v, want 30ms", got)
	}
	now := time.Unix(1_700_000_000, 0)
	// 20 ms of requests that waited 40 ms with a 30 ms budget: above
	// their allowance, but not for an Interval.
	for i := range 20 {
		if a.Shed(40*ms, 30*ms, now) {
			t.Fatalf("request %d of a 20 ms burst shed", i)
		}
		now = now.Add(ms)
	}
	// Another 10 ms: the queue stands (the young share has not risen yet:
	// it steps once per Interval, and the queue was not standing at the
	// first step).
	for range 10 {
		a.Shed(40*ms, 30*ms, now)
		now = now.Add(ms)
	}
	if !a.Standing() || a.YoungShare(now) != 0 {
		t.Fatalf("after 30 ms of late requests: standing %v, young share %v; want standing, 0", a.Standing(), a.YoungShare(now))
	}
	cases := []struct {
		name         string
		wait, budget time.Duration
		wantShed     bool
	}{
		{"waited more than its whole budget", 40 * ms, 30 * ms, true},
		{"waited 20 ms of a 30 ms budget", 20 * ms, 30 * ms, true},
		{"waited 20 ms of a 480 ms budget (tmax 500)", 20 * ms, 480 * ms, false},
		{"waited 2 ms of a 30 ms budget", 2 * ms, 30 * ms, false},
		{"waited 6 ms, budget unknown (Target applies)", 6 * ms, 0, true},
		{"waited 31 ms of a 480 ms budget", 31 * ms, 480 * ms, true},
	}
	for _, c := range cases {
		if got := a.Shed(c.wait, c.budget, now); got != c.wantShed {
			t.Errorf("%s: shed %v, want %v", c.name, got, c.wantShed)
		}
		if !a.Standing() {
			t.Fatalf("%s: the queue no longer stands", c.name)
		}
		now = now.Add(100 * time.Microsecond)
	}
	// Drained: requests within their allowance bring the average back
	// under 1, and then a late request is served.
	for range 64 {
		a.Shed(ms, 80*ms, now)
		now = now.Add(100 * time.Microsecond)
	}
	if a.Standing() {
		t.Fatal("still standing after 64 requests within their allowance")
	}
	if a.Shed(40*ms, 30*ms, now) {
		t.Fatal("a late request shed with no standing queue")
	}
	var nilA *Admission
	if nilA.Shed(time.Second, 0, now) || nilA.Standing() || nilA.YoungShare(now) != 0 || nilA.Target() != 0 {
		t.Fatal("a nil Admission sheds")
	}
}

// TestAdmissionYoungShare: while the queue stands the young share rises
// each Interval by a quarter of the rest (at least 5 points, capped at
// MaxShed) and young requests are shed evenly at that share; once the
// average is under 1/2 it falls by 5 points an Interval, with time alone.
func TestAdmissionYoungShare(t *testing.T) {
	const interval = 25 * ms
	a := NewAdmission(AdmissionOptions{Target: 5 * ms, Interval: interval})
	now := time.Unix(1_700_000_000, 0)
	late := func(d time.Duration) { // late requests every 0.1 ms for d
		for end := now.Add(d); now.Before(end); now = now.Add(100 * time.Microsecond) {
			a.Shed(50*ms, 0, now)
		}
	}
	late(interval + 5*ms) // standing from just after the first step
	wantSteps := []float64{0.25, 0.4375, 0.578125}
	for i, want := range wantSteps {
		late(interval)
		if got := a.YoungShare(now); math.Abs(got-want) > 1e-9 {
			t.Fatalf("step %d: young share %v, want %v", i+1, got, want)
		}
	}
	for range 20 {
		late(interval)
	}
	if got := a.YoungShare(now); got != 0.95 {
		t.Fatalf("after 23 standing intervals: young share %v, want MaxShed 0.95", got)
	}

	// Young requests at the young share: deterministic, evenly spread.
	b := NewAdmission(AdmissionOptions{Target: 5 * ms, Interval: interval})
	bn := time.Unix(1_700_000_000, 0)
	for end := bn.Add(interval + 5*ms); bn.Before(end); bn = bn.Add(100 * time.Microsecond) {
		b.Shed(50*ms, 0, bn)
	}
	bn = bn.Add(interval - 5*ms - 100*time.Microsecond) // just before the second step: still standing
	b.Shed(50*ms, 0, bn)
	bn = bn.Add(200 * time.Microsecond) // past it: young share 0.25
	young := 0
	for range 40 {
		if b.Shed(ms, 0, bn) {
			young++
		}
	}
	if got := b.YoungShare(bn); got != 0.25 {
		t.Fatalf("young share %v, want 0.25", got)
	}
	if young != 10 {
		t.Fatalf("%d of 40 young requests shed at a young share of 0.25, want 10", young)
	}

	// Decay with time: no requests. The average halves each Interval:
	// two later it is still above 1, the queue stands and the share
	// holds; ten later it is under 1/2, and the share has fallen 5 points
	// for each of the ten.
	if got := a.YoungShare(now.Add(2 * interval)); got != 0.95 {
		t.Fatalf("young share 2 intervals after the last request: %v, want 0.95", got)
	}
	if got := a.YoungShare(now.Add(10 * interval)); math.Abs(got-0.45) > 1e-9 {
		t.Fatalf("young share 10 intervals after the last request: %v, want 0.45", got)
	}
	if got := a.YoungShare(now.Add(30 * interval)); got != 0 {
		t.Fatalf("young share 30 intervals after the last request: %v, want 0", got)
	}
}
