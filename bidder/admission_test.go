package bidder

import (
	"encoding/json"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/rtbd/rtbd/bidder/internal/metrictest"
	"github.com/rtbd/rtbd/overload"
)

const ms = time.Millisecond

// waitedListener hands out connections whose reads are stamped as having
// arrived *wait ago: the queueing delay, injected.
type waitedListener struct {
	net.Listener
	wait *atomic.Int64 // ns
}

func (l waitedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &waitedConn{Conn: c, wait: l.wait}, nil
}

type waitedConn struct {
	net.Conn
	wait *atomic.Int64
	at   time.Time
}

func (c *waitedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.at = time.Now().Add(-time.Duration(c.wait.Load()))
	return n, err
}

func (c *waitedConn) LastArrival() (time.Time, bool) { return c.at, !c.at.IsZero() }

// TestAdmissionShedsBids: through the handler, with the queueing delay
// injected at the connection: a fresh controller serves the first request;
// once a queue of requests that waited past their allowance stands, they
// are shed as a no-bid with nbr 507 (the id echoed with nbr_body), counted
// by reason, in the total-latency histogram.
func TestAdmissionShedsBids(t *testing.T) {
	a := overload.NewAdmission(overload.AdmissionOptions{Target: 5 * ms, Interval: time.Millisecond})
	f := newFixture(t, func(o *Options) { o.Admission = a; o.NBRBody = true })
	var wait atomic.Int64
	ln := fasthttputil.NewInmemoryListener()
	srv := f.b.NewServer()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(waitedListener{ln, &wait}) }()
	t.Cleanup(func() { ln.Close(); <-done })
	f.client = &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }, ReadTimeout: 10 * time.Second}

	// tmax 50: a 30 ms budget, 5 ms allowed; every request waited 40 ms.
	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 50)
	wait.Store(int64(40 * ms))
	r := f.bid(body)
	var nb struct {
		ID  string `json:"id"`
		NBR int    `json:"nbr"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &nb) != nil || nb.NBR != 508 {
		t.Fatalf("first request: status %d body %.200s, want served (a no-bid 508: it waited past its budget)", r.status, r.body)
	}
	shed := 0
	for i := 0; i < 10_000 && shed < 3; i++ {
		r := f.bid(body)
		nb.NBR = 0
		if r.status != 200 || json.Unmarshal(r.body, &nb) != nil {
			t.Fatalf("status %d body %.200s", r.status, r.body)
		}
		switch nb.NBR {
		case 507:
			shed++
			if nb.ID != "80ce30c53c16e6ede735f123ef6e32361bfc7b22" {
				t.Fatalf("shed answer %s: the id is not echoed", r.body)
			}
		case 508:
		default:
			t.Fatalf("answer %s, want nbr 507 (shed) or 508 (waited past its budget)", r.body)
		}
	}
	if shed < 3 {
		t.Fatal("no requests shed in 10000 that waited 40 ms of a 30 ms budget")
	}
	if got := f.counter("rtbd_bidder_shed_total", "reason", "queue"); got != 3 {
		t.Errorf("shed_total{queue} = %v, want 3", got)
	}
	if got := f.counter("rtbd_bidder_shed_total", "reason", "in_flight"); got != 0 {
		t.Errorf("shed_total{in_flight} = %v, want 0", got)
	}
	if got, all := metrictest.Must(t, f.reg, "rtbd_bidder_request_seconds"), metrictest.Must(t, f.reg, "rtbd_bidder_queue_seconds"); got != all {
		t.Errorf("request_seconds count = %v, queue_seconds %v: every answer, shed ones too, is in the total", got, all)
	}
}

// TestPeekTMax: the admission control reads tmax from the raw body, top
// level only, and not from a compressed one.
func TestPeekTMax(t *testing.T) {
	for _, c := range []struct {
		body string
		gz   bool
		want int64
	}{
		{`{"id":"1","imp":[{"id":"1","ext":{"tmax":5}}],"tmax":250}`, false, 250},
		{`{"id":"1","imp":[{"id":"1","ext":{"tmax":5}}]}`, false, 0},
		{`{"id":"1","tmax":250}`, true, 0},
		{`not json`, false, 0},
	} {
		rc := bidCtx([]byte(c.body))
		if c.gz {
			rc.Request.Header.SetContentEncoding("gzip")
		}
		if got := peekTMax(rc); got != c.want {
			t.Errorf("peekTMax(%s, gzip %v) = %d, want %d", c.body, c.gz, got, c.want)
		}
	}
}
