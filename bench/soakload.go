package bench

import (
	"bytes"
	"context"
	"github.com/valyala/fasthttp"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"time"
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
		t.f.rec.add(t.f.measured, t.kind, "nothing_to_send", "", "no harvested URL yet")
		return ErrOther
	}
	b := t.f.pick(w.Rand, nil)
	if b == nil {
		t.f.rec.add(t.f.measured, t.kind, "no_bidder_up", "", "")
		return ErrConn
	}
	s.prepare(w, b.client.Addr, t.body)
	if err := s.do(b.client, w.Deadline); err != nil {
		out := ClassifyError(err)
		t.f.rec.add(t.f.measured, t.kind, out.String(), b.name, err.Error())
		return out
	}
	out := t.check(s.resp.StatusCode(), &s.resp)
	if out.IsError() {
		t.f.rec.add(t.f.measured, t.kind, out.String(), b.name, "HTTP "+strconv.Itoa(s.resp.StatusCode()))
	} else if t.tmax > 0 {
		if lat := time.Since(intended); lat > t.tmax {
			t.f.rec.add(t.f.measured, t.kind, "late", b.name, lat.Round(time.Millisecond).String())
		}
	}
	return out
}

// loads are the bid, pixel event and click loads of RunMixed (notices
// follow the bids, scheduled by the bid target).
func (f *soakFleet) loads() []Load {
	o := f.o
	wls := []bidWorkload{{users: o.Users, weight: 3}, {users: o.Users, weight: 15}, {users: o.Users, weight: 30}}
	opts := func(rate float64, seed uint64) OpenLoopOptions {
		return OpenLoopOptions{Rate: rate, MaxInFlight: 1024, Timeout: o.Timeout, Tmax: o.Tmax, Seed: o.Seed + seed}
	}
	bids := &soakTarget{name: "soak bids", kind: "bid", f: f, method: "POST", tmax: o.Tmax,
		uri: func(_ *Worker, dst []byte) ([]byte, bool) { return append(dst, "/openrtb2/bid"...), true },
		body: func(w *Worker, dst []byte) []byte {
			return wls[w.Rand.IntN(len(wls))].body(w, dst)
		},
	}
	bids.check = func(status int, resp *fasthttp.Response) Outcome {
		if status == 200 {
			f.harvestBid(resp.Body())
		}
		return ClassifyHTTPStatus(status, nil)
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

var (
	burlKey   = []byte(`"burl":"`)
	clickLink = regexp.MustCompile(`/click\?t=[A-Za-z0-9_\-]+\.[0-9]+`)
)

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
	delay := f.o.NoticeDelay + rand.N(f.o.NoticeDelay+1)
	f.pendingWG.Add(1)
	time.AfterFunc(delay, func() {
		defer f.pendingWG.Done()
		f.sendNotices(nurl, burl)
	})
}

// noticePath is the path and query of the notice URL after key in a bid
// response, unescaped, with the price macro filled (0.50 CPM).
func noticePath(body, key []byte, path string) (string, bool) {
	i := bytes.Index(body, key)
	if i < 0 {
		return "", false
	}
	rest := body[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	u := rest[:j]
	k := bytes.Index(u, []byte(path))
	if k < 0 {
		return "", false
	}
	u = bytes.ReplaceAll(u[k:], []byte(`\u0026`), []byte("&"))
	u = bytes.ReplaceAll(u, priceMacro, []byte(soakPrice))
	return string(u), true
}

// soakPrice is the clearing price every notice reports (CPM): the floor
// of the harness's requests, so it is never above a bid (a first-price
// bid is shaded, but never below the floor); soakChargeMicros the charge
// of one billed impression in micros.
const (
	soakPrice        = "0.01"
	soakChargeMicros = 10
)

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

// sendNotice sends one notice; ok when a bidder answered it (204 with its
// outcome, or a refusal); out is the X-Rtbd-Notice outcome.
func (f *soakFleet) sendNotice(rng *rand.Rand, kind, path string, avoid *soakBidder) (out string, by *soakBidder, ok bool) {
	var req fasthttp.Request
	var resp fasthttp.Response
	req.SetRequestURI(path)
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		b := f.pick(rng, avoid)
		if b == nil && avoid != nil {
			b = f.pick(rng, nil)
		}
		if b == nil {
			continue
		}
		t0 := time.Now()
		req.SetHost(b.client.Addr)
		err := b.client.DoDeadline(&req, &resp, t0.Add(f.o.Timeout))
		if err != nil {
			f.rec.add(f.measured, kind, ClassifyError(err).String(), b.name, err.Error())
			f.notices.retry()
			continue
		}
		f.notices.latency(time.Since(t0))
		status := resp.StatusCode()
		if status >= 500 {
			f.rec.add(f.measured, kind, ClassifyHTTPStatus(status, nil).String(), b.name, "HTTP "+strconv.Itoa(status)+" "+string(resp.Header.Peek(noticeHeader)))
			f.notices.retry()
			continue
		}
		o := string(resp.Header.Peek(noticeHeader))
		if status != 204 {
			f.rec.add(f.measured, kind, ClassifyHTTPStatus(status, nil).String(), b.name, "HTTP "+strconv.Itoa(status)+" "+o)
			return "refused " + strconv.Itoa(status) + " " + o, b, true
		}
		return o, b, true
	}
	f.rec.add(f.measured, kind, "gave_up", "", "no bidder took it within 20 s")
	return "", nil, false
}

// noticeHeader is bidder.HeaderNoticeOutcome.
const noticeHeader = "X-Rtbd-Notice"

// noticeBook counts the billing notices and keeps the accepted ones for
// the reconciliation. Safe for concurrent use.
type noticeBook struct {
	mu             sync.Mutex
	accepted       []string // burl paths answered 204 accepted or replay
	outcomes       map[string]int64
	replays        map[string]int64
	retries        int64
	gaveUp         int64
	lats           []time.Duration
	replaysSent    int64
	replaysGaveUp  int64
	acceptedOrigin int64
}

func (n *noticeBook) bill(path, out string, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.outcomes == nil {
		n.outcomes = map[string]int64{}
	}
	if !ok {
		n.gaveUp++
		return
	}
	n.outcomes[out]++
	if out == "accepted" || out == "replay" {
		n.accepted = append(n.accepted, path)
	}
}

func (n *noticeBook) replay(out string, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.replays == nil {
		n.replays = map[string]int64{}
	}
	n.replaysSent++
	if !ok {
		n.replaysGaveUp++
		return
	}
	n.replays[out]++
}

func (n *noticeBook) retry() {
	n.mu.Lock()
	n.retries++
	n.mu.Unlock()
}

func (n *noticeBook) latency(d time.Duration) {
	n.mu.Lock()
	n.lats = append(n.lats, d)
	n.mu.Unlock()
}

// anomalyLog is every error and late answer of the run, with its time.
// Safe for concurrent use.
type anomalyLog struct {
	mu  sync.Mutex
	all []SoakAnomaly
}

func (l *anomalyLog) add(measured time.Time, kind, outcome, bidder, detail string) {
	a := SoakAnomaly{AtSec: time.Since(measured).Seconds(), Kind: kind, Outcome: outcome, Bidder: bidder, Detail: detail}
	l.mu.Lock()
	l.all = append(l.all, a)
	l.mu.Unlock()
}
