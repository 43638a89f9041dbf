package bench

import (
	"cmp"
	"context"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// soakTarget is one kind of request of the soak's load, through the
// balancer; it logs every error and every answer past Tmax with its time
// and bidder.
type soakTarget struct {
	name, kind string
	f          *soakFleet
	method     string
	uri        func(w *Worker, dst []byte) ([]byte, bool) // false: nothing to send yet
	body       func(w *Worker, dst []byte) []byte
	check      func(status int, resp *fasthttp.Response) Outcome
	tmax       time.Duration
}

func (t *soakTarget) Name() string { return t.name }

func (t *soakTarget) Do(_ context.Context, w *Worker) Outcome {
	s := scratch(w, t.method)
	intended := w.Deadline.Add(-t.f.o.Timeout)
	var ok bool
	s.uri, ok = t.uri(w, s.uri[:0])
	if !ok {
		t.f.anomaly(t.kind, "nothing_to_send", "", "no harvested URL yet")
		return ErrOther
	}
	b := t.f.pick(w.Rand, nil)
	if b == nil {
		t.f.anomaly(t.kind, "no_bidder_up", "", "")
		return ErrConn
	}
	s.prepare(w, b.client.Addr, t.body)
	if err := s.do(b.client, w.Deadline); err != nil {
		out := ClassifyError(err)
		t.f.anomaly(t.kind, out.String(), b.name, err.Error())
		return out
	}
	out := t.check(s.resp.StatusCode(), &s.resp)
	if out.IsError() {
		t.f.anomaly(t.kind, out.String(), b.name, "HTTP "+strconv.Itoa(s.resp.StatusCode()))
	} else if lat := time.Since(intended); t.tmax > 0 && lat > t.tmax {
		t.f.anomaly(t.kind, "late", b.name, lat.Round(time.Millisecond).String())
	}
	return out
}

// loads are the bid, pixel event and click loads of RunMixed (notices
// follow the bids, scheduled by the bid target).
func (f *soakFleet) loads() []Load {
	o := f.o
	wls := []bidWorkload{{users: o.Users, weight: 3}, {users: o.Users, weight: 15}, {users: o.Users, weight: 30}}
	opts := func(rate float64, seed uint64) Options {
		return Options{Rate: rate, MaxInFlight: 1024, Timeout: o.Timeout, Tmax: o.Tmax, Seed: o.Seed + seed}
	}
	bids := &soakTarget{name: "soak bids", kind: "bid", f: f, method: "POST", tmax: o.Tmax,
		uri: func(_ *Worker, dst []byte) ([]byte, bool) { return append(dst, "/openrtb2/bid"...), true },
		body: func(w *Worker, dst []byte) []byte {
			return wls[w.Rand.IntN(len(wls))].body(w, dst)
		},
		check: func(status int, resp *fasthttp.Response) Outcome {
			if status == 200 {
				f.harvestBid(resp.Body())
			}
			return ClassifyHTTPStatus(status, nil)
		},
	}
	eventURI := o.DemoSize.eventURI(o.Seed)
	ev := &soakTarget{name: "soak events", kind: "event", f: f, method: "GET",
		uri:   func(w *Worker, dst []byte) ([]byte, bool) { return eventURI(w, dst), true },
		check: func(status int, _ *fasthttp.Response) Outcome { return ClassifyHTTPStatus(status, nil) },
	}
	click := &soakTarget{name: "soak clicks", kind: "click", f: f, method: "GET",
		uri: func(w *Worker, dst []byte) ([]byte, bool) { return f.harvest.pick(w.Rand, dst) },
		check: func(status int, _ *fasthttp.Response) Outcome {
			if status == 302 || status == 303 || status == 307 {
				return OK // the redirect to the landing page
			}
			return ClassifyHTTPStatus(status, nil)
		},
	}
	ls := []Load{{Target: bids, Options: opts(o.Rate, 0)}}
	if o.EventRate > 0 {
		ls = append(ls, Load{Target: ev, Options: opts(o.EventRate, 1)})
	}
	if o.ClickRate > 0 {
		ls = append(ls, Load{Target: click, Options: opts(o.ClickRate, 2)})
	}
	return ls
}

var clickLink = regexp.MustCompile(`/click\?t=[A-Za-z0-9_\-]+\.[0-9]+`)

// harvestBid keeps a bid's click links and, for WinRatio of the bids,
// schedules its nurl and burl.
func (f *soakFleet) harvestBid(body []byte) {
	if m := clickLink.Find(body); m != nil {
		f.harvest.add(m)
	}
	if f.stopping.Load() || rand.Float64() >= f.o.WinRatio {
		return
	}
	nurl, ok1 := noticePath(body, nurlKey, "/win?")
	burl, ok2 := noticePath(body, burlKey, "/bill?")
	if !ok1 || !ok2 {
		return
	}
	f.pendingWG.Add(1)
	time.AfterFunc(f.o.NoticeDelay+rand.N(f.o.NoticeDelay+1), func() {
		defer f.pendingWG.Done()
		f.sendNotices(string(nurl), string(burl))
	})
}

// soakChargeMicros is the charge of one billed impression in micros: a
// notice at noticePrice CPM.
const soakChargeMicros = 10

// sendNotices sends a bid's nurl, then its burl, as an exchange does:
// each to a bidder the balancer picks, retried (another bidder, after a
// pause) while refused, answered 503 or lost in transit, for up to 20 s.
func (f *soakFleet) sendNotices(nurl, burl string) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	if _, _, ok := f.sendNotice(rng, "win", nurl, nil); !ok {
		return
	}
	out, by, ok := f.sendNotice(rng, "bill", burl, nil)
	f.notices.bill(burl, out, ok)
	if !ok || out != "accepted" || rng.Float64() >= f.o.ReplayRatio || f.stopping.Load() {
		return
	}
	f.pendingWG.Add(1)
	time.AfterFunc(2*time.Second, func() {
		defer f.pendingWG.Done()
		rout, _, rok := f.sendNotice(rng, "bill-replay", burl, by)
		f.notices.replay(rout, rok)
	})
}

// sendNotice sends one notice, to a bidder other than avoid while one is
// up; ok when a bidder answered it (204 with its outcome, or a refusal);
// out is the X-Rtbd-Notice outcome.
func (f *soakFleet) sendNotice(rng *rand.Rand, kind, path string, avoid *soakProc) (out string, by *soakProc, ok bool) {
	var req fasthttp.Request
	var resp fasthttp.Response
	req.SetRequestURI(path)
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		b := cmp.Or(f.pick(rng, avoid), f.pick(rng, nil))
		if b == nil {
			continue
		}
		t0 := time.Now()
		req.SetHost(b.client.Addr)
		if err := b.client.DoDeadline(&req, &resp, t0.Add(f.o.Timeout)); err != nil {
			f.anomaly(kind, ClassifyError(err).String(), b.name, err.Error())
			f.notices.attempt(0, false)
			continue
		}
		status, o := resp.StatusCode(), string(resp.Header.Peek(noticeHeader))
		f.notices.attempt(time.Since(t0), status < 500)
		if status == 204 {
			return o, b, true
		}
		detail := "HTTP " + strconv.Itoa(status) + " " + o
		f.anomaly(kind, ClassifyHTTPStatus(status, nil).String(), b.name, detail)
		if status < 500 {
			return "refused " + strconv.Itoa(status) + " " + o, b, true
		}
	}
	f.anomaly(kind, "gave_up", "", "no bidder took it within 20 s")
	return "", nil, false
}

// noticeHeader is bidder.HeaderNoticeOutcome.
const noticeHeader = "X-Rtbd-Notice"

// noticeBook counts the billing notices into n and keeps the accepted ones
// for the reconciliation. Safe for concurrent use.
type noticeBook struct {
	mu       sync.Mutex
	n        SoakNotices     // its maps made by RunSoak
	accepted []string        // burl paths answered 204 accepted or replay
	lats     []time.Duration // of the notice attempts answered
}

func (b *noticeBook) bill(path, out string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !ok {
		b.n.GaveUp++
		return
	}
	b.n.BillOutcomes[out]++
	if out == "accepted" || out == "replay" {
		b.accepted = append(b.accepted, path)
	}
}

func (b *noticeBook) replay(out string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n.ReplaysSent++
	if !ok {
		b.n.ReplaysGaveUp++
		return
	}
	b.n.ReplayOutcomes[out]++
}

// attempt counts one notice attempt: its latency when a bidder answered
// (lat > 0), and a retry unless it was taken (an answer below 500).
func (b *noticeBook) attempt(lat time.Duration, taken bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if lat > 0 {
		b.lats = append(b.lats, lat)
	}
	if !taken {
		b.n.Retries++
	}
}

// anomaly logs an error or a late answer of a request of kind.
func (f *soakFleet) anomaly(kind, outcome, bidder, detail string) {
	a := SoakAnomaly{AtSec: time.Since(f.measured).Seconds(), Kind: kind, Outcome: outcome, Bidder: bidder, Detail: detail}
	f.anomMu.Lock()
	f.anomalies = append(f.anomalies, a)
	f.anomMu.Unlock()
}
