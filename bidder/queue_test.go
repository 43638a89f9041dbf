package bidder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtbd/rtbd/bidder/internal/metrictest"
	"github.com/rtbd/rtbd/overload/arrival"
	"github.com/rtbd/rtbd/rtb"
)

// TestQueuedRequestDeadlineFromArrival: the deadline counts from the
// request's arrival, not from its handler's start. Two bid requests reach
// a real TCP server in one segment on one connection (pipelined); the
// first waits for a catalog slower than its budget (a TEST WRAPPER adding
// 2 s) and is answered at its deadline, so the second has sat in the
// connection for a whole budget before its handler starts. It gets a
// no-bid at once (nbr 508) without a lookup, counted as a queue miss.
func TestQueuedRequestDeadlineFromArrival(t *testing.T) {
	if !arrival.Supported {
		t.Skip("no arrival times in this build (not Linux, or -race)")
	}
	stop, ok := arrival.Probe(10 * time.Second) // receive timestamps on, system-wide
	defer stop()
	if !ok {
		t.Fatal("the kernel did not stamp a probe connection's reads within 10 s")
	}
	calls := make(chan struct{}, 10)
	f := newFixture(t, func(o *Options) {
		o.Products = &slowProducts{ProductStore: o.Products, delay: 2 * time.Second, calls: calls}
		o.NBRBody = true
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := f.b.NewServer()
	go srv.Serve(Listen(ln))
	t.Cleanup(func() { srv.Shutdown() })

	body := withUser(t, readFile(t, filepath.Join(specDir, "request-1-simple-banner.json")), userBulk, "tmax", 80)
	var reqs bytes.Buffer
	for range 2 {
		fmt.Fprintf(&reqs, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", PathBid, len(body), body)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(reqs.Bytes()); err != nil { // one write: one segment, one arrival time
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var nb struct{ NBR int }
		if resp.StatusCode != 200 || json.Unmarshal(b, &nb) != nil || nb.NBR != int(rtb.NoBidDeadline) {
			t.Fatalf("response %d: %d %s, want a no-bid with nbr 508", i, resp.StatusCode, b)
		}
	}
	if n := len(calls); n != 1 {
		t.Errorf("catalog called %d times, want 1: the queued request has no time left for a lookup", n)
	}
	if got := f.counter("rtbd_bidder_deadline_misses_total", "stage", "catalog"); got != 1 {
		t.Errorf("deadline_misses{catalog} = %v, want 1 (the first request)", got)
	}
	if got := f.counter("rtbd_bidder_deadline_misses_total", "stage", "queue"); got != 1 {
		t.Errorf("deadline_misses{queue} = %v, want 1 (the second request)", got)
	}
	if n := metrictest.Must(t, f.reg, "rtbd_bidder_queue_seconds"); n != 2 {
		t.Errorf("queue_seconds count = %v, want 2", n)
	}
}
