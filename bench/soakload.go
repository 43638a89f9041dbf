package bench

import (
	"cmp"
	"context"
	"math/rand/v2"
	"regexp"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rtbd/rtbd/bidder/notice"
)

// soakTarget is one kind of request of the soak's load (bid, event,
// click), sent through the balancer; it logs every error and every bid
// answered past Tmax with its time and bidder.
type soakTarget struct {
	f      *soakFleet
	kind   string
	method string
	uri    func(w *Worker, dst []byte) []byte // appends the path and query to dst; nothing: nothing to send yet
	body   func(w *Worker, dst []byte) []byte // nil: none
}

func (t *soakTarget) Name() string { return "soak " + t.kind + "s" }

func (t *soakTarget) Do(_ context.Context, w *Worker) Outcome {
	s := scratch(w, t.method)
	intended := w.Deadline.Add(-t.f.o.Timeout)
	if s.uri = t.uri(w, s.uri[:0]); len(s.uri) == 0 {
		t.f.anomaly(t.kind, "nothing_to_send", "", "no harvested URL yet")
		return ErrOther
	}
	b := t.f.pick(w.Rand, nil)
	if b == nil {
		t.f.anomaly(t.kind, "no_bidder_up", "", "")
		return ErrConn
	}
	if err := s.do(w, b.client, t.body); err != nil {
		out := ClassifyError(err)
		t.f.anomaly(t.kind, out.String(), b.name, err.Error())
		return out
	}
	status := s.resp.StatusCode()
	out := ClassifyHTTPStatus(status, nil)
	switch {
	case t.kind == "bid" && status == 200:
		t.f.harvestBid(s.resp.Body())
	case t.kind == "click" && (status == 302 || status == 303 || status == 307):
		out = OK // the redirect to the landing page
	}
	if out.IsError() {
		t.f.anomaly(t.kind, out.String(), b.name, "HTTP "+strconv.Itoa(status))
	} else if lat := time.Since(intended); t.kind == "bid" && lat > t.f.o.Tmax {
		t.f.anomaly(t.kind, "late", b.name, lat.Round(time.Millisecond).String())
	}
	return out
}

// loads are the bid, pixel event and click loads of RunMixed (the bids'
// notices follow them, scheduled by harvestBid).
func (f *soakFleet) loads() []Load {
	o := f.o
	wls := []bidWorkload{{users: o.Users, weight: 3}, {users: o.Users, weight: 15}, {users: o.Users, weight: 30}}
	load := func(t *soakTarget, rate float64, seed uint64) Load {
		return Load{Target: t, Options: Options{Rate: rate, MaxInFlight: 1024, Timeout: o.Timeout, Tmax: o.Tmax, Seed: o.Seed + seed}}
	}
	ls := []Load{load(&soakTarget{f: f, kind: "bid", method: "POST",
		uri:  func(_ *Worker, dst []byte) []byte { return append(dst, "/openrtb2/bid"...) },
		body: func(w *Worker, dst []byte) []byte { return wls[w.Rand.IntN(len(wls))].body(w, dst) },
	}, o.Rate, 0)}
	if o.EventRate > 0 {
		ls = append(ls, load(&soakTarget{f: f, kind: "event", method: "GET", uri: o.DemoSize.eventURI(o.Seed)}, o.EventRate, 1))
	}
	if o.ClickRate > 0 {
		uri := func(w *Worker, dst []byte) []byte {
			u, _ := f.harvest.pick(w.Rand, dst) // none before the first bid answered with a click link
			return u
		}
		ls = append(ls, load(&soakTarget{f: f, kind: "click", method: "GET", uri: uri}, o.ClickRate, 2))
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
	if rand.Float64() >= f.o.WinRatio {
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
// ReplayRatio of the accepted bills are sent again 2 s later, to the other bidder.
func (f *soakFleet) sendNotices(nurl, burl string) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	if _, _, ok := f.sendNotice(rng, "win", nurl, nil); !ok {
		return
	}
	out, by, ok := f.sendNotice(rng, "bill", burl, nil)
	f.mu.Lock()
	if ok {
		f.sum.Notices.BillOutcomes[out]++
	} else {
		f.sum.Notices.GaveUp++
	}
	if out == "accepted" || out == "replay" {
		f.accepted = append(f.accepted, burl)
	}
	f.mu.Unlock()
	if out != "accepted" || rng.Float64() >= f.o.ReplayRatio || f.stopping.Load() {
		return
	}
	time.Sleep(2 * time.Second)
	out, _, ok = f.sendNotice(rng, "bill-replay", burl, by)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sum.Notices.ReplaysSent++
	if ok {
		f.sum.Notices.ReplayOutcomes[out]++
	} else {
		f.sum.Notices.ReplaysGaveUp++
	}
}

// sendNotice sends one notice, to a bidder other than avoid while one is
// up; ok when a bidder answered it (204 with its outcome, or a refusal);
// out is the X-Rtbd-Notice outcome. It counts the attempts not taken
// (Retries) and the latency of those answered.
func (f *soakFleet) sendNotice(rng *rand.Rand, kind, path string, avoid *soakProc) (out string, by *soakProc, ok bool) {
	var req fasthttp.Request
	var resp fasthttp.Response
	req.SetRequestURI(path)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		b := cmp.Or(f.pick(rng, avoid), f.pick(rng, nil))
		if b == nil {
			continue
		}
		t0 := time.Now()
		req.SetHost(b.client.Addr)
		err := b.client.DoDeadline(&req, &resp, t0.Add(f.o.Timeout))
		status, o := resp.StatusCode(), string(resp.Header.Peek(notice.HeaderOutcome))
		f.mu.Lock()
		if err == nil {
			f.noticeLats.record(time.Since(t0).Microseconds())
		}
		if err != nil || status >= 500 {
			f.sum.Notices.Retries++
		}
		f.mu.Unlock()
		switch {
		case err != nil:
			f.anomaly(kind, ClassifyError(err).String(), b.name, err.Error())
		case status == 204:
			return o, b, true
		default:
			f.anomaly(kind, ClassifyHTTPStatus(status, nil).String(), b.name, "HTTP "+strconv.Itoa(status)+" "+o)
			if status < 500 {
				return "refused " + strconv.Itoa(status) + " " + o, b, true
			}
		}
	}
	f.anomaly(kind, "gave_up", "", "no bidder took it within 20 s")
	return "", nil, false
}

// anomaly logs an error or a late answer of a request of kind.
func (f *soakFleet) anomaly(kind, outcome, bidder, detail string) {
	a := SoakAnomaly{AtSec: time.Since(f.measured).Seconds(), Kind: kind, Outcome: outcome, Bidder: bidder, Detail: detail}
	f.mu.Lock()
	f.anomalies = append(f.anomalies, a)
	f.mu.Unlock()
}
